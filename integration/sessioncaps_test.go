package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session's commands hold no capability and have an empty bounding set, the first
// and a later one alike, though their process stage no longer drops the bounding set:
// the session's init emptied every thread's once (nsinit's dropThreadBounding), and a
// child's credentials are a copy of its forking thread's. Checked from outside too:
// every thread of the init has an empty bounding set, so whichever forks a command,
// the command cannot gain a capability at execve. Fails with dropThreadBounding left
// out (CapBnd 000001ffffffffff in the command).
func TestSessionBoundingSetEmpty(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("caps")
		for i := range 2 {
			r := e.in("caps", nil, `cat /proc/self/status`)
			mustSucceed(t, r, fmt.Sprintf("command %d", i+1))
			st := procStatus(r.stdout)
			for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if st[k] != zeroCaps {
					t.Errorf("command %d: %s = %q, want %s", i+1, k, st[k], zeroCaps)
				}
			}
			if st["NoNewPrivs"] != "1" {
				t.Errorf("command %d: NoNewPrivs = %q, want 1", i+1, st["NoNewPrivs"])
			}
		}
		init := e.info("caps").InitPid
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", init))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("no threads of the session's init %d: %v", init, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(task)
			if err != nil {
				continue // a thread that ended
			}
			if bnd := procStatus(string(b))["CapBnd"]; bnd != zeroCaps {
				t.Errorf("%s: CapBnd %s, want %s", task, bnd, zeroCaps)
			}
		}
		if !strings.Contains(e.in("caps", nil, `echo ok`).stdout, "ok") {
			t.Errorf("the session stopped serving after the checks")
		}
	})
}
