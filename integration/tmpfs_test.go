package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// scratchProbe prints "SIZE DEST SIZE" for each tmpfs of the mount table with a size.
const scratchProbe = `awk '{ for (i = 7; i < NF; i++) if ($i == "-") break; if ($(i+1) != "tmpfs") next;
  n = split($(i+3), o, ","); for (j = 1; j <= n; j++) if (o[j] ~ /^size=/) print "SIZE", $5, substr(o[j], 6) }' /proc/self/mountinfo`

func parseTmpfsSizes(t *testing.T, out string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "SIZE" {
			continue
		}
		v := strings.TrimSuffix(f[2], "k")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || !strings.HasSuffix(f[2], "k") {
			t.Fatalf("odd size %q in %q", f[2], sc.Text())
		}
		m[f[1]] = n << 10
	}
	return m
}

func hostMemTotal(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/meminfo")
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			must(t, err)
			return n << 10
		}
	}
	t.Fatal("no MemTotal")
	return 0
}

// The sandbox's scratch tmpfs (/tmp, /var/tmp, /run, HOME, /dev/shm) are bounded: by
// default together half the host's memory (the kernel's default gave each half of it:
// five tmpfs of 12 GB on a 23 GB host), at most the memory limit each; the sizes are
// in the sandbox's own mount table. Issue 15, item 6.
func TestScratchTmpfsSized(t *testing.T) {
	half := hostMemTotal(t) / 2
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--", shellPath, "-c", scratchProbe+`; echo "HOME $HOME"`)
		mustSucceed(t, r, "mountinfo")
		sizes := parseTmpfsSizes(t, r.stdout)
		home := ""
		for _, l := range strings.Split(r.stdout, "\n") {
			if v, ok := strings.CutPrefix(l, "HOME "); ok {
				home = v
			}
		}
		var sum int64
		for _, d := range []string{"/tmp", "/var/tmp", "/run", home, "/dev/shm"} {
			n, ok := sizes[d]
			if !ok {
				t.Errorf("%s: no size in the mount table:\n%s", d, r.stdout)
			}
			sum += n
		}
		if sum > half+5<<20 {
			t.Errorf("the scratch tmpfs may hold %d MiB together, more than half the host's memory (%d MiB):\n%s", sum>>20, half>>20, r.stdout)
		}
		if c.uid != 0 {
			return // a memory limit needs a cgroup (root here)
		}
		r = s.run("--memory", "64M", "--", shellPath, "-c", scratchProbe)
		mustSucceed(t, r, "mountinfo under --memory")
		for d, n := range parseTmpfsSizes(t, r.stdout) {
			if d != "/dev" && n > 64<<20 {
				t.Errorf("--memory 64M: %s holds up to %d MiB", d, n>>20)
			}
		}
	})
}

// --tmpfs PATH:size=N bounds a scratch tmpfs (writing past it gives ENOSPC inside) and
// adds one where there is none; the size shows in the mount table. Run under a 64 MiB
// memory limit (root; the sizes are the test's own for the unprivileged caller).
func TestTmpfsFlagSize(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		var limit []string
		if c.uid == 0 {
			limit = []string{"--memory", "64M"}
		}
		script := scratchProbe + `
dd if=/dev/zero of=/tmp/fill bs=1M count=12 2>/run/dd.err; echo "DD $?"; grep -q 'No space left' /run/dd.err && echo ENOSPC
dd if=/dev/zero of=/scratch/fill bs=1M count=6 2>/dev/null; echo "DD2 $?"`
		r := s.run(append(limit, "--tmpfs", "/tmp:size=8M", "--tmpfs", "/scratch:size=4M", "--tmpfs", "/dev/shm:size=2M", "--", shellPath, "-c", script)...)
		mustSucceed(t, r, "--tmpfs")
		sizes := parseTmpfsSizes(t, r.stdout)
		for d, want := range map[string]int64{"/tmp": 8 << 20, "/scratch": 4 << 20, "/dev/shm": 2 << 20} {
			if sizes[d] != want {
				t.Errorf("%s: size %d in the mount table, want %d\n%s", d, sizes[d], want, r.stdout)
			}
		}
		if !strings.Contains(r.stdout, "DD 1") || !strings.Contains(r.stdout, "ENOSPC") || !strings.Contains(r.stdout, "DD2 1") {
			t.Errorf("writing past a tmpfs's size: want ENOSPC\n%v", r)
		}
		r = s.run("--tmpfs", "/tmp:size=lots", "--", "/bin/true")
		if r.code != 125 || !strings.Contains(r.stderr, "tmpfs") {
			t.Errorf("--tmpfs /tmp:size=lots: want 125 naming it\n%v", r)
		}
	})
}

// tmpfs pages are charged to the memory cgroup of the process that writes them: on
// this host (cgroup v1) writing to /dev/shm counts in the sandbox's memory use and its
// limit ends the writer (oom-killed), so the memory limit bounds the scratch space too.
func TestTmpfsChargedToMemoryLimit(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	r := s.runStatus("--memory", "64M", "--tmpfs", "/dev/shm:size=128M", "--", shellPath, "-c",
		"dd if=/dev/zero of=/dev/shm/fill bs=1M count=40 2>/dev/null && echo WROTE")
	if r.code != 0 || !strings.Contains(r.stdout, "WROTE") {
		t.Fatalf("40 MiB into /dev/shm under --memory 64M: want it written\n%v", r.result)
	}
	if peak, ok := num(r.exit, "memory-peak-bytes"); !ok || peak < 40<<20 {
		t.Errorf("memory-peak-bytes %v after 40 MiB written to /dev/shm: the tmpfs pages are not charged to the sandbox", r.exit)
	}
	r = s.runStatus("--memory", "32M", "--tmpfs", "/dev/shm:size=128M", "--", shellPath, "-c",
		"dd if=/dev/zero of=/dev/shm/fill bs=1M count=64 2>/dev/null; echo DONE $?")
	if oom, _ := r.exit["oom-killed"].(bool); !oom && !strings.Contains(r.stdout, "DONE 1") {
		t.Errorf("64 MiB into /dev/shm under --memory 32M: neither OOM-killed nor refused\n%v\n%v", r.result, r.exit)
	}
}

// A --tmpfs inside the workspace whose path does not exist (relative: from the current
// directory; or absolute, with a missing parent) leaves nothing on the host: the mount
// point the launch made there, parents included, is removed after the run (a new user
// found an empty dr-xr-xr-x directory left behind). A directory that existed stays; the
// command's own files in the workspace stay; what it wrote in the tmpfs never reached
// the host.
func TestTmpfsMountPointRemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		kept := filepath.Join(s.ws, "kept")
		must(t, os.Mkdir(kept, 0o755))
		s.chown(kept)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--tmpfs", "rel", "--tmpfs", filepath.Join(s.ws, "a/b"), "--tmpfs", kept, "--",
			shellPath, "-c", `touch rel/x a/b/y kept/z own && test -f "$1/rel/x" && test -f "$1/a/b/y"`, "_", s.ws)
		cmd.Dir = s.ws // a relative --tmpfs PATH is taken from here
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "--tmpfs inside the workspace")
		for _, p := range []string{"rel", "a"} {
			if _, err := os.Lstat(filepath.Join(s.ws, p)); err == nil {
				t.Errorf("%s: the mount point the launch made is still on the host", p)
			}
		}
		if fi, err := os.Lstat(kept); err != nil || !fi.IsDir() {
			t.Errorf("the existing directory %s was removed: %v", kept, err)
		} else if _, err := os.Lstat(filepath.Join(kept, "z")); err == nil {
			t.Error("a write to the tmpfs reached the host")
		}
		if _, err := os.Lstat(filepath.Join(s.ws, "own")); err != nil {
			t.Errorf("the command's own file in the workspace is gone: %v", err)
		}
		if strings.Contains(r.stderr, "gosbx:") {
			t.Errorf("stderr %q; want no gosbx line for the mount points it removed", r.stderr)
		}
	})
}

// Every scratch tmpfs has nr_inodes= in proportion to its size (attack review round
// three, F2): empty files cost no size= but about 1 KiB of unreclaimable kernel memory
// each, so 300,000 of them in /tmp pinned 250 MB. With /tmp at 64K (the floor, 1024
// inodes), creating 1,100 empty files there fails with ENOSPC, and nr_inodes= is in the
// mount table; every default-sized scratch tmpfs has one too.
func TestScratchTmpfsInodesBounded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh([]string{"--tmpfs", "/tmp:size=64K"}, `
awk '{ for (i = 7; i < NF; i++) if ($i == "-") break; if ($(i+1) == "tmpfs") print "TMPFS", $5, $(i+3) }' /proc/self/mountinfo
cd /tmp && i=0; while [ $i -lt 1100 ]; do command : 2>/dev/null > f$i || { echo "FULL-AT $i"; break; }; i=$((i+1)); done
echo "MADE $i"`)
		mustSucceed(t, r, "empty files in /tmp")
		if !strings.Contains(r.stdout, "FULL-AT") {
			t.Errorf("1,100 empty files fit in a 64K /tmp: its inodes are not bounded\n%v", r)
		}
		n := 0
		for _, l := range strings.Split(r.stdout, "\n") {
			f := strings.Fields(l)
			if len(f) != 3 || f[0] != "TMPFS" || !strings.Contains(f[2], "size=") {
				continue
			}
			n++
			if !strings.Contains(f[2], "nr_inodes=") {
				t.Errorf("the scratch tmpfs %s has no nr_inodes=: %s", f[1], f[2])
			}
			if f[1] == "/tmp" && !strings.Contains(f[2], "nr_inodes=1024") {
				t.Errorf("/tmp at 64K: want nr_inodes=1024 (the floor), have %s", f[2])
			}
		}
		if n < 5 {
			t.Errorf("want the 5 scratch tmpfs with a size in the mount table, found %d\n%v", n, r)
		}
	})
}
