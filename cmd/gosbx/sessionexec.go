package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/nsinit"
)

// narrowingFlags are the flags `exec --session` takes: each only narrows what the
// session's policy allows. Any other (--rw, --ro, --net, --policy, --memory, ...) would
// widen or rebuild the boundary, which a request cannot.
var narrowingFlags = map[string]bool{"session": true, "env": true, "chdir": true, "timeout": true, "status-fd": true, "detach": true}

// execInSession is `gosbx exec --session NAME`: the request goes to the session's
// supervisor with the caller's own stdin, stdout and stderr (SCM_RIGHTS), signals are
// forwarded, and the exit status and status lines follow gosbx exec's rules. No policy
// is compiled here.
func execInSession(c *cobra.Command, name string, b *boundaryFlags, args []string, status *os.File, detach bool) error {
	var bad []string
	c.Flags().Visit(func(f *pflag.Flag) {
		if !narrowingFlags[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	fail := func(err error) error {
		emitError(status, err)
		return err
	}
	if len(bad) > 0 {
		return fail(usageError{fmt.Errorf("%v cannot be used with --session: a command in a session runs under the session's policy, which a request can only narrow (--env, --chdir, --timeout)", bad)})
	}
	if len(args) == 0 {
		return fail(usageError{fmt.Errorf("no command given (usage: gosbx exec --session NAME -- CMD [ARGS...])")})
	}
	if err := session.CheckName(name); err != nil {
		return fail(usageError{err})
	}
	timeout, err := parseTimeout(b.timeout)
	if err != nil {
		return fail(usageError{err})
	}
	dir, err := session.Dir()
	if err != nil {
		return fail(&setupFailure{step: "session", err: err})
	}
	sigc := make(chan os.Signal, 16)
	signal.Notify(sigc, forwardedSignals...)
	defer signal.Stop(sigc)
	fd, err := session.Dial(session.FilesOf(dir, name).Sock)
	if err != nil {
		return fail(&setupFailure{step: "session", err: noSession(name, err)})
	}
	defer unix.Close(fd)
	req := &session.ExecRequest{Args: args, Env: b.o.Env, Chdir: b.o.Chdir, Timeout: timeout, Status: status != nil, Detach: detach}
	if err := session.WriteFrame(fd, session.ReqExec, req.Encode(), []int{0, 1, 2}); err != nil {
		return fail(&setupFailure{step: "session", err: fmt.Errorf("send the request to session %q: %w", name, err)})
	}
	go func() {
		for s := range sigc {
			if n, ok := s.(syscall.Signal); ok {
				session.WriteFrame(fd, session.ReqSignal, session.EncodeUint(uint64(n)), nil)
			}
		}
	}()
	for {
		kind, body, _, err := session.ReadFrame(fd, 0)
		if err != nil {
			return fail(&setupFailure{step: "session", err: fmt.Errorf("session %q ended before the command's exit status came: %w", name, err)})
		}
		switch kind {
		case session.RepEvent:
			if status != nil {
				status.Write(append(body, '\n'))
			}
		case session.RepMessage:
			os.Stderr.Write(body)
		case session.RepJob:
			if id, err := session.DecodeUint(body); err == nil {
				fmt.Printf("%s/%d\n", name, id)
			}
		case session.RepExit:
			code, err := session.DecodeUint(body)
			if err != nil || code > 255 {
				code = nsinit.ExitSetup
			}
			if code != 0 {
				return statusError(int(code))
			}
			return nil
		}
	}
}
