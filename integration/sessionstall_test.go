package integration

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// stopperProg SIGSTOPs every process created in the sandbox's pid namespace after it
// started (kill(2) on the next pid, spinning) and keeps stopped each one whose comm,
// once it is stopped, is argv[1] (the session init's: its clone before execve still has
// it); it continues the others. Each pid it keeps stopped is appended to argv[2].
const stopperProg = `
import os, signal, sys
comm, out = sys.argv[1], sys.argv[2]
def last():
    with open('/proc/sys/kernel/ns_last_pid') as f:
        return int(f.read())
def state(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return ''
def name(pid):
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return ''
nxt = last() + 1
open(out + '.ready', 'w').close()
spins = 0
while True:
    try:
        os.kill(nxt, signal.SIGSTOP)
    except ProcessLookupError:
        spins += 1
        if spins % 1000 == 0 and last() >= nxt:
            try:
                os.kill(nxt, 0)
            except ProcessLookupError:
                nxt += 1 # came and went
        continue
    # the stop takes effect on its way back to user mode: after an execve in progress
    while state(nxt) not in ('T', 'Z', 'X', ''):
        pass
    if name(nxt) == comm:
        with open(out, 'a') as f:
            f.write('%d\n' % nxt)
    else:
        try:
            os.kill(nxt, signal.SIGCONT)
        except ProcessLookupError:
            pass
    nxt += 1
`

// bgRun is a gosbx client running in the background.
type bgRun struct {
	cmd      *exec.Cmd
	out, err lockedBuf
	done     chan struct{}
	code     int
	elapsed  time.Duration
}

// bg starts gosbx with args as the caller (the runtime directory set), stdin from
// stdin (empty when nil); it is killed after runLimit.
func (e *sessionEnv) bg(stdin io.Reader, args ...string) *bgRun {
	e.t.Helper()
	ctx := e.limitCtx(runLimit)
	b := &bgRun{cmd: e.rawCommand(ctx, args...), done: make(chan struct{})}
	b.cmd.Env = append(b.cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	e.scope.wrap(b.cmd)
	if stdin == nil {
		stdin = bytes.NewReader(nil)
	}
	b.cmd.Stdin, b.cmd.Stdout, b.cmd.Stderr = stdin, &b.out, &b.err
	start := time.Now()
	if err := b.cmd.Start(); err != nil {
		e.t.Fatalf("start %q: %v", b.cmd.Args, err)
	}
	go func() {
		err := b.cmd.Wait()
		b.elapsed = time.Since(start)
		b.code = exitCode(err, b.cmd.ProcessState)
		close(b.done)
	}()
	e.t.Cleanup(func() { b.cmd.Process.Kill(); <-b.done })
	return b
}

// within reports whether b ended within d.
func (b *bgRun) within(d time.Duration) bool {
	select {
	case <-b.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (b *bgRun) String() string {
	return strings.Join(b.cmd.Args, " ") + "\nstdout: " + clip(b.out.String()) + "\nstderr: " + clip(b.err.String())
}

// waitFile waits until path holds more than n lines (or exists, n < 0), for at most d.
func waitFile(path string, n int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil && (n < 0 || strings.Count(string(b), "\n") > n) {
			return true
		}
	}
	return false
}

// TestSessionStalledStart (attack review 22 F1): a job SIGSTOPs every new process of
// the sandbox that is still the init's clone before its execve. A command started then
// fails within the exec deadline (2 s) with 125, saying it never reached execve; an
// already running command's exit is reported at once, a job listing answers, and
// `session stop` ends the session (and a client whose start is stalled) meanwhile. On
// main the init waited for the stopped clone (CLONE_VFORK) under the lock its reaper
// needs: the `true` and the other command's exit report hung until the session ended.
func TestSessionStalledStart(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("st")
		in := e.info("st")
		comm, err := os.ReadFile("/proc/" + strconv.Itoa(in.InitPid) + "/comm")
		if err != nil {
			t.Fatal(err)
		}
		// a command that runs until the test closes its stdin, then exits 7
		pr, pw := io.Pipe()
		defer pw.Close()
		a := e.bg(pr, "exec", "--session", "st", "--", shellPath, "-c", "echo up; read x; exit 7")
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(a.out.String(), "up"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the long command never started\n%v", a)
			}
		}
		caught := filepath.Join(e.ws, "caught")
		mustSucceed(t, e.gosbx("exec", "--session", "st", "--detach", "--", python, "-c", stopperProg,
			strings.TrimSpace(string(comm)), caught), "the stopper job")
		if !waitFile(caught+".ready", -1, 10*time.Second) {
			t.Fatal("the stopper never started")
		}
		// a start the stopper catches (it misses one when the clone executes before the
		// stopper's kill(2) reaches it, on a busy host: then the command just runs)
		catch := func(what string) *bgRun {
			t.Helper()
			for i := 0; i < 50; i++ {
				n := strings.Count(readFile(caught), "\n")
				b := e.bg(nil, "exec", "--session", "st", "--", "true")
				for deadline := time.Now().Add(5 * time.Second); ; {
					if strings.Count(readFile(caught), "\n") > n {
						return b
					}
					if b.within(5 * time.Millisecond) {
						if b.code != 0 {
							t.Fatalf("%s: an uncaught start failed\n%v", what, b)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: a start neither caught nor ended in 5 s\n%v", what, b)
					}
				}
			}
			t.Fatalf("%s: the stopper caught none of 50 starts", what)
			return nil
		}
		b := catch("the first start")
		// while that start is stalled: the running command's exit and a job listing
		pw.Close()
		if !a.within(1500 * time.Millisecond) {
			t.Errorf("a running command's exit was not reported within 1.5 s while another start was stalled")
		} else if a.code != 7 {
			t.Errorf("the running command: want its 7\n%v", a)
		}
		ls := e.bg(nil, "job", "ls", "st")
		if !ls.within(1500*time.Millisecond) || ls.code != 0 {
			t.Errorf("job ls did not answer within 1.5 s while a start was stalled\n%v", ls)
		}
		if !b.within(3 * time.Second) {
			t.Errorf("a stalled start's client still runs 3 s after its start was caught\n%v", b)
		} else if b.code != 125 || !strings.Contains(b.err.String(), "did not reach execve") {
			t.Errorf("a stalled start: want 125 saying it never reached execve, got %d in %v\n%v", b.code, b.elapsed, b)
		}
		// session stop while another start is stalled
		cl := catch("the start before the stop")
		stop := e.bg(nil, "session", "stop", "st")
		if !stop.within(10 * time.Second) {
			t.Errorf("session stop did not end within 10 s while a start was stalled\n%v", stop)
		} else if stop.code != 0 {
			t.Errorf("session stop\n%v", stop)
		}
		if !cl.within(5 * time.Second) {
			t.Errorf("a stalled start's client outlived its session's stop by 5 s\n%v", cl)
		} else if cl.code == 0 {
			t.Errorf("a stalled start's client says its command ran (0)\n%v", cl)
		}
		e.checkNothingLeft(in, "", "after stopping a session with a stalled start")
	})
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestSessionOOMScore: a session's command starts with oom_score_adj 1000 and the init
// keeps its own value, also with another command running. A session's command's child
// shares the init's memory without CLONE_VFORK until its execve, so a write of the
// init's value back while it did was copied to it (__set_oom_adj): it started at the
// init's value.
func TestSessionOOMScore(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("o")
		in := e.info("o")
		initScore := func() string {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(in.InitPid) + "/oom_score_adj")
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(b))
		}
		before := initScore()
		pr, pw := io.Pipe()
		defer pw.Close()
		a := e.bg(pr, "exec", "--session", "o", "--", shellPath, "-c", "cat /proc/self/oom_score_adj; read x; exit 0")
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(a.out.String(), "\n"); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the first command never printed\n%v", a)
			}
		}
		for i := 0; i < 3; i++ {
			r := e.gosbx("exec", "--session", "o", "--", "cat", "/proc/self/oom_score_adj")
			if r.code != 0 || r.stdout != "1000\n" {
				t.Errorf("a session's command: want oom_score_adj 1000\n%v", r)
			}
			if got := initScore(); got != before {
				t.Errorf("the session's init: oom_score_adj %s after a command's start, was %s", got, before)
			}
		}
		pw.Close()
		if !a.within(10*time.Second) || a.code != 0 || a.out.String() != "1000\n" {
			t.Errorf("the first command: want oom_score_adj 1000\n%v", a)
		}
	})
}
