//go:build gosbxfault

package nsinit

import (
	"os"
	"path/filepath"
	"testing"

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
		"hostname", "loopback", "egress", "pid namespace", "pid 1 of the commands", "mount", "set-ID procfs", "resolv.conf",
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
