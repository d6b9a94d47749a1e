package nsinit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// Host ids: two running sandboxes never hold the same one; a freed id's lock file is
// removed; a stale file (its launcher killed) is swept by the next take.
func TestTakeHostID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lock directory must be root's")
	}
	old := hostIDDir
	hostIDDir = filepath.Join(t.TempDir(), "ids")
	t.Cleanup(func() { hostIDDir = old })
	r := idRange{Base: 2_100_000_000, Count: 2}
	a, err := takeHostID(r, "00000000000000aa")
	if err != nil {
		t.Fatal(err)
	}
	// the lock file names the sandbox that holds the id
	if b, err := os.ReadFile(filepath.Join(hostIDDir, strconv.FormatUint(uint64(a.id), 10))); err != nil || string(b) != "00000000000000aa\n" {
		t.Errorf("lock file content %q, %v; want the sandbox id", b, err)
	}
	b, err := takeHostID(r, "b")
	if err != nil {
		t.Fatal(err)
	}
	if a.id == b.id || a.id < r.Base || b.id < r.Base || a.id >= r.Base+r.Count || b.id >= r.Base+r.Count {
		t.Fatalf("ids %d and %d from %d:%d", a.id, b.id, r.Base, r.Count)
	}
	if _, err := takeHostID(r, "x"); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a third id from a range of two: %v", err)
	}
	a.release()
	if _, err := os.Stat(filepath.Join(hostIDDir, strconv.FormatUint(uint64(a.id), 10))); !os.IsNotExist(err) {
		t.Errorf("the freed id's lock file: %v", err)
	}
	c, err := takeHostID(r, "x")
	if err != nil || c.id != a.id {
		t.Fatalf("after a release: %v, %v (want %d)", c, err, a.id)
	}
	c.release()
	b.release()
	stale := filepath.Join(hostIDDir, "2100000007")
	if err := os.WriteFile(stale, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := takeHostID(r, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer d.release()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a lock file nobody holds was not swept: %v", err)
	}
}

// Only a lone, not asked for process limit becomes RLIMIT_NPROC.
func TestNprocDefault(t *testing.T) {
	limit := int64(8192)
	base := func() *config.Config {
		return &config.Config{Process: &specs.Process{Args: []string{"true"}},
			Linux: &config.Linux{Resources: &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &limit}}}}
	}
	if n, ok := nprocDefault(base()); !ok || n != 8192 {
		t.Errorf("the profile's default: %d %v", n, ok)
	}
	mem := int64(1 << 30)
	for name, mutate := range map[string]func(*config.Config){
		"asked for":     func(s *config.Config) { s.Limits.Required = []string{"pids"} },
		"cgroup parent": func(s *config.Config) { s.Limits.CgroupParent = "/x" },
		"memory too":    func(s *config.Config) { s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &mem} },
		"own nproc": func(s *config.Config) {
			s.Process.Rlimits = []specs.POSIXRlimit{{Type: "RLIMIT_NPROC", Hard: 5, Soft: 5}}
		},
		"no process":   func(s *config.Config) { s.Process = nil },
		"no resources": func(s *config.Config) { s.Linux.Resources = nil },
	} {
		s := base()
		mutate(s)
		if n, ok := nprocDefault(s); ok {
			t.Errorf("%s: became RLIMIT_NPROC %d", name, n)
		}
	}
}

// removeNoFollow never follows a symlink: not in the parent (a directory the command
// replaced by a link to another repository), not at the end; it removes a real tree.
func TestRemoveNoFollow(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.MkdirAll(filepath.Join(victim, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	if err := os.Symlink(victim, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if gone, err := removeNoFollow(filepath.Join(ws, "sub", ".git")); gone || err != nil {
		t.Error("removed through a symlinked parent")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "objects")); err != nil {
		t.Fatalf("the repository behind the symlink was touched: %v", err)
	}
	os.Symlink(victim, filepath.Join(ws, "link"))
	if gone, err := removeNoFollow(filepath.Join(ws, "link")); !gone || err != nil {
		t.Error("a final symlink was not removed")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git")); err != nil {
		t.Fatalf("removing a final symlink touched its target: %v", err)
	}
	tree := filepath.Join(ws, "tree")
	os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(tree, "a", "b", "f"), nil, 0o644)
	os.Symlink(victim, filepath.Join(tree, "a", "into-victim"))
	if gone, err := removeNoFollow(tree); !gone || err != nil {
		t.Error("a real tree was not removed")
	}
	if _, err := os.Lstat(tree); err == nil {
		t.Error("the tree is still there")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "objects")); err != nil {
		t.Fatalf("removing a tree followed a symlink in it: %v", err)
	}
}

// ownerRWX never follows a symlink at the name it is given (a directory swapped for
// one between the cleanup's stat and its chmod): the target outside keeps its mode.
func TestOwnerRWXNoFollow(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "d"), 0o055)
	os.Symlink(victim, filepath.Join(ws, "link"))
	dir, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	if err := ownerRWX(dir, "link"); err == nil {
		t.Error("ownerRWX went through a symlink")
	}
	if st, _ := os.Stat(victim); st.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target changed mode: %v", st.Mode())
	}
	if err := ownerRWX(dir, "d"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(ws, "d")); st.Mode().Perm()&0o700 != 0o700 {
		t.Errorf("the directory did not get u+rwx: %v", st.Mode())
	}
}

// openComponents (the init's cleanup, where openat2 is filtered) refuses a symlink at
// any component, like openat2 RESOLVE_NO_SYMLINKS, and opens a real directory.
func TestOpenComponents(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "a", "b")
	os.MkdirAll(real, 0o755)
	os.Symlink(filepath.Join(base, "a"), filepath.Join(base, "link"))
	if fd, err := openComponents(filepath.Join(base, "link", "b")); err == nil {
		unix.Close(fd)
		t.Error("opened a path through a symlink")
	}
	fd, err := openComponents(real)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st, want unix.Stat_t
	unix.Fstat(fd, &st)
	unix.Stat(real, &want)
	if st.Ino != want.Ino {
		t.Error("opened another directory")
	}
}
