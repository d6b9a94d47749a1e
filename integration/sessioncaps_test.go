package integration

import (
	"fmt"
	"testing"
)

// A session's commands hold no capability, have an empty bounding set and
// no_new_privs, the first and a later one alike: each is forked by the session's init
// through the process stage (nsinit's planProcess), which drops them. Fails with the
// process stage's bounding-set drops left out (CapBnd 000001ffffffffff).
func TestSessionCapabilitiesDropped(t *testing.T) {
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
	})
}
