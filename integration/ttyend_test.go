package integration

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// markWriter keeps what is written and closes seen once it holds mark.
type markWriter struct {
	mu   sync.Mutex
	b    bytes.Buffer
	mark string
	seen chan struct{}
}

func (w *markWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if w.seen != nil && strings.Contains(w.b.String(), w.mark) {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

func (w *markWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestSessionTTYEndOfInput: with --tty and a stdin that is not a terminal (the trial's
// `gosbx exec --session S --tty -- bash </dev/null` ran until killed), the end of
// stdin is the end of input on the sandbox's terminal: cat ends 0, an interactive bash
// exits at it (0), a last line without a newline still runs (its exit status comes
// back), `session attach` ends. Each is timed out at 20 s: without the change they
// hang.
func TestSessionTTYEndOfInput(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("eof")
		run := func(what, stdin string, args ...string) (int, string) {
			t.Helper()
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, args...)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			cmd.Stdin = strings.NewReader(stdin)
			var out markWriter
			cmd.Stdout, cmd.Stderr = &out, &out
			must(t, cmd.Start())
			code, ok := waitTimeout(t, cmd, 20*time.Second)
			if !ok {
				t.Errorf("%s: still running after 20 s (killed)\n%q", what, out.String())
			}
			return code, out.String()
		}
		if code, out := run("cat </dev/null", "", "exec", "--session", "eof", "--tty", "--", "cat"); code != 0 {
			t.Errorf("--tty cat with an empty stdin: exit %d, want 0\n%q", code, out)
		}
		if code, out := run("cat of a partial line", "abc", "exec", "--session", "eof", "--tty", "--", "cat"); code != 0 || !strings.Contains(out, "abc") {
			t.Errorf("--tty cat of \"abc\": exit %d, want 0 and abc echoed back\n%q", code, out)
		}
		if code, out := run("bash </dev/null", "", "exec", "--session", "eof", "--tty", "--", "bash"); code != 0 {
			t.Errorf("--tty bash with an empty stdin: exit %d, want 0 (exit at end of input)\n%q", code, out)
		}
		if code, out := run("bash script", "echo in-$((6*7))\nexit 5", "exec", "--session", "eof", "--tty", "--", "bash"); code != 5 || !strings.Contains(out, "in-42") {
			t.Errorf("--tty bash of a script whose last line has no newline: exit %d, want 5 and in-42\n%q", code, out)
		}
		if code, out := run("session attach </dev/null", "", "session", "attach", "eof"); code != 0 {
			t.Errorf("session attach with an empty stdin: exit %d, want 0\n%q", code, out)
		}
	})
}

// ignoring is a command that ignores the hangup and reads nothing; its $0 (ignMark and
// the signal) names it in /proc.
const ignoring, ignMark = `trap "" HUP TERM INT; echo ready-$((40+2)); while :; do sleep 1; done`, "gosbx-it-ignores-hup-"

// waitGone waits up to d for no process on the host to have mark in its command line;
// it returns one that still has, or 0.
func waitGone(mark string, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		pid := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(mark)) {
					pid = n
				}
			}
		}
		if pid == 0 || time.Now().After(deadline) {
			return pid
		}
		time.Sleep(100 * time.Millisecond) // polling /proc: a process's end has no event to wait on from here
	}
}

// TestSessionTTYHangup: a SIGTERM or SIGHUP to a --tty client whose stdin never ends
// (the trial's `timeout 10` did not end it: an interactive bash ignores SIGTERM) is
// forwarded, then the sandbox's terminal is hung up as a closed terminal emulator's:
// bash ends by SIGHUP (129), a shell ignoring SIGTERM and SIGHUP goes on once its cat
// reading the terminal ends (the read sees the hangup), and the client returns within 20 s.
func TestSessionTTYHangup(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("hup")
		for _, tc := range []struct {
			sig  syscall.Signal
			args []string
			want func(int) bool
		}{
			{syscall.SIGTERM, []string{"bash"}, func(c int) bool { return c == 129 }},
			{syscall.SIGHUP, []string{"bash"}, func(c int) bool { return c == 129 }},
			{syscall.SIGTERM, []string{"sh", "-c", `trap "" TERM HUP; echo ready-$((40+2)); cat; exit 7`}, func(c int) bool { return c == 7 }},
			// ignoring the hangup too, reading nothing (attack review 16 F2): the client
			// gives up after its grace, 128+signal, and the command is killed
			{syscall.SIGTERM, []string{"sh", "-c", ignoring, ignMark + "TERM-" + c.name}, func(c int) bool { return c == 143 }},
			{syscall.SIGHUP, []string{"sh", "-c", ignoring, ignMark + "HUP-" + c.name}, func(c int) bool { return c == 129 }},
		} {
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, append([]string{"exec", "--session", "hup", "--tty", "--"}, tc.args...)...)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			in, err := cmd.StdinPipe() // held open: stdin never ends
			must(t, err)
			out := &markWriter{mark: "ready-42", seen: make(chan struct{})}
			cmd.Stdout, cmd.Stderr = out, out
			must(t, cmd.Start())
			// the terminal echoes what is typed; ready-42 computed says the shell runs
			in.Write([]byte("echo ready-$((40+2))\n"))
			select {
			case <-out.seen:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%v: the command never answered\n%q", tc.args, out.String())
			}
			must(t, cmd.Process.Signal(tc.sig))
			code, ok := waitTimeout(t, cmd, 20*time.Second)
			in.Close()
			if !ok || !tc.want(code) {
				t.Errorf("%v, %v to the client: exit %d (ended by itself: %v), want the terminal hung up\n%q", tc.args, tc.sig, code, ok, out.String())
			}
			if m := tc.args[len(tc.args)-1]; strings.HasPrefix(m, ignMark) {
				if pid := waitGone(m, 10*time.Second); pid != 0 {
					t.Errorf("%v: the command (pid %d on the host) still runs 10 s after its client ended", tc.sig, pid)
				}
			}
		}
	})
}
