package integration

import (
	"strings"
	"syscall"
	"testing"

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
			fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 20_000) // readable once the supervisor has exited
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
