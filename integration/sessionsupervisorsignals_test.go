package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSessionSupervisorSignals: SIGTERM, SIGINT or SIGHUP sent to a session's
// supervisor from the host ends the session in order (its sandbox stopped, nothing of
// it left) and the next client is told why. The supervisor catches them with
// internal/sigpipe (no os/signal thread: docs/decisions.md, "Memory: idle sessions");
// uncaught, each would kill it outright, its record of why missing.
func TestSessionSupervisorSignals(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
			name := strings.ToLower(unix.SignalName(sig))
			e.start(name)
			in := e.info(name)
			pfd, err := unix.PidfdOpen(in.Pid, 0)
			if err != nil {
				t.Fatalf("pidfd_open %d: %v", in.Pid, err)
			}
			must(t, syscall.Kill(in.Pid, sig))
			n, err := pollIn(pfd, 20*time.Second) // readable once the supervisor has exited
			unix.Close(pfd)
			if err != nil || n != 1 {
				t.Fatalf("the supervisor did not exit within 20 s of %v (poll %d, %v)", sig, n, err)
			}
			e.checkNothingLeft(in, "", "after "+unix.SignalName(sig)+" to the supervisor")
			r := e.gosbx("exec", "--session", name, "--", "/bin/true")
			if r.code == 0 || !strings.Contains(r.stderr, "its supervisor got "+unix.SignalName(sig)) {
				t.Errorf("exec --session after %v to the supervisor: %v; want a failure saying why the session ended", sig, r)
			}
		}
	})
}

// TestSessionInitDropsSignals: the signals a host process sends a session's init — each
// of those it catches, process-directed, and the five the Go runtime unblocks on every
// thread (SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGABRT) to each of its threads — are taken
// (none left pending) and dropped: the init lives, the session serves the next command,
// and that command starts with the default dispositions (its own SIGUSR1 kills it: 138),
// not the init's handler. The init catches them with internal/sigpipe since
// docs/decisions.md "Memory: idle sessions"; uncaught, SIGTERM alone ends it.
func TestSessionInitDropsSignals(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("sigs")
		init := e.info("sigs").InitPid
		caught := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
			syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGABRT}
		for _, sig := range caught {
			must(t, syscall.Kill(init, sig))
		}
		everyThread := []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGABRT}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", init))
		for _, task := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(task))
			for _, sig := range everyThread {
				if err := unix.Tgkill(init, tid, sig); err != nil && err != unix.ESRCH {
					t.Fatalf("tgkill %d %d %v: %v", init, tid, sig, err)
				}
			}
		}
		waitDelivered(t, init, caught)
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", init)); procState(st) == 'Z' || len(st) == 0 {
			t.Fatalf("the session's init %d died of a signal another process sent it", init)
		}
		mustSucceed(t, e.gosbx("exec", "--session", "sigs", "--", "/bin/true"), "exec --session after the signals")
		if r := e.gosbx("exec", "--session", "sigs", "--", "/bin/sh", "-c", "kill -USR1 $$; sleep 5"); r.code != 138 {
			t.Errorf("a command's own SIGUSR1: %v, want 138 (the default action)", r)
		}
		mustSucceed(t, e.gosbx("session", "stop", "sigs"), "session stop")
	})
}
