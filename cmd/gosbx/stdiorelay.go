package main

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/gosbx/gosbx/internal/filerelay"
	"github.com/gosbx/gosbx/nsinit"
	"golang.org/x/sys/unix"
)

// stdioRelay stands between a session command and the caller's terminal when any of
// the caller's stdin, stdout and stderr is one (and --tty was not asked): the command
// gets a pipe in its place, which this client copies, so that no process of the
// session ever holds a descriptor of the caller's terminal. A process the command
// leaves behind keeps only the pipes: once the request has returned it reads end of
// file, where with the terminal itself it read what the user typed next into their
// shell, for the session's life (from an attack review, r34 F1), and what it writes is
// read and discarded by the session's supervisor, which was sent the output pipes' read
// ends with the request and drains them once this client is gone (as a closed terminal
// emulator's pty takes a leftover's writes): not SIGPIPE at its first line, which ended
// every server started with `&` from a terminal (from an attack review, r35 F7). Descriptors that are no terminal (pipes, files:
// what an agent's server passes) go to the command as they are, with no copy (a pipe
// so handed can be opened for writing through its magic link: attack review 39 F5).
//
// Input is read from the terminal only while this client's process group is the
// terminal's foreground one: a background `gosbx exec --session … &` neither takes the
// shell's input nor stops (SIGTTIN) for reading it while its command does not ask.
type stdioRelay struct {
	send  [3]int           // the descriptors sent for the command's 0, 1 and 2
	mine  []int            // the command's ends of the pipes, closed here once sent
	outs  []*outputCopy    // the copies of the command's output to the terminal
	file  *filerelay.Relay // a stdin file opened read-only, copied (internal/filerelay)
	fileR *os.File         // the command's end of its pipe, closed here once sent
}

// newStdioRelay relays each of the caller's descriptors 0, 1 and 2 that is a
// terminal (stdout and stderr on one terminal share one pipe, their order kept), and
// returns nil when none is. Errors: pipe2(2), eventfd(2), and a *nsinit.HandedFileError
// for a stdin file that is not to be handed in.
func newStdioRelay() (*stdioRelay, error) {
	term := [3]bool{isTerminal(0), isTerminal(1), isTerminal(2)}
	file := false
	if !term[0] {
		var err error
		if file, err = filerelay.Needed(0); err != nil {
			return nil, err
		}
	}
	if !term[0] && !term[1] && !term[2] && !file {
		return nil, nil
	}
	r := &stdioRelay{send: [3]int{0, 1, 2}}
	fail := func(err error) (*stdioRelay, error) {
		r.abort()
		return nil, err
	}
	if term[0] {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return fail(err)
		}
		r.send[0], r.mine = p[0], append(r.mine, p[0])
		go copyInput(p[1])
	}
	if file {
		// a file the caller opened for reading only: as itself, a session command
		// could open it again writable through /proc/self/fd/0. Not a namespace (nsfs
		// is a regular file by its mode): refused as the supervisor refuses what it is
		// sent (a relay would hide it from that check)
		if err := nsinit.CheckHandedFd(0, "stdin"); err != nil {
			return fail(err)
		}
		pr, fr, err := filerelay.New(0)
		if err != nil {
			return fail(err)
		}
		r.send[0], r.file, r.fileR = int(pr.Fd()), fr, pr
		fr.Start()
	}
	for fd := 1; fd <= 2; fd++ {
		if !term[fd] {
			continue
		}
		if fd == 2 && term[1] && sameTerminal(1, 2) {
			r.send[2] = r.send[1]
			continue
		}
		o, w, err := newOutputCopy(fd)
		if err != nil {
			return fail(err)
		}
		r.send[fd], r.mine, r.outs = w, append(r.mine, w), append(r.outs, o)
	}
	return r, nil
}

// drains are the read ends of the output pipes, sent with the request for the
// supervisor to drain once this client is gone (supervisor.go, drainRelay).
func (r *stdioRelay) drains() []int {
	if r == nil {
		return nil
	}
	fds := make([]int, len(r.outs))
	for i, o := range r.outs {
		fds[i] = o.r
	}
	return fds
}

// sent closes the command's ends of the pipes here, once the request carried them.
func (r *stdioRelay) sent() {
	if r == nil {
		return
	}
	for _, fd := range r.mine {
		unix.Close(fd)
	}
	r.mine = nil
	if r.fileR != nil {
		r.fileR.Close()
		r.fileR = nil
	}
}

// abort closes the command's ends and ends the output copies (a request not sent).
func (r *stdioRelay) abort() {
	r.sent()
	r.flush(true)
}

// flush writes out what the command wrote so far (its exit status came: all it wrote
// before its exit is in the pipes); last also ends the copies, whose pipes a leftover
// may still hold: what it writes after is the supervisor's to discard.
func (r *stdioRelay) flush(last bool) {
	if r == nil {
		return
	}
	for _, o := range r.outs {
		o.flush(last)
	}
	if last && r.file != nil {
		// the request is over: a leftover reads EOF, and the caller's offset is put
		// back past what was read
		r.file.Stop()
	}
}

// sameTerminal reports whether terminals a and b are one terminal device: the device
// number TIOCGDEV gives (tty_ioctl(4): the terminal behind /dev/tty or /dev/console,
// whose own device numbers, 5:0 and 5:1, differ from the /dev/pts/N they stand for),
// else sameFile. Two paths to one terminal (`2>/dev/tty`) share one pipe, their order
// kept (from an attack review, r35 F2: two pipes, two copies, reordered lines).
func sameTerminal(a, b int) bool {
	da, ea := unix.IoctlGetUint32(a, unix.TIOCGDEV)
	db, eb := unix.IoctlGetUint32(b, unix.TIOCGDEV)
	if ea == nil && eb == nil {
		return da == db
	}
	return sameFile(a, b)
}

// sameFile reports whether descriptors a and b are the same file (one terminal).
func sameFile(a, b int) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino && sa.Rdev == sb.Rdev
}

// foreground reports whether this process's group is the foreground process group of
// the terminal on fd (tcgetpgrp(3)); a terminal that is no controlling terminal of
// this process's session answers for none, and counts as foreground (no job control
// applies to it).
func foreground(fd int) bool {
	pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err != nil || pg == unix.Getpgrp()
}

// backgroundRecheck is how often a background client looks whether it was brought to
// the foreground while the terminal has input (the shell's, left unread: no event
// tells a process that it became the foreground group).
const backgroundRecheck = 100 * time.Millisecond

// copyInput copies the terminal on fd 0 to the pipe's write end w, and closes w at
// the terminal's end of input (Ctrl-D: a read of 0 bytes; a hangup's EIO) or when the
// command's end is gone. It runs for as long as this client: the process's exit ends
// it (a read of the terminal in progress then takes nothing of the shell's).
func copyInput(w int) {
	defer unix.Close(w)
	buf := make([]byte, 32<<10)
	pfd := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
	for {
		pfd[0].Revents = 0
		if _, err := unix.Poll(pfd, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if !foreground(0) {
			// the input is the shell's (this job is in the background)
			time.Sleep(backgroundRecheck)
			continue
		}
		n, err := unix.Read(0, buf)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil || n == 0:
			return
		}
		if writeAll(w, buf[:n]) != nil {
			return // the command's end is closed: nothing more to give it
		}
	}
}

// writeAll writes b to fd, waiting for room when fd is non-blocking (a terminal whose
// file description another process set O_NONBLOCK on).
func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}, -1)
			continue
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}

// outputCopy copies a pipe the command writes to (its stdout, or stderr) to the
// caller's terminal on dst.
type outputCopy struct {
	r, dst int
	wake   int           // an eventfd: a flush asked
	last   atomic.Bool   // set before wake: the flush ends the copy
	done   chan struct{} // a flush done
	exited chan struct{} // closed when run returns
	failed bool          // a write to dst failed: the rest is read and discarded
}

// flushMax bounds what a flush reads once the command has exited: a leftover that
// keeps writing must not keep the client.
const flushMax = 1 << 20

// newOutputCopy makes the pipe for the caller's terminal on dst and starts its copy;
// it returns the command's (write) end.
func newOutputCopy(dst int) (*outputCopy, int, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, -1, err
	}
	unix.SetNonblock(p[0], true)
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, -1, err
	}
	o := &outputCopy{r: p[0], dst: dst, wake: wake, done: make(chan struct{}), exited: make(chan struct{})}
	go o.run()
	return o, p[1], nil
}

// run copies until a last flush.
func (o *outputCopy) run() {
	defer close(o.exited)
	buf := make([]byte, 32<<10)
	pfd := []unix.PollFd{{Fd: int32(o.r), Events: unix.POLLIN}, {Fd: int32(o.wake), Events: unix.POLLIN}}
	for {
		pfd[0].Revents, pfd[1].Revents = 0, 0
		if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
			return
		}
		if pfd[0].Revents != 0 && !o.copy(buf, len(buf)) {
			pfd[0].Fd = -1 // every writer gone: only flushes are waited for
		}
		if pfd[1].Revents != 0 {
			var n [8]byte
			unix.Read(o.wake, n[:])
			if pfd[0].Fd >= 0 {
				o.copy(buf, flushMax)
			}
			last := o.last.Load()
			o.done <- struct{}{}
			if last {
				return
			}
		}
	}
}

// copy writes what the pipe holds, up to max bytes, to the terminal; false at the
// pipe's end of file or a read error.
func (o *outputCopy) copy(buf []byte, max int) bool {
	for max > 0 {
		n, err := unix.Read(o.r, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case err != nil || n == 0:
			return false
		}
		// The terminal failing (hung up: EIO) must not stop the reading: the command
		// would block writing to a pipe nobody reads, and this client wait for its exit
		// for ever; what it writes from then on is discarded, as drainRelay does once
		// the client is gone (from an attack review, r37 F2)
		if !o.failed && writeAll(o.dst, buf[:n]) != nil {
			o.failed = true
		}
		max -= n
	}
	return true
}

// flush has the copy write what the pipe holds now, and waits for it.
func (o *outputCopy) flush(last bool) {
	if o.wake < 0 {
		return
	}
	o.last.Store(last)
	one := [8]byte{1}
	unix.Write(o.wake, one[:])
	select {
	case <-o.done:
	case <-o.exited:
	}
	if last {
		unix.Close(o.wake)
		unix.Close(o.r)
		o.wake = -1
	}
}
