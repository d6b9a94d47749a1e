package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// statusLines reads the JSON status lines of file path.
func statusLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var ev map[string]any
		if json.Unmarshal([]byte(l), &ev) != nil {
			t.Fatalf("%s: status line %q is not JSON", path, l)
		}
		out = append(out, ev)
	}
	return out
}

// TestSessionDetachStatusFd: `exec --session --detach --status-fd 3` writes the job's
// start lines (its exec line with the job's pid) to fd 3, and `job wait --status-fd 3`
// the job's exit line, as exec --status-fd writes them (new-user trial, item 3: fd 3 got
// nothing, and job wait had no --status-fd).
func TestSessionDetachStatusFd(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("d")
		withFd3 := func(path string, args ...string) result {
			f, err := os.Create(path)
			must(t, err)
			defer f.Close()
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, args...)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			cmd.ExtraFiles = []*os.File{f}
			return e.runCmd(ctx, cmd)
		}
		start := filepath.Join(e.base, "start.json")
		r := withFd3(start, "exec", "--session", "d", "--detach", "--status-fd", "3", "--", "sh", "-c", "echo j; exit 4")
		if r.code != 0 || r.stdout != "d/1\n" {
			t.Fatalf("--detach --status-fd: want d/1\n%v", r)
		}
		var execLine bool
		for _, ev := range statusLines(t, start) {
			if ev["exec"] == true && ev["pid"] != nil {
				execLine = true
			}
			if ev["exit-code"] != nil {
				t.Errorf("the start's status lines hold an exit line: %v", ev)
			}
		}
		if !execLine {
			t.Errorf("--detach --status-fd 3 wrote no exec line with the job's pid: %v", statusLines(t, start))
		}
		end := filepath.Join(e.base, "end.json")
		if r := withFd3(end, "job", "wait", "--status-fd", "3", "d/1"); r.code != 4 {
			t.Fatalf("job wait --status-fd: want the job's 4\n%v", r)
		}
		lines := statusLines(t, end)
		if len(lines) != 1 || lines[0]["exit-code"] != float64(4) {
			t.Errorf("job wait --status-fd 3: %v, want one exit line with exit-code 4", lines)
		}
		// a status file the session's commands can write is refused, as exec's is
		if r := withFd3(filepath.Join(e.ws, "in.json"), "job", "wait", "--status-fd", "3", "d/1"); r.code != 125 || !strings.Contains(r.stderr, "--status-fd 3") {
			t.Errorf("job wait --status-fd on a file in the workspace: want 125\n%v", r)
		}
	})
}
