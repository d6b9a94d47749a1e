package main

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// terminal relays the caller's terminal (or stdin and stdout) to and from a session
// command's terminal master, the caller's terminal in raw mode (makeRaw: its keys,
// Ctrl-C included, go to the command's terminal, whose line discipline makes the
// signals), its window size followed (SIGWINCH).
//
// The end of the caller's stdin is the end of input on the command's terminal, as
// script(1) gives it: the terminal's VEOF character at the start of a line (a last line
// without a newline ended first: by a VEOF in canonical mode, as script(1) does, else
// by the Enter key's '\r'), so `cat` reads end of file and a shell exits as at Ctrl-D;
// written again whenever the terminal leaves canonical mode afterwards (a shell's line
// editor, readline, takes it raw once it reads: a VEOF queued before that reads as a
// NUL byte). Closing the master (hangup) is the end of
// the terminal itself, as a closed terminal emulator's: the kernel hangs up the slave
// (SIGHUP and SIGCONT to the session's leader and its foreground process group, then
// EIO to reads: pty(7), tty_vhangup), which even a shell ignoring SIGTERM obeys. This
// process holds the only master (pid 1 and the supervisor closed theirs).
type terminal struct {
	pty    *os.File      // the master, non-blocking: Close ends a Read in progress
	copied chan struct{} // closed once the command's output has been copied
	once   sync.Once
	hung   chan struct{} // closed by hangup
	// broken: stdout's reader was gone (EPIPE): the client ends as a pipeline's writer
	// does, 128+SIGPIPE
	broken atomic.Bool
}

// relayTerminal starts the relay on the master fd received from the session.
func relayTerminal(fd int) *terminal {
	// non-blocking, the master is on Go's poller: a Close (hangup) takes effect at once
	// instead of waiting for a read blocked in the kernel to return
	unix.SetNonblock(fd, true)
	t := &terminal{pty: os.NewFile(uintptr(fd), "pty"), copied: make(chan struct{}), hung: make(chan struct{})}
	t.resize()
	go t.copyOutput()
	go t.copyInput()
	return t
}

// copyOutput copies the terminal to stdout until EIO (no process holds the terminal
// any more). A write that fails (stdout's reader gone: EPIPE, SIGPIPE being ignored
// while the terminal is raw; a hung-up terminal's EIO) hangs the command's terminal up,
// as the end of a terminal emulator does: reading no more would leave the command
// blocked writing to a terminal nobody reads, and this client waiting for its exit (from
// an attack review, r37 F2/F4).
func (t *terminal) copyOutput() {
	defer close(t.copied)
	buf := make([]byte, 32<<10)
	for {
		n, err := t.pty.Read(buf)
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				t.broken.Store(errors.Is(werr, unix.EPIPE))
				t.hangup()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// copyInput copies stdin to the terminal, then gives the end of it as VEOF.
func (t *terminal) copyInput() {
	b := make([]byte, 32<<10)
	last := byte('\n') // no input at all is a line start
	for {
		n, err := os.Stdin.Read(b)
		if n > 0 {
			if _, werr := t.pty.Write(b[:n]); werr != nil {
				return
			}
			last = b[n-1]
		}
		if err != nil {
			break
		}
	}
	// partial: the input's last line has no newline; a line editor (raw) gets the
	// Enter key's '\r' before the VEOF, a canonical reader a VEOF that ends the line
	partial := last != '\n'
	deliver := func(canon bool) error {
		eof := []byte{t.veof()}
		if partial && canon {
			eof = append(eof, eof[0])
		} else if partial {
			eof, partial = append([]byte{'\r'}, eof...), false
		}
		_, err := t.pty.Write(eof)
		return err
	}
	canon, ok := t.canonical()
	if !ok || deliver(canon) != nil {
		return
	}
	// While the command runs (the output copy goes on), each switch from canonical
	// mode to another gets a VEOF again; polled, as the terminal's mode changes send
	// nothing to the master without packet mode's extproc.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-t.copied:
			return
		case <-t.hung:
			return
		case <-tick.C:
		}
		c, ok := t.canonical()
		if !ok {
			return
		}
		if canon && !c && deliver(c) != nil {
			return
		}
		canon = c
	}
}

// canonical says whether the command's terminal is in canonical mode (ICANON), read
// on the master (TCGETS there gives the slave's settings: tty_ioctl(4)).
func (t *terminal) canonical() (canon, ok bool) {
	st, err := t.termios()
	if err != nil {
		return false, false
	}
	return st.Lflag&unix.ICANON != 0, true
}

// veof is the terminal's end-of-file character (VEOF; Ctrl-D where it has none).
func (t *terminal) veof() byte {
	if st, err := t.termios(); err == nil && st.Cc[unix.VEOF] != 0 {
		return st.Cc[unix.VEOF]
	}
	return 4
}

func (t *terminal) termios() (*unix.Termios, error) {
	rc, err := t.pty.SyscallConn()
	if err != nil {
		return nil, err
	}
	var st *unix.Termios
	var ierr error
	if err := rc.Control(func(fd uintptr) { st, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS) }); err != nil {
		return nil, err
	}
	return st, ierr
}

// resize gives the command's terminal the caller's window size.
func (t *terminal) resize() {
	ws, err := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	if rc, err := t.pty.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, ws) })
	}
}

// hangup closes the master: the command's terminal is hung up (see terminal). Nil-safe:
// a signal before the master came hangs it up on arrival.
func (t *terminal) hangup() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		close(t.hung)
		t.pty.Close()
	})
}

// finish lets the command's last output through (until the terminal is closed by
// everyone inside, or 200 ms: a background process may hold it).
func (t *terminal) finish() {
	if t == nil {
		return
	}
	select {
	case <-t.copied:
	case <-time.After(200 * time.Millisecond):
	}
}
