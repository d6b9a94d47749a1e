package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// callerShell runs a host shell script as the caller (its pipes are the caller's).
func callerShell(t *testing.T, s *sandbox, script string) result {
	t.Helper()
	ctx := s.limitCtx(runLimit)
	var cmd *exec.Cmd
	if s.c.uid == 0 {
		cmd = exec.CommandContext(ctx, shellPath, "-c", script)
	} else {
		cmd = exec.CommandContext(ctx, "/usr/bin/setpriv", fmt.Sprintf("--reuid=%d", s.c.uid), fmt.Sprintf("--regid=%d", s.c.gid), "--clear-groups", "--", shellPath, "-c", script)
	}
	cmd.Env = s.env()
	cmd.Dir = s.base
	return s.runCmd(ctx, cmd)
}

// A pipe of the caller's given as stdin is not opened for writing by the command: a
// line it writes through /proc/self/fd/0 does not reach the caller's next reader of
// that pipe, which gets what the command did not read. Fails with the pipe passed as
// itself (the injected line is printed by the host's cat).
func TestStdinPipeNotInjected(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		script := fmt.Sprintf(`printf 'l1\nl2\n' | { %s exec --workspace %s -- sh -c 'read x; echo "got=$x"; timeout 2 sh -c "echo INJECTED > /proc/self/fd/0"; exit 0'; cat; }`, gosbxBin, s.ws)
		r := callerShell(t, s, script)
		if strings.Contains(r.stdout, "INJECTED") {
			t.Fatalf("a line the command wrote into its stdin reached the caller's next reader:\n%s", r)
		}
		if !strings.Contains(r.stdout, "got=l1\n") || !strings.Contains(r.stdout, "l2\n") {
			t.Errorf("want got=l1 inside and l2 left for the caller's cat:\n%s", r)
		}
	})
}

// A `while read` loop around gosbx keeps every line: the relay takes from the caller's
// pipe only what the command read.
func TestStdinPipeLoopKeepsLines(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		script := fmt.Sprintf(`seq 5 | while read l; do %s exec --workspace %s -- true; printf '%%s ' "$l"; done`, gosbxBin, s.ws)
		r := callerShell(t, s, script)
		mustSucceed(t, r, "loop")
		if r.stdout != "1 2 3 4 5 " {
			t.Errorf("the loop lost lines: %q\n%s", r.stdout, r)
		}
	})
}
