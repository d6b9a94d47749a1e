package cgroup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/cgroups/v3"
)

// TestV1PathsAsContainerd: v1Paths gives the path containerd's parser (what
// v1Hierarchies used before) gives for each of v1Subsystems, and fails where it fails.
func TestV1PathsAsContainerd(t *testing.T) {
	own, _ := os.ReadFile("/proc/self/cgroup")
	for _, in := range []string{
		string(own),
		"",
		"0::/user.slice\n",
		"12:memory:/a\n11:pids:/b\n10:cpu,cpuacct:/c/d\n1:name=systemd:/e\n0::/f\n",
		"4:memory:/x\n5:memory:/y\n",     // the last line wins
		"3:cpuacct,cpu:/p:with:colons\n", // a path may hold colons
		"2:cpu,:/q\n",                    // an empty controller is the unified one's
		"7:memoryx,pid,cpus:/no\n",       // names that only start like ours
		"1:memory:/no-newline",           // no newline at the end
		"1:memory:/a\n\n2:pids:/b\n",     // an empty line: an error
		"1:memory\n",                     // two fields: an error
		"garbage\n",
	} {
		paths, found, err := v1Paths([]byte(in))
		want, _, werr := cgroups.ParseCgroupFromReaderUnified(strings.NewReader(in))
		if (err != nil) != (werr != nil) {
			t.Errorf("%q: error %v, containerd's %v", in, err, werr)
			continue
		}
		if err != nil {
			continue
		}
		for i, sub := range v1Subsystems {
			w, ok := want[sub]
			if found[i] != ok || paths[i] != w {
				t.Errorf("%q: %s is %q (%v), containerd's %q (%v)", in, sub, paths[i], found[i], w, ok)
			}
		}
	}
}

// TestReadSelfCgroup: the whole file, however long, read through a growing buffer.
func TestReadSelfCgroup(t *testing.T) {
	old := selfCgroupFile
	t.Cleanup(func() { selfCgroupFile = old })
	want := strings.Repeat("9:memory:/"+strings.Repeat("x", 200)+"\n", 40) // 8 KiB: past the first buffer
	selfCgroupFile = filepath.Join(t.TempDir(), "cgroup")
	if err := os.WriteFile(selfCgroupFile, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := readSelfCgroup()
	if err != nil || string(got) != want {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
	selfCgroupFile = filepath.Join(t.TempDir(), "missing")
	if _, err := readSelfCgroup(); err == nil || !strings.Contains(err.Error(), selfCgroupFile) {
		t.Fatalf("a missing file: %v", err)
	}
}
