package integration

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Stopped commands and job control (review13 F1, F8; docs/decisions.md, "Stopped
// commands and job control").

// underTimeout makes cmd run under timeout(1) with a limit of secs seconds: timeout
// sends SIGTERM, then SIGCONT, to its child's process group.
func underTimeout(cmd *exec.Cmd, secs string) {
	cmd.Args = append([]string{"timeout", secs, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/usr/bin/timeout"
}

// pidState is the state letter of /proc/PID/stat ("" when gone).
func pidState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	_, rest, ok := bytes.Cut(b, []byte(") "))
	if !ok || len(rest) == 0 {
		return ""
	}
	return string(rest[:1])
}

// waitState waits up to d for pid's state to be want; it returns the last seen.
func waitState(pid int, want string, d time.Duration) string {
	end := time.Now().Add(d)
	for {
		st := pidState(pid)
		if st == want || time.Now().After(end) {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parentPid is PPid of /proc/PID/status (0 when gone).
func parentPid(pid int) int {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// TestSignalStoppedCommand: a command that stopped itself still ends when gosbx is
// sent SIGTERM then SIGCONT (timeout(1)): the init forwards SIGCONT and follows every
// forwarded signal with SIGCONT, as timeout(1) does. Before, gosbx waited for good (the
// command stopped with SIGTERM pending). One-shot (root: the Go init; nobody: the raw
// init) and `exec --session`.
func TestSignalStoppedCommand(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		t.Run("one-shot", func(t *testing.T) {
			s := newSandbox(t, c)
			ctx := s.limitCtx(30 * time.Second)
			cmd := s.command(ctx, "--", shellPath, "-c", `kill -STOP $$; echo continued`)
			underTimeout(cmd, "2")
			r := s.runCmd(ctx, cmd)
			if r.code != 124 || r.elapsed > 15*time.Second {
				t.Errorf("timeout 2 gosbx exec of a command that stops itself: want 124 within 15 s, took %v\n%v", r.elapsed, r)
			}
		})
		t.Run("session", func(t *testing.T) {
			e := newSessionEnv(t, c)
			e.start("st")
			ctx := e.limitCtx(30 * time.Second)
			cmd := e.rawCommand(ctx, "exec", "--session", "st", "--", shellPath, "-c", `kill -STOP $$; echo continued`)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			e.scope.wrap(cmd)
			underTimeout(cmd, "2")
			r := e.runCmd(ctx, cmd)
			if r.code != 124 || r.elapsed > 15*time.Second {
				t.Errorf("timeout 2 gosbx exec --session of a command that stops itself: want 124 within 15 s, took %v\n%v", r.elapsed, r)
			}
			// a job stopped (job kill --signal STOP), then sent SIGTERM: it ends
			link := e.sleepLink("stopjob")
			mustSucceed(t, e.gosbx("exec", "--session", "st", "--detach", "--", link, "1000"), "a job")
			p := waitHostPIDs(link, 10*time.Second, func(n int) bool { return n == 1 })
			if len(p) != 1 {
				t.Fatalf("the job's sleep on the host: %v", p)
			}
			mustSucceed(t, e.gosbx("job", "kill", "--signal", "STOP", "st/1"), "job kill STOP")
			if st := waitState(p[0], "T", 5*time.Second); st != "T" {
				t.Fatalf("the job's sleep is in state %q after SIGSTOP, want T", st)
			}
			mustSucceed(t, e.gosbx("job", "kill", "st/1"), "job kill TERM")
			if r := e.gosbx("job", "wait", "st/1"); r.code != 143 {
				t.Errorf("job wait after SIGTERM to a stopped job: want 143\n%v", r)
			}
		})
	})
}

// ptyOutput collects what is written to a pty's master.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits up to d for s in the output.
func (o *ptyOutput) waitFor(s string, d time.Duration) bool {
	end := time.Now().Add(d)
	for !strings.Contains(o.String(), s) {
		if time.Now().After(end) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// TestSignalCtrlZ: Ctrl-Z typed on the caller's terminal (gosbx in its foreground
// process group) stops every process of the sandbox, not gosbx alone: a line typed
// while gosbx is stopped (meant for the caller's shell) stays in the terminal's queue,
// no sandboxed process reads it (the test does); SIGCONT (fg) continues them, and input
// reaches the command again. Before, the command ran on while gosbx was stopped and
// read the line (review13 F8). One-shot and `exec --session`.
func TestSignalCtrlZ(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"one-shot", "session"} {
			t.Run(mode, func(t *testing.T) {
				var cmd *exec.Cmd
				var s *sandbox
				script := `"$0" 1000 & echo ready; while read l; do echo "GOT:$l"; done`
				if mode == "session" {
					e := newSessionEnv(t, c)
					e.start("z")
					s = e.sandbox
					cmd = e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "z", "--", shellPath, "-c", script, s.sleepLinkPath("ctrlz"))
					cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
					e.scope.wrap(cmd)
				} else {
					s = newSandbox(t, c)
					cmd = s.command(s.limitCtx(runLimit), "--", shellPath, "-c", script, s.sleepLinkPath("ctrlz"))
				}
				link := s.sleepLinkPath("ctrlz")
				ctrlZ(t, cmd, link)
			})
		}
	})
}

// sleepLinkPath is sleepLink's path, made on the first call.
func (s *sandbox) sleepLinkPath(name string) string {
	p := s.ws + "/gosbx-it-sleep-" + name + "-" + s.id
	if _, err := os.Lstat(p); err != nil {
		return s.sleepLink(name)
	}
	return p
}

// ctrlZ runs cmd (a sandboxed `while read` loop with a background sleep through link)
// as a foreground job of bash with job control (set -m) on a new pty, bash's
// controlling terminal, as a user's interactive shell runs it, and checks what Ctrl-Z
// does: bash takes the terminal back once gosbx is stopped and reads the next line
// itself, then continues the job (fg).
func ctrlZ(t *testing.T, cmd *exec.Cmd, link string) {
	m, sl := openPty(t)
	outer := `set -m; "$@"; echo SHELL-AFTER; read l; echo "SHELL-GOT:$l"; fg; echo "FG-STATUS:$?"`
	cmd.Args = append([]string{"bash", "-c", outer, "bash", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/bash"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	finished := false
	defer func() {
		if !finished {
			killHostPIDs(link)
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	out := &ptyOutput{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			if n > 0 {
				out.mu.Lock()
				out.buf.Write(b[:n])
				out.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	if !out.waitFor("ready", 30*time.Second) {
		t.Fatalf("the command never said ready: %q", out.String())
	}
	m.Write([]byte("first\n"))
	if !out.waitFor("GOT:first", 10*time.Second) {
		t.Fatalf("the command did not read the first line: %q", out.String())
	}
	p := waitHostPIDs(link, 10*time.Second, func(n int) bool { return n == 1 })
	if len(p) != 1 {
		t.Fatalf("the background sleep on the host: %v", p)
	}
	sleepPid := p[0]
	shPid := parentPid(sleepPid) // the command, the sandbox's sh
	m.Write([]byte{0x1a})        // Ctrl-Z: SIGTSTP to the terminal's foreground group (gosbx's)
	if !out.waitFor("SHELL-AFTER", 10*time.Second) {
		t.Fatalf("bash did not see gosbx stop within 10 s of Ctrl-Z; output %q", out.String())
	}
	for what, q := range map[string]int{"the command (sh)": shPid, "its background sleep": sleepPid} {
		if st := waitState(q, "T", 5*time.Second); st != "T" {
			t.Errorf("%s (host pid %d) is in state %q while gosbx is stopped, want T (stopped)", what, q, st)
		}
	}
	// a line typed now is the shell's: no sandboxed process may take it
	m.Write([]byte("second\n"))
	if !out.waitFor("SHELL-GOT:second", 5*time.Second) {
		t.Errorf("the line typed at the shell while gosbx was stopped did not reach the shell; output %q", out.String())
	}
	// fg continues gosbx, which continues the sandbox
	if st := waitState(sleepPid, "S", 10*time.Second); st != "S" {
		t.Errorf("the background sleep is in state %q after fg, want S", st)
	}
	m.Write([]byte("third\n"))
	if !out.waitFor("GOT:third", 10*time.Second) {
		t.Errorf("the command did not read a line after fg: %q", out.String())
	}
	if strings.Contains(out.String(), "GOT:second") && !strings.Contains(out.String(), "SHELL-GOT:second") {
		t.Errorf("the sandbox read the line typed at the shell: %q", out.String())
	}
	m.Write([]byte{0x04}) // end of input: the loop ends
	if !out.waitFor("FG-STATUS:0", 20*time.Second) {
		t.Errorf("gosbx after the input's end: want exit 0; output %q", out.String())
	}
	waitTimeout(t, cmd, 10*time.Second)
	finished = true
}
