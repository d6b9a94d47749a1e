package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// deadLauncher is a pid above any pid_max (2^22): never a live process.
const deadLauncher = 999999999

// fakeV2 points v2Mount at a plain directory with the files a real cgroup2 mount has
// that containerd's manager opens without creating (cgroup.subtree_control) in the
// mount point and in each given ancestor group.
func fakeV2(t *testing.T, groups ...string) string {
	t.Helper()
	root := t.TempDir()
	old := v2Mount
	v2Mount = root
	t.Cleanup(func() { v2Mount = old })
	fakeLockDir(t)
	for _, g := range append([]string{""}, groups...) {
		d := filepath.Join(root, g)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeLockDir points ownerLockDir at a directory of the test's (for fake mounts only:
// a live sweep must find the real launches' lock files).
func fakeLockDir(t *testing.T) string {
	locks := t.TempDir()
	old := ownerLockDir
	ownerLockDir = func(uid int) string { return filepath.Join(locks, strconv.Itoa(uid)) }
	t.Cleanup(func() { ownerLockDir = old })
	return locks
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("%v", err)
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ownGroups are the directories named gosbx-<this pid>-* in dir.
func ownGroups(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "gosbx-*"))
	return m
}

func res(mem, swapTotal, pids, quota int64) *specs.LinuxResources {
	period := uint64(100000)
	return &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &mem, Swap: &swapTotal},
		Pids:   &specs.LinuxPids{Limit: &pids},
		CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
	}
}

func TestV2FileWrites(t *testing.T) {
	root := fakeV2(t, "p", "p/q")
	g, err := newV2(res(64<<20, 64<<20, 32, 20000), Options{Parent: "p/q"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind() != V2 || g.CloneFd() < 0 {
		t.Errorf("kind %v clone fd %d; want cgroup-v2 and an open fd", g.Kind(), g.CloneFd())
	}
	parent := filepath.Join(root, "p/q")
	made := ownGroups(t, parent)
	if len(made) != 1 {
		t.Fatalf("groups made in %s: %q; want one gosbx-<id>", parent, made)
	}
	dir := made[0]
	// the clone fd is that directory
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(g.CloneFd())); err != nil || l != dir {
		t.Errorf("clone fd is %q (%v); want %s", l, err, dir)
	}
	for file, want := range map[string]string{
		"memory.max":      "67108864",
		"memory.swap.max": "0", // runtime-spec memory+swap == memory: no swap
		"pids.max":        "32",
		"cpu.max":         "20000 100000",
	} {
		if got := readTrim(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q; want %q", file, got, want)
		}
	}
	for _, anc := range []string{root, filepath.Join(root, "p"), parent} {
		got := readTrim(t, filepath.Join(anc, "cgroup.subtree_control"))
		for _, c := range []string{"+cpu", "+memory", "+pids"} {
			if !strings.Contains(" "+got+" ", " "+c+" ") {
				t.Errorf("%s/cgroup.subtree_control = %q; want %s enabled", anc, got, c)
			}
		}
	}

	// Stats reads pids.peak and pids.events itself
	os.WriteFile(filepath.Join(dir, "pids.peak"), []byte("7\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 3\n"), 0o644)
	st := g.Stats()
	if st.PidsPeak != 7 || !st.PidsMaxHit {
		t.Errorf("stats %+v; want PidsPeak 7 and PidsMaxHit", st)
	}

	if err := g.Destroy(); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Destroy (%v)", dir, err)
	}
	// cgroup.kill was written on the way (a plain directory keeps what was written only
	// until the removal, so this is seen through the group having been removed at all)
	if err := g.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if _, err := os.Stat(parent); err != nil {
		t.Errorf("the parent %s went with the group: %v", parent, err)
	}
}

func TestV2DefaultParent(t *testing.T) {
	root := fakeV2(t, DefaultParent)
	g, err := newV2(res(1<<30, 1<<30, 100, 100000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if made := ownGroups(t, filepath.Join(root, DefaultParent)); len(made) != 1 {
		t.Errorf("groups in %s%s: %q; want one", root, DefaultParent, made)
	}
}

// A parent named with .. stays inside the mount point.
func TestV2ParentStaysInMount(t *testing.T) {
	root := fakeV2(t, "x")
	g, err := newV2(res(1<<30, 1<<30, 100, 100000), Options{Parent: "../../x"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if made := ownGroups(t, filepath.Join(root, "x")); len(made) != 1 {
		t.Errorf("groups in %s/x: %q; want one (parent ../../x cleaned to /x)", root, made)
	}
}

// --memory-swap -1 (any swap) is -1 in runtime-spec's memory+swap; cgroup v2 wants "max"
// in memory.swap.max. The kernel refuses a negative number (EINVAL), so the group
// could not be made and a required --memory would fail with 125.
func TestV2SwapUnlimited(t *testing.T) {
	root := fakeV2(t, DefaultParent)
	g, err := newV2(res(64<<20, -1, 32, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	made := ownGroups(t, filepath.Join(root, DefaultParent))
	if len(made) != 1 {
		t.Fatalf("groups: %q", made)
	}
	// "max", or a number the kernel clamps to its maximum (page_counter_memparse); never
	// negative, which the kernel refuses.
	if got := readTrim(t, filepath.Join(made[0], "memory.swap.max")); got != "max" && got != "9223372036854775807" {
		t.Errorf("memory.swap.max = %q for swap -1; want max (the kernel refuses a negative value)", got)
	}
}

// gc of groups named by an older gosbx (gosbx-<pid>-…): a leftover group of a launcher
// that is gone is removed by the next New, one of a live launcher kept; a gosbx-… group
// that no owner holds locked is removed; anything else is kept.
func TestV2GC(t *testing.T) {
	root := fakeV2(t, DefaultParent)
	parent := filepath.Join(root, DefaultParent)
	dead := filepath.Join(parent, "gosbx-"+strconv.Itoa(deadLauncher)+"-1-1")
	live := filepath.Join(parent, "gosbx-"+strconv.Itoa(os.Getpid())+"-0-0")
	other := filepath.Join(parent, "other-"+strconv.Itoa(deadLauncher))
	odd := filepath.Join(parent, "gosbx-abc")
	for _, d := range []string{dead, live, other, odd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
	}
	g, err := newV2(res(64<<20, 64<<20, 32, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead launcher's group %s was kept (%v); want it removed by gc", dead, err)
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if _, err := os.Stat(odd); !os.IsNotExist(err) {
		t.Errorf("%s, held by no owner, was kept (%v)", odd, err)
	}
}

func TestLauncherAlive(t *testing.T) {
	for name, want := range map[string]bool{
		"gosbx-" + strconv.Itoa(os.Getpid()) + "-1-2":  true,
		"gosbx-" + strconv.Itoa(deadLauncher) + "-1-2": false,
		"gosbx-x-1":  true, // not ours to judge: kept
		"gosbx-0-1":  true,
		"gosbx":      true,
		"other-1-12": true,
	} {
		if got := launcherAlive(name); got != want {
			t.Errorf("launcherAlive(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestNewIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		id := NewID()
		if len(id) != 16 || seen[id] || strings.Contains(id, strconv.Itoa(os.Getpid())) && len(strconv.Itoa(os.Getpid())) > 6 {
			t.Fatalf("id %q: want 16 unique hex digits, not the pid", id)
		}
		seen[id] = true
	}
	if n := groupName("0123456789abcdef"); n != "gosbx-0123456789abcdef" || legacyName(n) {
		t.Errorf("groupName = %q (legacy %v)", n, legacyName(n))
	}
	if !legacyName("gosbx-12-3-456") || legacyName("gosbx-12-3") || legacyName("other-1-2-3") {
		t.Error("legacyName misjudges")
	}
}

// gc by sandbox id: a group whose owner's lock is free is removed by the next New
// (with its lock file), one whose lock is held is kept, whatever pid made it; a group
// without a lock file (an older gosbx's) goes by its directory's lock.
func TestV2GCOwnerLock(t *testing.T) {
	root := fakeV2(t, DefaultParent)
	parent := filepath.Join(root, DefaultParent)
	deadName, liveName, oldName := groupName(NewID()), groupName(NewID()), groupName(NewID())
	dead, live, old := filepath.Join(parent, deadName), filepath.Join(parent, liveName), filepath.Join(parent, oldName)
	held, err := ownerLock(liveName) // a live owner
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	killed, err := ownerLock(deadName) // an owner killed: its file left, unlocked
	if err != nil {
		t.Fatal(err)
	}
	killed.Close()
	for _, d := range []string{dead, live, old} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644)
	}
	g, err := newV2(res(64<<20, 64<<20, 32, 20000), Options{ID: "00000000000000aa"})
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(parent, "gosbx-00000000000000aa")
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the group is not named by the sandbox id: %v", err)
	}
	for _, d := range []string{dead, old} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the dead owner's group %s was kept (%v); want it removed", d, err)
		}
	}
	if _, err := os.Stat(killed.Name()); !os.IsNotExist(err) {
		t.Errorf("the dead owner's lock file was kept (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live owner's group %s was removed: %v", live, err)
	}
	// while g's owner (this process, through g) lives, a sweep keeps it
	gcV2(DefaultParent, 0)
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("a sweep removed the group of a live owner: %v", err)
	}
	releaseOwner(held)
	gcV2(DefaultParent, 0)
	if _, err := os.Stat(live); !os.IsNotExist(err) {
		t.Errorf("the group %s whose owner let go was kept (%v)", live, err)
	}
	lock := g.(*v2Group).owner.Name()
	g.Destroy()
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock file %s outlived Destroy (%v)", lock, err)
	}
}

// No lock another user can take decides anything (review7 F1): the cgroup directories
// are mode 0755, anyone may open and flock(2) them. A flock held on the parent does not
// stall New; one held on a dead owner's group does not keep it; the owners' lock
// directory must be the caller's alone.
func TestV2LocksNotOnCgroupDirs(t *testing.T) {
	root := fakeV2(t, DefaultParent)
	parent := filepath.Join(root, DefaultParent)
	deadName := groupName(NewID())
	killed, err := ownerLock(deadName)
	if err != nil {
		t.Fatal(err)
	}
	killed.Close()
	dead := filepath.Join(parent, deadName)
	if err := os.Mkdir(dead, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, "cgroup.procs"), nil, 0o644)
	// another user's locks: exclusive on the parent, shared on the dead group
	for _, l := range []struct {
		dir string
		how int
	}{{parent, unix.LOCK_EX}, {dead, unix.LOCK_SH}} {
		f, err := os.Open(l.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Flock(int(f.Fd()), l.how); err != nil {
			t.Fatal(err)
		}
		stop := time.AfterFunc(5*time.Second, func() { f.Close() }) // a stalled New ends
		defer stop.Stop()
	}
	start := time.Now()
	g, err := newV2(res(64<<20, 64<<20, 32, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Destroy()
	if d := time.Since(start); d > time.Second {
		t.Errorf("New waited %v behind a lock another user holds on its parent", d)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("a lock on the dead owner's group %s kept it (%v)", dead, err)
	}
	dir := ownerLockDir(os.Geteuid())
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if g, err := newV2(res(64<<20, 64<<20, 32, 20000), Options{}); err == nil || !strings.Contains(err.Error(), dir) ||
		!strings.Contains(err.Error(), "chmod 0700") {
		if g != nil {
			g.Destroy()
		}
		t.Errorf("New with a lock directory of mode 0755: %v, want a refusal naming it and the fix", err)
	}
}

func TestEventCount(t *testing.T) {
	f := filepath.Join(t.TempDir(), "pids.events")
	os.WriteFile(f, []byte("max 12\nother 3\n"), 0o644)
	if n := eventCount(f, "max"); n != 12 {
		t.Errorf("max = %d; want 12", n)
	}
	if n := eventCount(f, "nope"); n != 0 {
		t.Errorf("nope = %d", n)
	}
	if n := eventCount(f+"-missing", "max"); n != 0 {
		t.Errorf("missing file = %d", n)
	}
	if a := testing.AllocsPerRun(10, func() { eventCount(f, "other") }); a > 3 {
		t.Errorf("eventCount: %.0f allocations a read, want ≤ 3 (the path, no file's)", a)
	}
	// past the stack buffer, the key on the last line without a newline
	big := filepath.Join(t.TempDir(), "cpu.stat")
	os.WriteFile(big, []byte(strings.Repeat("pad 1\n", 300)+"user_usec 77"), 0o644)
	if n := eventCount(big, "user_usec"); n != 77 {
		t.Errorf("user_usec past 1 KiB = %d; want 77", n)
	}
}
