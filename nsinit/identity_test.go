package nsinit

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// A free id is taken whatever other launchers do at the same time: their sweeps of the
// lock directory (every take sweeps it first) and their takes and releases of other ids
// never make a free id look in use (a range of one id failed "all 1 host ids in use"
// while another launcher's sweep held its unheld lock file for an instant).
func TestTakeHostIDConcurrentSweeps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lock directory must be root's")
	}
	old := hostIDDir
	hostIDDir = filepath.Join(t.TempDir(), "ids")
	t.Cleanup(func() { hostIDDir = old })
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range 3 { // other launchers: each takes and frees an id of its own range
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := idRange{Base: 2_100_000_100 + uint32(g)*10, Count: 1}
			for !stop.Load() {
				if h, err := takeHostID(r, "other"); err == nil {
					h.release()
				}
			}
		}()
	}
	r := idRange{Base: 2_100_000_000, Count: 1}
	deadline := time.Now().Add(time.Second)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		h, err := takeHostID(r, "mine")
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("take %d of a free id while others swept: %v", n, err)
		}
		h.release()
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d takes", n)
}

// The lock file holds exactly the sandbox id, whatever it held before.
func TestWriteHolder(t *testing.T) {
	for _, before := range []string{"", "0123456789abcdef\n", "an older and much longer content\n"} {
		p := filepath.Join(t.TempDir(), "id")
		if err := os.WriteFile(p, []byte(before), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		writeHolder(int(f.Fd()), int64(len(before)), "00000000000000aa")
		f.Close()
		if b, err := os.ReadFile(p); err != nil || string(b) != "00000000000000aa\n" {
			t.Errorf("over %q: %q, %v", before, b, err)
		}
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

// The host-id directory must be root's alone: one other users may open (mode 0755)
// they may flock(2) too, so a take refuses it, naming the path and the fix. And a lock
// on it held by another (a sweep that does not end) stops a take within
// hostIDLockWait, never without bound.
func TestTakeHostIDDirOwnerAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the lock directory must be root's")
	}
	old, oldWait := hostIDDir, hostIDLockWait
	hostIDDir, hostIDLockWait = filepath.Join(t.TempDir(), "ids"), 200*time.Millisecond
	t.Cleanup(func() { hostIDDir, hostIDLockWait = old, oldWait })
	r := idRange{Base: 2_100_000_000, Count: 2}
	if err := os.Mkdir(hostIDDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(hostIDDir, 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := takeHostID(r, "x")
	if err == nil || !strings.Contains(err.Error(), hostIDDir) || !strings.Contains(err.Error(), "chmod 0700") {
		h.release()
		t.Fatalf("a take in a directory of mode 0755: %v, want a refusal naming it and the fix", err)
	}
	if err := os.Chmod(hostIDDir, 0o700); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(hostIDDir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if h, err = takeHostID(r, "x"); err == nil || !strings.Contains(err.Error(), "held by another") {
		h.release()
		t.Fatalf("a take while the directory's lock is held: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the take waited %v for a held lock (bound %v)", d, hostIDLockWait)
	}
	held.Close()
	if h, err = takeHostID(r, "x"); err != nil {
		t.Fatalf("once the lock is let go: %v", err)
	}
	h.release()
}
