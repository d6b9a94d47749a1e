package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/internal/sigpipe"
	"github.com/gosbx/gosbx/nsinit"
)

// narrowingFlags are the flags `exec --session` takes: each only narrows what the
// session's policy allows. Any other (--rw, --ro, --net, --policy, --memory, ...) would
// widen or rebuild the boundary, which a request cannot.
var narrowingFlags = map[string]bool{"session": true, "env": true, "chdir": true, "timeout": true, "status-fd": true, "detach": true, "tty": true}

// execInSession is `gosbx exec --session NAME`: the request goes to the session's
// supervisor with the caller's own stdin, stdout and stderr (SCM_RIGHTS), signals are
// forwarded, and the exit status and status lines follow gosbx exec's rules. No policy
// is compiled here.
func execInSession(c *cobra.Command, name string, b *boundaryFlags, args []string, status *os.File, detach, tty bool) error {
	var bad []string
	c.Flags().Visit(func(f *pflag.Flag) {
		if !narrowingFlags[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	r := sessionExec{name: name, env: b.o.Env, chdir: b.o.Chdir, timeout: b.timeout, detach: detach, tty: tty}
	return r.run(bad, args, status)
}

// sessionExec is what `exec --session` asks: the session's name and the narrowing
// flags' values.
type sessionExec struct {
	name, chdir, timeout string
	env                  []string
	detach, tty          bool
}

// run sends the request; bad are the flags given that a request cannot carry.
func (r *sessionExec) run(bad, args []string, status *os.File) error {
	name, detach, tty := r.name, r.detach, r.tty
	fail := func(err error) error {
		emitError(status, err)
		return err
	}
	if len(bad) > 0 {
		return fail(usageError{fmt.Errorf("%s cannot be used with --session: a command in a session runs under the session's policy, which a request can only narrow (--env, --chdir, --timeout, --status-fd; and --detach or --tty)", strings.Join(bad, ", "))})
	}
	if detach && tty {
		return fail(usageError{fmt.Errorf("--detach and --tty cannot be used together")})
	}
	if len(args) == 0 {
		return fail(usageError{fmt.Errorf("no command given (usage: gosbx exec --session NAME -- CMD [ARGS...])")})
	}
	if err := session.CheckName(name); err != nil {
		return fail(usageError{err})
	}
	timeout, err := parseTimeout(r.timeout)
	if err != nil {
		return fail(usageError{err})
	}
	dir, err := session.Dir()
	if err != nil {
		return fail(&setupFailure{step: "session", err: err})
	}
	// The forwarded signals are caught before the request is sent, as gosbx exec
	// catches them: a handler writes each to a pipe read in the runtime's poller
	// (internal/sigpipe), not os/signal, whose locked thread, thread parked in
	// signal_recv and handshake per signal cost this client ~0.3 ms of CPU and three
	// threads (docs/decisions.md, "Speed, eighth attempt: the session path"). Never
	// undone: gosbx exits once this returns.
	caught := make([]unix.Signal, 0, len(forwardedSignals))
	for _, s := range forwardedSignals {
		if tty && (s == unix.SIGTTIN || s == unix.SIGTTOU) {
			// Not SIGTTIN and SIGTTOU: their default stops this process when it sets
			// its terminal's mode from the background (makeRaw after bg), as any
			// terminal program is; caught, the kernel would send them again at each
			// retry. The command cannot read this terminal meanwhile: only this process
			// relays it.
			continue
		}
		caught = append(caught, s.(unix.Signal))
	}
	sigf, err := sigpipe.Catch(caught...)
	if err != nil {
		return fail(&setupFailure{step: "signals", err: err})
	}
	sigc := make(chan os.Signal, 16)
	go readSignals(sigf, sigc)
	fd, err := session.Dial(session.FilesOf(dir, name).Sock)
	if err != nil {
		return fail(&setupFailure{step: "session", err: noSession(dir, name, err)})
	}
	defer unix.Close(fd)
	req := &session.ExecRequest{Args: args, Env: r.env, Chdir: r.chdir, Timeout: timeout, Status: status != nil, Detach: detach, TTY: tty}
	// gosbx exec's defaults: the working directory is the caller's when it lies in the
	// workspace (the supervisor decides), the umask the caller's; read at once (the
	// umask has no call that only reads it, and nothing here creates a file meanwhile)
	req.Cwd, _ = os.Getwd()
	old := unix.Umask(0o022)
	unix.Umask(old)
	req.HasUmask, req.Umask = true, uint32(old)
	if ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ); tty && err == nil {
		req.Rows, req.Cols = ws.Row, ws.Col
	}
	var termP atomic.Pointer[terminal]   // set once the terminal's master came
	var hangup atomic.Bool               // a SIGTERM or SIGHUP came: hang the terminal up
	var gaveUp atomic.Int32              // the signal after whose hangup grace this client stopped waiting
	var grace atomic.Pointer[time.Timer] // the hangup's grace, stopped before fd is closed
	defer func() {
		if t := grace.Load(); t != nil {
			t.Stop()
		}
	}()
	var saved *unix.Termios // the terminal's settings before makeRaw (--tty)
	if tty {
		// Raw before the command can start: a key typed early (Ctrl-C) must reach its
		// terminal, not signal this process.
		saved = makeRaw()
		defer restoreTerminal(saved)
		// SIGPIPE (stdout's reader gone: `gosbx exec --tty … | head -1`) would end this
		// process by the runtime's default before the terminal is given back: ignored,
		// the write fails with EPIPE, the relay hangs the command's terminal up and the
		// client exits 128+SIGPIPE with the terminal restored (attack review 37 F4)
		signal.Ignore(unix.SIGPIPE)
	}
	stdio := []int{0, 1, 2}
	var relay *stdioRelay
	if !tty && !detach {
		// the caller's terminal is relayed, never sent (stdiorelay.go); a detached
		// command gets none of the caller's descriptors, a --tty one its own terminal
		if relay, err = newStdioRelay(); err != nil {
			if he := (*nsinit.HandedFileError)(nil); errors.As(err, &he) {
				return fail(&setupFailure{step: "stdio", err: err})
			}
			return fail(&setupFailure{step: "session", err: fmt.Errorf("relay the caller's terminal to session %q: %w", name, err)})
		}
		defer relay.flush(true)
		if relay != nil {
			stdio = relay.send[:]
		}
	}
	if status != nil {
		req.StatusFd = int(status.Fd())
		stdio = append(stdio, req.StatusFd)
	}
	if d := relay.drains(); len(d) > 0 {
		// the supervisor drains the output pipes once this client is gone
		req.Drains = len(d)
		stdio = append(stdio, d...)
	}
	err = session.WriteFrame(fd, session.ReqExec, req.Encode(), stdio)
	relay.sent()
	if err != nil {
		return fail(&setupFailure{step: "session", err: fmt.Errorf("send the request to session %q: %w", name, err)})
	}
	go func() {
		for s := range sigc {
			if t := termP.Load(); s == unix.SIGWINCH && t != nil {
				t.resize()
				continue
			}
			n, ok := s.(syscall.Signal)
			if !ok {
				continue
			}
			if isJobStop(s) && tty {
				// The command's terminal is the session's pty: Ctrl-Z typed reaches it
				// there (this terminal is raw), and this stop came from elsewhere (kill).
				// The command's process group is stopped all the same, and this
				// terminal given back as it was while gosbx is stopped.
				session.WriteFrame(fd, session.ReqSignal, session.EncodeUint(uint64(n)), nil)
				restoreTerminal(saved)
				stopSelf()
				makeRaw()
				continue
			}
			session.WriteFrame(fd, session.ReqSignal, session.EncodeUint(uint64(n)), nil)
			if tty && (s == unix.SIGTERM || s == unix.SIGHUP) {
				// the caller's terminal (or whoever runs this client) is going: the
				// command's terminal is hung up as a closed terminal emulator's is, so
				// an interactive shell, which ignores SIGTERM, ends too
				if !hangup.Swap(true) {
					// a command ignoring the hangup too (trap "" HUP TERM) would keep
					// this client, and the caller's terminal raw, until SIGKILL: after
					// a grace for its exit, stop waiting; the supervisor kills the
					// command's process group when its client goes
					grace.Store(time.AfterFunc(hangupGrace, func() {
						gaveUp.Store(int32(n))
						unix.Shutdown(fd, unix.SHUT_RDWR)
					}))
				}
				termP.Load().hangup()
			}
			if isJobStop(s) {
				stopSelf() // the command's process group was stopped first
			}
		}
	}()
	// the supervisor handed the command to the session (dispatchEvent) or said it was
	// executed (its exec event): from then on it may have run
	started := false
	for {
		kind, body, fds, err := session.ReadFrame(fd, 1)
		if sig := gaveUp.Load(); err != nil && sig != 0 {
			termP.Load().finish()
			fmt.Fprintf(os.Stderr, "gosbx: the command did not end within %v of the hangup (%v); the session kills it as this client goes\n", hangupGrace, unix.Signal(sig))
			return statusError(128 + int(sig))
		}
		if err != nil && started {
			// the command may have run: never 125 ("did not run"), which a caller may retry
			termP.Load().finish()
			fmt.Fprintf(os.Stderr, "gosbx: session %q ended before the command's exit status came (%v); the command may have started: taken as killed\n", name, err)
			return statusError(128 + int(unix.SIGKILL))
		}
		if err != nil {
			return fail(&setupFailure{step: "session", err: fmt.Errorf("session %q ended before the command's exit status came: %w", name, err)})
		}
		switch kind {
		case session.RepEvent:
			if bytes.Equal(body, dispatchEvent) {
				started = true // the client's own: not a status line
				continue
			}
			if bytes.HasPrefix(body, execEventPrefix) || bytes.Contains(body, execEventField) {
				started = true
			}
			if status != nil {
				status.Write(append(body, '\n'))
			}
		case session.RepMessage:
			relay.flush(false) // the command's output before gosbx's note about it
			os.Stderr.Write(body)
		case session.RepJob:
			if id, err := session.DecodeUint(body); err == nil {
				fmt.Printf("%s/%d\n", name, id)
			}
		case session.RepPTY:
			if tty && len(fds) == 1 && termP.Load() == nil {
				termP.Store(relayTerminal(fds[0]))
				if hangup.Load() {
					termP.Load().hangup()
				}
			} else {
				closeAll(fds)
			}
		case session.RepExit:
			termP.Load().finish()
			relay.flush(true) // all the command wrote before its exit: in the pipes
			code, err := session.DecodeUint(body)
			if err != nil || code > 255 {
				code = nsinit.ExitSetup
			}
			if t := termP.Load(); t != nil && t.broken.Load() {
				code = 128 + uint64(unix.SIGPIPE) // as a pipeline's writer whose reader left
			}
			if code != 0 {
				return statusError(int(code))
			}
			return nil
		}
	}
}

// hangupGrace is how long a --tty client waits for the command's exit after a SIGTERM
// or SIGHUP hung its terminal up (the hangup ends a shell at once; a command ignoring it
// is killed by the supervisor once this client goes).
const hangupGrace = 2 * time.Second

// execEventPrefix is the supervisor's bare exec event (sent without --status-fd too),
// execEventField the field of a full one (nsinit.Event's "exec": true).
var execEventPrefix, execEventField = []byte(`{"exec":true}`), []byte(`"exec":true`)

// dispatchEvent is the supervisor's frame sent just before it hands a request's command
// to the session (sent always, never written to the status descriptor).
var dispatchEvent = []byte(`{"dispatched":true}`)

// makeRaw puts the caller's terminal on stdin, if it is one, in raw mode (no echo, no
// line editing, no signals from keys, no output processing: cfmakeraw(3)) and returns
// its settings before, or nil.
func makeRaw() *unix.Termios {
	st, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		return nil
	}
	raw := *st
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if unix.IoctlSetTermios(0, unix.TCSETSW, &raw) != nil {
		return nil
	}
	return st
}

// restoreTerminal puts back the caller's terminal settings (once the output is flushed).
func restoreTerminal(st *unix.Termios) {
	if st != nil {
		unix.IoctlSetTermios(0, unix.TCSETSW, st)
	}
}
