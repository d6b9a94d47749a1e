package integration

import (
	"strings"
	"testing"
)

// TestSessionWriterBehindPass: a process a git: commit session's command leaves in the
// background sets a skip-worktree bit in the index after the cleanup's pass checked it,
// and exits before the pass ends (a -tags gosbxfault build, GOSBX_FAULT=session slow
// pass: the end of the pass held 700 ms). The next request's cleanup still clears the
// bit: the session was not idle when its pass began, so the index is not the host's.
// Before the fix, the processes were counted after the pass: none was left, the next
// request's pass took the index as the host's git wrote it, and the bit (which hides
// the command's change to the file from the host's git status) stayed for good.
func TestSessionWriterBehindPass(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "c1")
		with := faultSessionCmd(e, bin, "session slow pass")
		ctx := e.limitCtx(runLimit)
		mustSucceed(t, e.runCmd(ctx, with(e.rawCommand(ctx, "session", "start", "p", "--workspace", e.ws, "--policy", e.commitPolicy()))), "session start")
		run := func(script string) result {
			ctx := e.limitCtx(runLimit)
			return e.runCmd(ctx, with(e.rawCommand(ctx, "exec", "--session", "p", "--", shellPath, "-c", script)))
		}
		mustSucceed(t, run(`echo changed > tracked.txt; (sleep 0.3; git update-index --skip-worktree tracked.txt) </dev/null >/dev/null 2>&1 &`), "request 1")
		mustSucceed(t, run("true"), "request 2")
		out, err := e.hostGitOut(e.ws, "ls-files", "-v", "tracked.txt")
		if err != nil {
			t.Fatalf("git ls-files: %v: %s", err, out)
		}
		if strings.HasPrefix(out, "S ") {
			t.Errorf("after request 2 the index holds the skip-worktree bit a background process set behind request 1's pass: %q", out)
		}
		if st, _ := e.hostGitOut(e.ws, "status", "--short"); !strings.Contains(st, "tracked.txt") {
			t.Errorf("the host's git status does not show the command's change: %q", st)
		}
	})
}
