package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startAndWaitLine starts cmd and waits until its stdout prints want.
func startAndWaitLine(t *testing.T, cmd *exec.Cmd, want string, d time.Duration) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == want {
				got <- want
				break
			}
		}
		close(got)
		for sc.Scan() { // keep draining
		}
	}()
	select {
	case l, ok := <-got:
		if !ok || l != want {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the command never printed %q", want)
		}
	case <-time.After(d):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the command did not print %q within %v", want, d)
	}
}

// waitTimeout waits for cmd and returns its shell-like status, killing it after d.
func waitTimeout(t *testing.T, cmd *exec.Cmd, d time.Duration) (int, bool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitCode(err, cmd.ProcessState), true
	case <-time.After(d):
		_ = cmd.Process.Kill()
		err := <-done
		return exitCode(err, cmd.ProcessState), false
	}
}

// SIGKILL of gosbx exec takes the whole sandbox down.
func TestSigkillKillsSandbox(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		link := s.sleepLink("sigkill")
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", shellPath, "-c", `"$1" 331 </dev/null >/dev/null 2>&1 & exec "$1" 337`, "_", link)
		must(t, cmd.Start())
		if p := waitHostPIDs(link, 15*time.Second, func(n int) bool { return n >= 2 }); len(p) < 2 {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("the sandboxed sleeps never showed up on the host (saw %v)", p)
		}
		must(t, cmd.Process.Kill())
		_ = cmd.Wait()
		if left := waitHostPIDs(link, 3*time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("the sandbox survived SIGKILL of gosbx: pids %v", left)
		}
	})
}

// SIGKILL of gosbx at any moment of the setup leaves nothing behind.
func TestEarlySigkill(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		link := s.sleepLink("early")
		delays := []time.Duration{0, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond,
			20 * time.Millisecond, 35 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
			200 * time.Millisecond, 400 * time.Millisecond}
		for _, d := range delays {
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--", link, "341")
			must(t, cmd.Start())
			time.Sleep(d)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		time.Sleep(3 * time.Second) // let a leaked setup finish and exec
		if left := hostPIDs(link); len(left) > 0 {
			t.Errorf("a sandbox survived an early SIGKILL of gosbx (setup race): pids %v", left)
		}
	})
}

// Signals sent to gosbx are forwarded to the command: a shell trap exits
// with a code of its own.
func TestSignalForwarding(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		sigs := []struct {
			sig  syscall.Signal
			name string
			code int
		}{
			{syscall.SIGTERM, "TERM", 42},
			{syscall.SIGINT, "INT", 43},
			{syscall.SIGHUP, "HUP", 44},
			{syscall.SIGQUIT, "QUIT", 45},
			{syscall.SIGUSR1, "USR1", 46},
			{syscall.SIGUSR2, "USR2", 47},
			{syscall.SIGWINCH, "WINCH", 48},
		}
		for _, sg := range sigs {
			t.Run(sg.name, func(t *testing.T) {
				t.Parallel()
				s := newSandbox(t, c)
				ctx := s.limitCtx(runLimit)
				script := fmt.Sprintf(`trap "exit %d" %s; echo ready; while :; do sleep 0.1; done`, sg.code, sg.name)
				cmd := s.command(ctx, "--", shellPath, "-c", script)
				startAndWaitLine(t, cmd, "ready", 20*time.Second)
				time.Sleep(200 * time.Millisecond)
				must(t, cmd.Process.Signal(sg.sig))
				code, ok := waitTimeout(t, cmd, 15*time.Second)
				if !ok {
					t.Fatalf("SIG%s: gosbx did not exit within 15s", sg.name)
				}
				if code != sg.code {
					t.Errorf("SIG%s: exit %d, want %d (the trap's code)", sg.name, code, sg.code)
				}
			})
		}
	})
}

// A signal the command does not handle kills it, and gosbx reports 128+S.
func TestForwardedSignalDefault(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", python, "-c", `import time; print("ready", flush=True); time.sleep(60)`)
		startAndWaitLine(t, cmd, "ready", 20*time.Second)
		must(t, cmd.Process.Signal(syscall.SIGTERM))
		code, ok := waitTimeout(t, cmd, 15*time.Second)
		if !ok || code != 143 {
			t.Errorf("SIGTERM to gosbx with an unhandled command: exit %d (finished %v), want 143", code, ok)
		}
	})
}

// A program that links nsinit and asks os/signal for SIGUSR1, SIGUSR2 and SIGWINCH in a
// package init (testdata/notifyinit): the init stage, which is that program again, still
// forwards each to the command (review8 F3: they went to the program's channel in the
// init instead, since os/signal unblocked them on its own thread).
func TestSignalsForwardedWithNotifyInInit(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (the library program runs as the test's user)")
	}
	s := newSandbox(t, rootCaller)
	bin := buildTestdata(t, s, "notifyinit")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prog := `
import signal, sys, time
got = []
for s in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
    signal.signal(s, lambda n, f: got.append(n))
print("READY", flush=True)
end = time.time() + 10
while len(got) < 3 and time.time() < end:
    time.sleep(0.02)
print("GOT", sorted(set(got)), flush=True)
`
	run := exec.CommandContext(ctx, bin, s.ws, python, "-c", prog)
	out, err := run.CombinedOutput()
	want := fmt.Sprintf("GOT [%d, %d, %d]", syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	if err != nil || !strings.Contains(string(out), want) {
		t.Errorf("signals to a sandbox of a program that notifies them in its init: %v\n%s\nwant %q", err, out, want)
	}
}
