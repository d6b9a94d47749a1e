package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sessionStatus runs script in session name with --status-fd and returns the result
// and the exit line.
func (e *sessionEnv) sessionStatus(name, script string) (result, map[string]any) {
	e.t.Helper()
	status := filepath.Join(e.base, "status-"+name+".json")
	f, err := os.Create(status)
	must(e.t, err)
	defer f.Close()
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, "exec", "--session", name, "--status-fd", "3", "--", shellPath, "-c", script)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	cmd.ExtraFiles = []*os.File{f}
	e.scope.wrap(cmd)
	r := e.runCmd(ctx, cmd)
	b, _ := os.ReadFile(status)
	return r, exitEvent(e.t, parseStatusLines(e.t, string(b)), string(b))
}

// An `exec --session` exit line says how the session's limits are held (`limits`),
// and with a cgroup whether the session's memory or pids limit acted while the command
// ran (`oom-killed`, `limit-hit`: counted from the group's own counters before and
// after, so a later command's line is clean again), with a usage-note that the figures
// are the session's; stderr names the session's memory limit. Under RLIMIT_NPROC (an
// unprivileged caller) `limits` is "rlimit". Before, these lines had no `limits` at all.
func TestSessionExitLimits(t *testing.T) {
	requireV1(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		if c.uid != 0 {
			e.start("l", "--pids", "40")
			r, ev := e.sessionStatus("l", "true")
			mustSucceed(t, r, "true in a session")
			wantKey(t, ev, "limits", "rlimit")
			if note, _ := ev["usage-note"].(string); !strings.Contains(note, "RLIMIT_NPROC") {
				t.Errorf("usage-note %q; want the RLIMIT_NPROC note", note)
			}
			return
		}
		e.start("l", "--memory", "64M", "--pids", "40")
		r, ev := e.sessionStatus("l", "true")
		mustSucceed(t, r, "true in a session")
		wantKey(t, ev, "limits", "cgroup-v1")
		wantKey(t, ev, "oom-killed", false)
		if _, hit := ev["limit-hit"]; hit {
			t.Errorf("limit-hit %v after true; want none", ev["limit-hit"])
		}
		if note, _ := ev["usage-note"].(string); !strings.Contains(note, "session") {
			t.Errorf("usage-note %q; want the session's note", note)
		}
		r, ev = e.sessionStatus("l", "exec "+python+" -c 'b = bytearray(1<<30)'")
		if r.code != 137 {
			t.Fatalf("a memory hog in a session under --memory 64M: want 137\n%v", r)
		}
		wantKey(t, ev, "oom-killed", true)
		wantKey(t, ev, "limit-hit", "memory")
		if !strings.Contains(r.stderr, "gosbx: killed by the session's memory limit (64M)") {
			t.Errorf("stderr does not name the session's memory limit:\n%v", r)
		}
		r, ev = e.sessionStatus("l", "for i in $(seq 60); do sleep 0.1 & done; wait")
		wantKey(t, ev, "oom-killed", false) // the earlier kill is not this command's
		wantKey(t, ev, "limit-hit", "pids")
		if !strings.Contains(r.stderr, "gosbx: the session's pids limit (40) refused a fork") {
			t.Errorf("stderr does not name the session's pids limit:\n%v", r)
		}
	})
}
