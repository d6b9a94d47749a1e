package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
// start lines (the namespaces, its exec line) to fd 3, and `job wait --status-fd 3`
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
			if ev["exec"] == true { // its pid, when the job had not ended by the time it was read
				execLine = true
			}
			if ev["exit-code"] != nil {
				t.Errorf("the start's status lines hold an exit line: %v", ev)
			}
		}
		if !execLine {
			t.Errorf("--detach --status-fd 3 wrote no exec line: %v", statusLines(t, start))
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

// TestSessionNoRuntimeDir: a caller of uid 65534 with no XDG_RUNTIME_DIR (setpriv, a
// container's USER, cron) and no /run/user/65534 runs sessions in /tmp/gosbx-65534,
// made mode 0700 and its own, as tmux makes /tmp/tmux-UID (new-user trial, item 4:
// `session start` exited 125 "XDG_RUNTIME_DIR is not set", and doctor's fix named
// /run/user/65534, which that user cannot make). Checked from the host: the directory's
// owner and mode, the control socket in it.
func TestSessionNoRuntimeDir(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("root only: runs gosbx as uid 65534 through setpriv")
	}
	dir := fmt.Sprintf("/tmp/gosbx-%d", nobodyID)
	if _, err := os.Lstat(fmt.Sprintf("/run/user/%d", nobodyID)); err == nil {
		t.Skipf("/run/user/%d exists here: gosbx uses it", nobodyID)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err == nil && (st.Uid != uint32(nobodyID) || st.Mode&syscall.S_IFMT != syscall.S_IFDIR) {
		t.Skipf("%s exists and is not uid %d's directory (uid %d, mode %#o)", dir, nobodyID, st.Uid, st.Mode)
	}
	s := newSandbox(t, nobodyCaller)
	name := "noxdg" + strconv.Itoa(os.Getpid())
	run := func(args ...string) result {
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, args...) // its environment has no XDG_RUNTIME_DIR
		return s.runCmd(ctx, cmd)
	}
	r := run("session", "start", name, "--workspace", s.ws, "--die-with-owner", strconv.Itoa(os.Getpid()))
	mustSucceed(t, r, "session start without XDG_RUNTIME_DIR")
	t.Cleanup(func() {
		run("session", "kill", name)
		os.Remove(filepath.Join(dir, name+".ended")) // the record of why it ended
	})
	if err := syscall.Lstat(dir, &st); err != nil || st.Uid != uint32(nobodyID) || st.Mode&0o7777 != 0o700 || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		t.Errorf("%s: %v, uid %d, mode %#o; want a directory of uid %d, mode 0700", dir, err, st.Uid, st.Mode, nobodyID)
	}
	if fi, err := os.Lstat(filepath.Join(dir, name+".sock")); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("the session's control socket is not in %s: %v", dir, err)
	}
	if r := run("exec", "--session", name, "--", "sh", "-c", "echo hi"); r.code != 0 || r.stdout != "hi\n" {
		t.Errorf("exec --session without XDG_RUNTIME_DIR\n%v", r)
	}
	mustSucceed(t, run("session", "stop", name), "session stop")
	if _, err := os.Lstat(filepath.Join(dir, name+".sock")); err == nil {
		t.Errorf("the control socket is left in %s after stop", dir)
	}
}

// TestSessionNotFoundHintSessionForm: in a session, the 127 hint that names --ro or
// --toolchain (which exec --session refuses) says where they go: on session start, after
// a stop (new-user trial, item 6); the one-shot hint is unchanged (TestToolchainAuto).
func TestSessionNotFoundHintSessionForm(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		home, path := fakeToolchains(t, e.sandbox)
		ver := home + "/.pyenv/versions/3.99.0"
		run := func(args ...string) result {
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, args...)
			cmd.Env = append(e.env(), "HOME="+home, "PATH="+path, "XDG_RUNTIME_DIR="+e.rt)
			e.scope.wrap(cmd)
			return e.runCmd(ctx, cmd)
		}
		mustSucceed(t, run("session", "start", "h", "--workspace", e.ws, "--die-with-owner", strconv.Itoa(os.Getpid())), "session start")
		r := run("exec", "--session", "h", "--", ".venv/bin/python", "-c", "pass")
		if r.code != 127 || !strings.Contains(r.stderr, "add --ro "+ver) ||
			!strings.Contains(r.stderr, "gosbx session stop h, then gosbx session start h with the flag") {
			t.Errorf("a venv's python in a session: want 127 with the --ro fix in the session's form\n%v", r)
		}
		r = run("exec", "--session", "h", "--", "python3.99", "-c", "pass")
		if r.code != 127 || !strings.Contains(r.stderr, "--toolchain auto") || !strings.Contains(r.stderr, "gosbx session start h") {
			t.Errorf("python3.99 in a session: want 127 with the --toolchain fix in the session's form\n%v", r)
		}
		// followed, the fix works: the session started again with the flag runs it
		mustSucceed(t, run("session", "stop", "h"), "session stop")
		mustSucceed(t, run("session", "start", "h", "--workspace", e.ws, "--ro", ver, "--die-with-owner", strconv.Itoa(os.Getpid())), "session start --ro")
		mustSucceed(t, run("exec", "--session", "h", "--", ".venv/bin/python", "-c", "pass"), "the venv's python after the hint's restart")
	})
}

// TestSessionStopNotRunning: `session stop` and `session kill` of a session that is not
// running exit 1 with the message (as tmux kill-session and docker stop do), not 125,
// which a caller's cleanup must otherwise take as a possible failure (new-user trial,
// item 11); a second stop of a stopped session is the same.
func TestSessionStopNotRunning(t *testing.T) {
	e := newSessionEnv(t, rootCaller)
	for _, how := range []string{"stop", "kill"} {
		if r := e.gosbx("session", how, "nosuch"); r.code != 1 || !strings.Contains(r.stderr, `no session "nosuch" is running`) {
			t.Errorf("session %s of no session: want 1 and the message\n%v", how, r)
		}
	}
	e.start("s")
	mustSucceed(t, e.gosbx("session", "stop", "s"), "session stop")
	if r := e.gosbx("session", "stop", "s"); r.code != 1 || !strings.Contains(r.stderr, `no session "s" is running`) {
		t.Errorf("a second session stop: want 1\n%v", r)
	}
}
