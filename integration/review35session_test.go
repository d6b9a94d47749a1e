package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ptySession runs `gosbx exec --session name -- args...` as the caller from an
// interactive shell's terminal (a pty, the client's stdin, stdout and stderr), inside
// `sh -c outer sh GOSBX ARGS...`; it returns the terminal's output so far.
func ptySession(t *testing.T, e *sessionEnv, outer string, args ...string) *ptyOutput {
	t.Helper()
	m, sl := openPty(t)
	cmd := e.rawCommand(e.limitCtx(runLimit), args...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	e.scope.wrap(cmd)
	cmd.Args = append([]string{"sh", "-c", outer, "sh", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	sl.Close()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	out := &ptyOutput{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			out.mu.Lock()
			out.buf.Write(b[:n])
			out.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return out
}

// TestSessionLeftoverWritesOn: a server a session command leaves running (`… &`),
// started from a terminal, lives on past the client and writes on: its writes to the
// relay's pipe are drained by the supervisor once the client has gone (no SIGPIPE), and
// none of them reaches the caller's terminal after the client returned (attack review 35
// F7: before, the first write after the client left killed it by SIGPIPE).
func TestSessionLeftoverWritesOn(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r35")
		count := filepath.Join(e.ws, "count")
		loop := `(sleep 1; i=0; while :; do echo out-$i; echo err-$i >&2; i=$((i+1)); echo $i > count; sleep 0.2; done) &`
		out := ptySession(t, e, `"$@"; echo CLIENT_RC=$?; sleep 30`, "exec", "--session", "r35", "--", shellPath, "-c", loop)
		if !out.waitFor("CLIENT_RC=", 30*time.Second) {
			t.Fatalf("the client did not return: %q", out.String())
		}
		if !strings.Contains(out.String(), "CLIENT_RC=0") {
			t.Fatalf("want exit 0: %q", out.String())
		}
		returned := time.Now()
		read := func() int {
			b, _ := os.ReadFile(count)
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return n
		}
		time.Sleep(time.Until(returned.Add(3 * time.Second)))
		n1 := read()
		time.Sleep(time.Second)
		n2 := read()
		if n1 < 3 || n2 <= n1 {
			t.Errorf("the leftover loop did not live on past its client (its count %d at 3 s after the client returned, %d 1 s later): killed at its first write", n1, n2)
		}
		if got := out.String(); strings.Contains(got, "out-") || strings.Contains(got, "err-") {
			t.Errorf("the leftover's output reached the caller's terminal after the client returned: %q", got)
		}
	})
}

// TestSessionStdoutStderrOneTerminal: stdout and stderr on one terminal through two
// paths (the shell's pty, and /dev/tty: `2>/dev/tty`) share one relay pipe, so the
// command's interleaved lines reach the terminal in the order written (attack review
// 35 F2: before, two pipes copied by two goroutines reordered them). Five runs: the
// reordering was seen in two runs of three.
func TestSessionStdoutStderrOneTerminal(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r35o")
		script := `for i in 1 2 3 4 5 6; do echo out$i; echo err$i >&2; done`
		outer := `for n in 1 2 3 4 5; do echo "BEGIN-$n"; "$@" 2>/dev/tty; echo "END-$n rc=$?"; done; echo ALL-DONE; sleep 30`
		out := ptySession(t, e, outer, "exec", "--session", "r35o", "--", shellPath, "-c", script)
		if !out.waitFor("ALL-DONE", 60*time.Second) {
			t.Fatalf("the five runs did not end: %q", out.String())
		}
		got := strings.ReplaceAll(out.String(), "\r", "")
		want := "out1\nerr1\nout2\nerr2\nout3\nerr3\nout4\nerr4\nout5\nerr5\nout6\nerr6\n"
		for n := 1; n <= 5; n++ {
			b, a := "BEGIN-"+strconv.Itoa(n)+"\n", "END-"+strconv.Itoa(n)+" rc=0\n"
			i, j := strings.Index(got, b), strings.Index(got, a)
			if i < 0 || j < i {
				t.Errorf("run %d: no output between %q and %q: %q", n, b, a, got)
				continue
			}
			if run := got[i+len(b) : j]; run != want {
				t.Errorf("run %d: the command's lines reached the terminal as %q, want in the order written %q", n, run, want)
			}
		}
	})
}
