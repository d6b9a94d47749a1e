// Package filerelay hands a command a pipe in place of a file the caller opened for
// reading, and copies the file into it while the command runs.
//
// A descriptor passed to a sandboxed command as itself can be opened again through
// its /proc/self/fd/N magic link (proc(5)): the kernel then checks only the inode's
// permissions, on the host's mount, not the access the descriptor was opened with. A
// file the caller redirected as stdin (`< file`) and could write would so become
// writable to the command, outside every tree the sandbox may write. A pipe has no
// path: its magic link opens the same pipe, though for writing as well as reading where
// its mode lets the command's uid (its owner, for a caller other than root): not relayed
// here, documented (docs/decisions.md, attack review 39 F5). Container runtimes relay stdio through
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
// file with more access than fd carries: a regular file or a block device opened for
// reading only (fcntl(2) F_GETFL O_RDONLY, not O_PATH). A descriptor opened for writing
// too gives nothing more by a reopen; pipes, sockets and character devices (terminals,
// /dev/null) are left as they are. Errors: fstat(2) and fcntl(2)'s, wrapped.
func Needed(fd int) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("fstat descriptor %d: %w", fd, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFBLK:
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
	src     int   // the caller's descriptor, not owned
	w       int   // the pipe's write end, O_NONBLOCK, owned
	peek    int   // a second read end, owned: FIONREAD (TIOCINQ) at Stop, and no EPIPE before it
	stop    int   // an eventfd that ends the copy
	pending int64 // read from the file, not yet in the pipe
	moved   int64 // read from the file in all
	once    sync.Once
	started bool
	done    chan struct{}
	err     error
}

// New makes the pipe for src (a descriptor Needed accepts). It returns the read end
// for the command (the caller closes its copy once the command holds it) and the
// relay, whose copy begins at Start. Errors: pipe2(2), fcntl(2), dup(2), eventfd(2).
func New(src int) (*os.File, *Relay, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("pipe2 for the stdin relay: %w", err)
	}
	rl := &Relay{src: src, w: p[1], peek: -1, stop: -1, done: make(chan struct{})}
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
	go rl.copy()
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
		if rl.started {
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
	for _, fd := range []*int{&rl.w, &rl.peek, &rl.stop} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}
