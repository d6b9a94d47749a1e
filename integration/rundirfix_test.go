package integration

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A system without a writable /tmp (the shipped image run without `--tmpfs /tmp`) or
// /run: `session start` stops with 125 naming the directory, and the fix (`--tmpfs`,
// XDG_RUNTIME_DIR) (attack review 38 F4). A read-only tmpfs over /tmp (uid 65534's
// /tmp/gosbx-65534) or /run (root's /run/gosbx) in a mount namespace of the test's own.
func TestRuntimeDirMissingNamesFix(t *testing.T) {
	for _, c := range []struct {
		caller caller
		dir    string
	}{{nobodyCaller, "/tmp"}, {rootCaller, "/run"}} {
		t.Run(c.caller.name, func(t *testing.T) {
			s := newSandbox(t, c.caller)
			ctx := s.limitCtx(runLimit)
			g := s.rawCommand(ctx, "session", "start", "r38f4-"+s.id)
			script := `D=$1; shift; mount -t tmpfs -o ro,mode=1777 gosbx-it "$D" || exit 77; cd /; env -i PATH=/usr/bin:/bin HOME=/nonexistent "$@"`
			cmd := exec.CommandContext(ctx, "/usr/bin/unshare", append([]string{"-m", "--propagation", "private", shellPath, "-c", script, "_", c.dir}, g.Args...)...)
			cmd.Env = s.env()
			cmd.WaitDelay = 5 * time.Second
			r := s.runCmd(ctx, cmd)
			if r.code == 77 {
				t.Skipf("cannot mount over %s here: %v", c.dir, r)
			}
			if r.code != 125 {
				stop := exec.CommandContext(ctx, "/usr/bin/unshare", append([]string{"-m", "--propagation", "private", shellPath, "-c", script, "_", c.dir}, s.rawCommand(ctx, "session", "stop", "r38f4-"+s.id).Args...)...)
				stop.Run()
				t.Fatalf("session start without a writable %s: want 125, got %v", c.dir, r)
			}
			for _, want := range []string{"runtime directory " + c.dir + "/", "`--tmpfs " + c.dir + "`", "XDG_RUNTIME_DIR"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("the refusal does not name %q: %v", want, r)
				}
			}
		})
	}
}
