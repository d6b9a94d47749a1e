package cgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/cgroups/v3"
	"golang.org/x/sys/unix"
)

// v1Own is this process's own group directory in each v1 hierarchy gosbx uses.
// The live v1 tests run as root on v1/hybrid hosts only; they create groups through
// New, or directly under these directories, and remove what they made.
func v1Own(t *testing.T) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("live cgroup v1 tests need root")
	}
	if Mode() != V1 {
		t.Skipf("host cgroup mode is %s, not v1/hybrid", Mode())
	}
	paths, _, err := cgroups.ParseCgroupFileUnified("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
		p, ok := paths[c]
		if !ok {
			t.Skipf("no %s hierarchy in /proc/self/cgroup", c)
		}
		d := filepath.Join("/sys/fs/cgroup", c, p)
		if _, err := os.Stat(d); err != nil {
			t.Skipf("%s: %v", d, err)
		}
		own[c] = d
	}
	return own
}

// removeDirs removes the group n from each hierarchy, waiting for it to empty.
func removeDirs(own map[string]string, n string) {
	for _, d := range own {
		p := filepath.Join(d, n)
		for i := 0; i < 100 && exists(p); i++ {
			if os.Remove(p) == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestV1Live(t *testing.T) {
	own := v1Own(t)
	g, err := New(res(64<<20, 64<<20, 16, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := g.(*v1Group).name
	t.Cleanup(func() { removeDirs(own, n) })
	if g.Kind() != V1 || g.CloneFd() != -1 {
		t.Errorf("kind %s fd %d; want cgroup-v1, -1", g.Kind(), g.CloneFd())
	}
	for c, d := range own {
		if !exists(filepath.Join(d, n)) {
			t.Errorf("no %s group %s", c, filepath.Join(d, n))
		}
	}
	for file, want := range map[string]string{
		"memory/memory.limit_in_bytes":       "67108864",
		"memory/memory.memsw.limit_in_bytes": "67108864",
		"pids/pids.max":                      "16",
		"cpu/cpu.cfs_quota_us":               "20000",
		"cpu/cpu.cfs_period_us":              "100000",
	} {
		c, f, _ := strings.Cut(file, "/")
		if got := readTrim(t, filepath.Join(own[c], n, f)); got != want {
			t.Errorf("%s = %q; want %q", file, got, want)
		}
	}

	// a process placed in the group is in every hierarchy's group, is counted, and is
	// killed by Destroy
	// a process with 256 MiB to tear down (allocated before it is placed, so not charged
	// to the group): its exit after SIGKILL takes a moment, as a real sandbox's does
	sleep := exec.Command("/usr/bin/python3", "-c", "import sys, time\nb = b'x' * (256 << 20)\nprint('ready', flush=True)\ntime.sleep(60)")
	out, err := sleep.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sleep.Start(); err != nil {
		t.Skipf("python3: %v", err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { sleep.Wait(); close(done) }()
	t.Cleanup(func() {
		sleep.Process.Kill()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}) // runs before removeDirs
	if err := g.Add(sleep.Process.Pid); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(sleep.Process.Pid)
	for c, d := range own {
		tasks := strings.Fields(readTrim(t, filepath.Join(d, n, "tasks")))
		if !slices.Contains(tasks, pid) {
			t.Errorf("%s tasks %q; want the process %s", c, tasks, pid)
		}
	}
	if got := readTrim(t, filepath.Join(own["pids"], n, "pids.current")); got != "1" {
		t.Errorf("pids.current = %q; want 1", got)
	}
	// (a process moved in brings no memory charge along: MemoryPeak may be 0 here)
	if st := g.Stats(); st.OOMKilled || st.PidsMaxHit {
		t.Errorf("stats %+v; want no OOM, no pids limit hit", st)
	}

	// Destroy must not return before the group is gone: SIGKILL is asynchronous, so it
	// has to wait until the group is empty before removing it (NOTES: freeze, kill,
	// thaw, wait until empty, remove).
	if err := g.Destroy(); err != nil {
		t.Errorf("Destroy with a live process in the group: %v", err)
	}
	select {
	case <-done:
		if ws, ok := sleep.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the process ended with %v; want SIGKILL from Destroy", sleep.ProcessState)
		}
	case <-time.After(5 * time.Second):
		t.Error("the process in the group survived Destroy")
	}
	for c, d := range own {
		if exists(filepath.Join(d, n)) {
			t.Errorf("%s group %s left after Destroy", c, filepath.Join(d, n))
		}
	}
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

// A leftover group of a launcher that is gone is removed from every hierarchy by the
// sweep every New runs first, and its lock file with it; one of a live launcher is
// kept. Other launches (other packages' tests, other users of the host) make groups
// and sweep in the same parents at the same time: this test makes its groups as a
// launch does (the owner's lock file before the directories) and checks its own
// groups only.
func TestV1GC(t *testing.T) {
	own := v1Own(t)
	dead := "gosbx-" + strconv.Itoa(deadLauncher) + "-1-" + strconv.Itoa(os.Getpid())
	live := "gosbx-" + strconv.Itoa(os.Getpid()) + "-0-0"
	// a group a failed Destroy removed from some hierarchies only (memory first)
	partial := "gosbx-" + strconv.Itoa(deadLauncher) + "-2-" + strconv.Itoa(os.Getpid())
	// named by sandbox id: an owner gone (its lock free), one alive (holding it), and
	// one whose owner is gone and that is gone from the lock's hierarchy (memory)
	deadID, liveID, partialID := groupName(NewID()), groupName(NewID()), groupName(NewID())
	t.Cleanup(func() {
		for _, n := range []string{dead, live, partial, deadID, liveID, partialID} {
			removeDirs(own, n)
		}
	})
	held, err := ownerLock(liveID) // a live owner, before its directories are made
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(held)
	killed, err := ownerLock(deadID) // an owner killed: its lock file left, unlocked
	if err != nil {
		t.Fatal(err)
	}
	killed.Close()
	for c, d := range own {
		for _, n := range []string{dead, live, partial, deadID, liveID, partialID} {
			if (n == partial || n == partialID) && c == "memory" {
				continue
			}
			if err := os.Mkdir(filepath.Join(d, n), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, d := range own { // another user's shared lock on the dead group keeps nothing (review7 F1)
		f, err := os.Open(filepath.Join(d, deadID))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
			t.Fatal(err)
		}
	}
	g, err := New(res(64<<20, 64<<20, 16, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Destroy(); err != nil {
		t.Error(err)
	}
	if !gcV1(0) {
		t.Fatal("no sweep")
	}
	if _, err := os.Stat(killed.Name()); !os.IsNotExist(err) {
		t.Errorf("the dead owner's lock file was kept (%v)", err)
	}
	for c, d := range own {
		if exists(filepath.Join(d, deadID)) || exists(filepath.Join(d, partialID)) {
			t.Errorf("%s: a group of a gone owner (%s, %s) was kept", c, deadID, partialID)
		}
		if !exists(filepath.Join(d, liveID)) {
			t.Errorf("%s: the live owner's group %s was removed", c, liveID)
		}
		if exists(filepath.Join(d, dead)) {
			t.Errorf("%s: the dead launcher's group %s was kept", c, dead)
		}
		if exists(filepath.Join(d, partial)) {
			t.Errorf("%s: the dead launcher's group %s (gone from memory only) was kept", c, partial)
		}
		if !exists(filepath.Join(d, live)) {
			t.Errorf("%s: the live launcher's group %s was removed", c, live)
		}
	}
}

// A group's directories are given without symlinks: co-mounted hierarchies are reached
// through a link (cpu -> cpu,cpuacct) on many hosts, and a bind source is opened without
// following one.
func TestV1DirsCanonical(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "cpu,cpuacct", "gosbx-a1")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	g := &v1Group{dirs: []v1Dir{{"cpu", filepath.Join(root, "cpu", "gosbx-a1")}, {"memory", filepath.Join(root, "memory", "gosbx-a1")}}}
	got := g.Dirs()
	want := []Dir{{"cpu", real}, {"memory", filepath.Join(root, "memory", "gosbx-a1")}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Dirs = %v, want %v", got, want)
	}
}

// A launch never waits for a lock on the caller's own cgroup directories, which any
// user may open (mode 0755) and flock(2) (review7 F1): New makes its group while
// another holds an exclusive lock on every parent.
func TestV1NewNotStalledByParentLock(t *testing.T) {
	own := v1Own(t)
	for _, d := range own {
		f, err := os.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		stop := time.AfterFunc(3*time.Second, func() { f.Close() }) // a stalled New ends
		defer stop.Stop()
	}
	start := time.Now()
	g, err := New(res(64<<20, 64<<20, 16, 20000), Options{})
	d := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	g.Destroy()
	if d > time.Second {
		t.Errorf("New waited %v behind a lock another user holds on its parent", d)
	}
}

// A container root on a cgroup v1 host whose cgroup namespace is the host's: its
// /proc/self/cgroup names /libpod_parent/libpod-ID, which is not under its own mount
// (recorded: "mkdir /sys/fs/cgroup/memory/libpod_parent/…: no such file or directory").
// The error says so and names the container flag, instead of a bare mkdir ENOENT.
func TestOwnGroupsMountedNamesTheCgroupNamespace(t *testing.T) {
	dir := t.TempDir()
	if err := ownGroupsMounted([]v1Dir{{"memory", dir}}); err != nil {
		t.Fatalf("an existing own group: %v", err)
	}
	missing := filepath.Join(dir, "libpod_parent", "libpod-0123")
	err := ownGroupsMounted([]v1Dir{{"memory", dir}, {"memory", missing}})
	if err == nil {
		t.Fatal("a missing own group: no error")
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%v: does not wrap ErrNotExist", err)
	}
	for _, want := range []string{missing, "memory group is not in this mount namespace", "/proc/self/cgroup", "--limits best-effort", "--cgroupns=private) does not help"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
}
