// Package filerelay hands a command a pipe in place of a file the caller opened for
// reading, and copies the file into it while the command runs.
//
// A descriptor passed to a sandboxed command as itself can be opened again through
// its /proc/self/fd/N magic link (proc(5)): the kernel then checks only the inode's
// permissions, on the host's mount, not the access the descriptor was opened with. A
// file the caller redirected as stdin (`< file`) and could write would so become
// writable to the command, outside every tree the sandbox may write. A pipe has no
// path of the caller's: its magic link opens the same pipe, of the relay's. A pipe or FIFO
// of the caller's given as stdin is relayed too (tee(2), Relay.copyPipe): as itself, its
// magic link opens it for writing as well, where its mode lets the command's uid (its
// owner, for a caller other than root), and lines the command puts there reach the
// caller's next reader (attack review 39 F5). Container runtimes relay stdio through
// pipes for the same reason (conmon, containerd's shim).
//
// The copy reads from the caller's open file description, so its offset moves; when
// the relay stops, the offset is put back past what the command read, no further: a
// loop `while read l; do gosbx exec -- CMD; done < list` reads the same lines as with
// the file passed as itself (what is still in the pipe, FIONREAD, and read but not yet
// written, is given back with lseek(2)). A command that writes into its own pipe (its
// magic link opens the pipe for writing too) makes FIONREAD count its bytes: the offset
// then goes back over as many bytes it read, never before where the relay started.
package filerelay

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Needed reports whether fd, handed to a command as itself, would let it reopen the
// file with more access than fd carries: a regular file, a block device or a pipe (a
// FIFO) opened for reading only (fcntl(2) F_GETFL O_RDONLY, not O_PATH). A descriptor
// opened for writing too gives nothing more by a reopen; sockets and character devices
// (terminals, /dev/null) are left as they are. Errors: fstat(2) and fcntl(2)'s, wrapped.
func Needed(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("fstat descriptor %d: %w", fd, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFBLK, unix.S_IFIFO:
	default:
		return false, nil
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return false, fmt.Errorf("fcntl F_GETFL descriptor %d: %w", fd, err)
	}
	return fl&unix.O_PATH == 0 && fl&unix.O_ACCMODE == unix.O_RDONLY, nil
}

// Relay copies one file into a pipe whose read end a command holds.
type Relay struct {
	src     int   // a duplicate of the caller's descriptor, owned: the caller may close its own once the command started (os/exec's pattern for a pipe's read end); one open file description, so one offset
	w       int   // the pipe's write end, O_NONBLOCK, owned
	peek    int   // a second read end, owned: FIONREAD (TIOCINQ) at Stop, and no EPIPE before it
	stop    int   // an eventfd that ends the copy
	pending int64 // read from the file, not yet in the pipe
	moved   int64 // read from the file in all
	once    sync.Once
	started bool
	done    chan struct{}
	err     error
	pipe    bool  // src is a pipe or FIFO: copied with tee(2), taken only as read
	teed    int64 // the last chunk tee'd into the command's pipe, not yet taken from src
}

// New makes the pipe for src (a descriptor Needed accepts). It returns the read end
// for the command (the caller closes its copy once the command holds it) and the
// relay, whose copy begins at Start. Errors: pipe2(2), fcntl(2), dup(2), eventfd(2).
func New(src int) (*os.File, *Relay, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe2 for the stdin relay: %w", err)
	}
	rl := &Relay{src: -1, w: p[1], peek: -1, stop: -1, done: make(chan struct{})}
	fail := func(op string, err error) (*os.File, *Relay, error) {
		unix.Close(p[0])
		rl.closeAll()
		return nil, nil, fmt.Errorf("%s for the stdin relay: %w", op, err)
	}
	// only the write end: the command's read end stays blocking (its own file)
	if err := unix.SetNonblock(p[1], true); err != nil {
		return fail("fcntl O_NONBLOCK", err)
	}
	var err error
	if rl.src, err = unix.FcntlInt(uintptr(src), unix.F_DUPFD_CLOEXEC, 0); err != nil {
		return fail("dup the caller's descriptor", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fail("fstat", err)
	}
	if rl.pipe = st.Mode&unix.S_IFMT == unix.S_IFIFO; rl.pipe {
		// one page, one buffer: writable (POLLOUT) only once the command has read all
		// of the chunk in it
		if _, err := unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, 4096); err != nil {
			return fail("fcntl F_SETPIPE_SZ", err)
		}
	}
	if rl.peek, err = unix.FcntlInt(uintptr(p[0]), unix.F_DUPFD_CLOEXEC, 0); err != nil {
		return fail("dup", err)
	}
	if rl.stop, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return fail("eventfd", err)
	}
	return os.NewFile(uintptr(p[0]), "stdin relay"), rl, nil
}

// Start begins the copy, in a goroutine of its own.
func (rl *Relay) Start() {
	rl.started = true
	if rl.pipe {
		go rl.copyPipe()
		return
	}
	go rl.copy()
}

// copyPipe gives the command what the caller's pipe holds without taking it: a chunk
// is duplicated into the command's one-page pipe (tee(2)), and taken from the caller's
// pipe only once the command has read all of it. As itself, the caller's pipe would let
// the command open it again for writing through /proc/self/fd/0 (it is the caller's
// uid's, and so the command's) and put lines before what the caller's next reader gets.
// What the command did not read stays in the caller's pipe (Stop).
func (rl *Relay) copyPipe() {
	defer close(rl.done)
	for {
		if !rl.waitFor(rl.src, unix.POLLIN) {
			return
		}
		n, err := unix.Tee(rl.src, rl.w, 4096, unix.SPLICE_F_NONBLOCK)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue // another reader of the caller's pipe took it first
		}
		if err != nil {
			rl.err = fmt.Errorf("tee the stdin pipe: %w", err)
			break
		}
		if n == 0 {
			break // no writer left, nothing in it: end of file
		}
		rl.teed = n
		if !rl.waitFor(rl.w, unix.POLLOUT) {
			return // Stop takes what the command read
		}
		if err := rl.take(n); err != nil {
			rl.err = err
			break
		}
	}
	unix.Close(rl.w) // the command reads EOF
	rl.w = -1
}

// take reads and drops n bytes of the caller's pipe: the chunk the command has read.
func (rl *Relay) take(n int64) error {
	buf := make([]byte, 4096)
	for n > 0 {
		m, err := unix.Read(rl.src, buf[:min(n, int64(len(buf)))])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || m == 0 {
			return fmt.Errorf("take %d bytes read by the command from the stdin pipe: %v", n, err)
		}
		n -= int64(m)
	}
	rl.teed = 0
	return nil
}

// waitFor blocks until fd has events or Stop was called; false for Stop.
func (rl *Relay) waitFor(fd int, events int16) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(rl.stop), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return fds[1].Revents == 0
}

// copy moves the file into the pipe, at most 64 KiB at a time, until end of file or
// Stop. At end of file the write end is closed: the command reads EOF.
func (rl *Relay) copy() {
	defer close(rl.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(rl.src, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			rl.err = fmt.Errorf("read the stdin file: %w", err)
			break
		}
		if n == 0 {
			break
		}
		rl.pending = int64(n)
		rl.moved += int64(n)
		for b := buf[:n]; len(b) > 0; {
			m, err := unix.Write(rl.w, b)
			switch {
			case m > 0:
				b = b[m:]
				rl.pending -= int64(m)
			case errors.Is(err, unix.EAGAIN):
				if !rl.wait() {
					return
				}
			case errors.Is(err, unix.EINTR):
			default:
				rl.err = fmt.Errorf("write the stdin relay: %w", err)
				return
			}
		}
		if rl.stopped() {
			return
		}
	}
	unix.Close(rl.w) // end of file (or a read error): the command reads EOF
	rl.w = -1
}

// wait blocks until the pipe has room or Stop was called; false for Stop.
func (rl *Relay) wait() bool {
	fds := []unix.PollFd{{Fd: int32(rl.w), Events: unix.POLLOUT}, {Fd: int32(rl.stop), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == nil || !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return fds[1].Revents == 0
}

func (rl *Relay) stopped() bool {
	fds := []unix.PollFd{{Fd: int32(rl.stop), Events: unix.POLLIN}}
	n, _ := unix.Poll(fds, 0)
	return n > 0
}

// Stop ends the copy (the command is gone, or will not get more) and puts the file's
// offset back past the bytes the command read: those left in the pipe and those read
// but not yet written. It returns the copy's own error, if any, or lseek(2)'s. Safe to
// call more than once, and without Start.
func (rl *Relay) Stop() error {
	var err error
	rl.once.Do(func() {
		if rl.started && rl.pipe {
			unix.Write(rl.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
			<-rl.done
			if rl.teed > 0 {
				// the command read the chunk but what is still in its pipe (capped: it
				// may have written into its own pipe)
				unread := int64(0)
				if n, e := unix.IoctlGetInt(rl.peek, unix.TIOCINQ); e == nil {
					unread = min(int64(n), rl.teed)
				}
				if e := rl.take(rl.teed - unread); e != nil {
					err = e
				}
			}
			if rl.err != nil {
				err = rl.err
			}
		} else if rl.started {
			unix.Write(rl.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
			<-rl.done
			unread := rl.pending
			if n, e := unix.IoctlGetInt(rl.peek, unix.TIOCINQ); e == nil {
				unread += int64(n)
			}
			// the command may write into its own pipe too (through /proc/self/fd/0):
			// never give back more than was taken
			unread = min(unread, rl.moved)
			if unread > 0 {
				if _, e := unix.Seek(rl.src, -unread, 1); e != nil { // SEEK_CUR
					err = fmt.Errorf("lseek the stdin file back %d bytes: %w", unread, e)
				}
			}
			if rl.err != nil {
				err = rl.err
			}
		}
		rl.closeAll()
	})
	return err
}

func (rl *Relay) closeAll() {
	for _, fd := range []*int{&rl.w, &rl.peek, &rl.stop, &rl.src} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
