//go:build gosbxfault

package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/policy"
)

// A root caller's launch (without the set-ID rules, which the raw init does not serve
// yet), without and with a cgroup: every injectable step the raw init passes through
// fails there as in the Go init (-tags gosbxfault: go test -tags gosbxfault -run
// TestRawRootFaultSameAsGo ./nsinit/), with the same step and message, and the command
// never runs. The integration suite's TestRawFaultSameAsGo does the same through
// gosbx exec for a caller other than root.
func TestRawRootFaultSameAsGo(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a root caller's launch")
	}
	ws := testWorkspace(t)
	marker := filepath.Join(ws, "ran")
	steps := []string{"config", "cgroup", "pipe", "clone", "open bind source", "idmap", "cgroup place",
		"user counts", "hostname", "loopback", "egress", "pid namespace", "pid 1 of the commands", "mount", "set-ID procfs", "resolv.conf",
		"pivot_root", "set not dumpable", "session keyring", "cgroup namespace", "limit capabilities", "set-ID thread",
		"signal dispositions", "setsid", "rlimits", "close fds", "chdir", "drop capabilities", "seccomp", "exec"}
	for _, memory := range []string{"", "64M"} {
		spec := withoutNotify(t, compile(t, policy.Options{Workspace: ws, Args: []string{"touch", marker},
			Resources: policy.Resources{Memory: memory}}, nil))
		for _, st := range steps {
			t.Setenv(fault.Var, st)
			var got [2]string
			for i, raw := range []bool{false, true} {
				rawAllowed.Store(raw)
				rawTaken.Store(false)
				err := Command(spec).Run()
				if raw && !rawTaken.Load() && st != "config" && st != "cgroup" { // both before the init is chosen
					t.Errorf("memory %q, fault at %q: the raw init was not taken", memory, st)
				}
				if err == nil {
					got[i] = "ok"
				} else {
					got[i] = err.Error()
				}
				if _, serr := os.Stat(marker); serr == nil && err != nil {
					t.Errorf("memory %q, fault at %q (raw %v): the command ran: %v", memory, st, raw, err)
				}
				os.Remove(marker)
			}
			rawAllowed.Store(false)
			if got[0] != got[1] {
				t.Errorf("memory %q, fault at %q:\nGo init:  %s\nraw init: %s", memory, st, got[0], got[1])
			}
		}
	}
}

// A raw launch that fails at its clone leaves no descriptor of this process to be
// closed twice: its sync and life pipe ends were closed as plain numbers while
// os.Files wrapping them waited for the garbage collector, whose finalizers then
// closed whatever this process had opened at those numbers since (a later launch's
// sync pipe or bind source: TestRawRootFaultSameAsGo failed one run in four, "died
// during setup: signal: killed" or "bad file descriptor" at a later step).
func TestRawCloneFailureClosesOnce(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a root caller's launch")
	}
	ws := testWorkspace(t)
	spec := withoutNotify(t, compile(t, policy.Options{Workspace: ws, Args: []string{"true"}}, nil))
	t.Setenv(fault.Var, "clone")
	rawAllowed.Store(true)
	rawTaken.Store(false)
	err := Command(spec).Run()
	rawAllowed.Store(false)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "clone" || !rawTaken.Load() {
		t.Fatalf("raw launch with a fault at clone: %v (raw init taken: %v), want a setup error at clone", err, rawTaken.Load())
	}
	// the numbers the launch freed, taken again (the lowest free ones: open(2))
	var fds []int
	for range 32 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		fds = append(fds, p[0], p[1])
	}
	defer closeFds(fds)
	// every finalizer queued until now has run once a finalizer queued after one that
	// ran has run too (one goroutine runs them, a queue's batch at a time)
	for range 2 {
		done := make(chan struct{})
		runtime.SetFinalizer(new([16]byte), func(*[16]byte) { close(done) })
		runtime.GC()
		<-done
	}
	for _, fd := range fds {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			t.Errorf("descriptor %d, opened after the failed launch: %v (closed by a finalizer of the launch's)", fd, err)
		}
	}
}
