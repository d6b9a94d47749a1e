package policy

import (
	"os"
	"strings"
	"testing"
)

// mountinfoFields cuts the first five fields as strings.Fields splits them (what
// readMountinfo used before), and refuses a line with fewer.
func TestMountinfoFields(t *testing.T) {
	lines := []string{
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue",
		"22 1 0:21 / /a\\040b rw shared:1 - tmpfs tmpfs rw",
		"  7  1\t0:5 /x /y",
		"1 2 3 4",
		"1 2 3 4 ",
		"",
	}
	for _, l := range lines {
		var fs [5]string
		ok := mountinfoFields(l, &fs)
		want := strings.Fields(l)
		if ok != (len(want) >= 5) {
			t.Errorf("%q: ok %v, fields %q", l, ok, want)
			continue
		}
		if ok && fs != [5]string(want[:5]) {
			t.Errorf("%q: got %q, want %q", l, fs, want[:5])
		}
	}
}

// readMountinfo gives one entry per line of this thread's mountinfo, the root mount
// among them.
func TestReadMountinfo(t *testing.T) {
	b, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	ms, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); len(ms) != n {
		t.Errorf("%d entries for %d lines", len(ms), n)
	}
	root := false
	for i, m := range ms {
		fs := strings.Fields(strings.Split(string(b), "\n")[i])
		if m.dev != fs[2] || m.root != unescapeMountinfo(fs[3]) || m.point != unescapeMountinfo(fs[4]) {
			t.Errorf("entry %d %+v, line fields %q", i, m, fs[:5])
		}
		root = root || m.point == "/"
	}
	if !root {
		t.Error("no entry for /")
	}
}
