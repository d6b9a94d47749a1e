package integration

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// TestSessionSignalForwarding: a signal sent to a `gosbx exec --session` client reaches
// the command, whose shell trap exits with a code of its own; unforwarded, the client
// would die of it (128+S or a signal status) and the supervisor would SIGKILL the
// command. The client catches them through internal/sigpipe (as gosbx exec does), set
// up before the request is sent: the command's "ready" is a sign they are caught.
func TestSessionSignalForwarding(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("sig")
		for _, sg := range []struct {
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
			{syscall.SIGALRM, "ALRM", 49},
		} {
			ctx := e.limitCtx(runLimit)
			script := fmt.Sprintf(`trap "exit %d" %s; echo ready; while :; do sleep 0.1; done`, sg.code, sg.name)
			cmd := e.rawCommand(ctx, "exec", "--session", "sig", "--", shellPath, "-c", script)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			e.scope.wrap(cmd)
			startAndWaitLine(t, cmd, "ready", 20*time.Second)
			must(t, cmd.Process.Signal(sg.sig))
			code, ok := waitTimeout(t, cmd, 15*time.Second)
			if !ok {
				t.Fatalf("SIG%s: gosbx exec --session did not exit within 15s", sg.name)
			}
			if code != sg.code {
				t.Errorf("SIG%s: exit %d, want %d (the trap's code)", sg.name, code, sg.code)
			}
		}
	})
}
