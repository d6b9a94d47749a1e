package nsinit

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readFullRaw reads len(b) bytes from f, a non-blocking pipe, waiting in the runtime's
// poller while it is empty; io.ErrUnexpectedEOF (or io.EOF before any byte) at its end.
// Each read(2) is a raw system call, not one through the scheduler's entersyscall: a
// read of a non-blocking pipe does not block, and entersyscall wakes sysmon when it
// sleeps (all Ps idle while the launcher waited for this report), which then polls
// every 20 µs until the launcher waits again (docs/decisions.md "Speed, ninth attempt:
// the launcher's scheduler").
func readFullRaw(f *os.File, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	got := 0
	var rerr error
	for got < len(b) && rerr == nil {
		err := rc.Read(func(fd uintptr) bool {
			p := b[got:]
			n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch {
			case e == unix.EAGAIN:
				return false
			case e == unix.EINTR:
				return true // read again: the loop goes round
			case e != 0:
				rerr = e
			case n == 0:
				rerr = io.EOF
			default:
				got += int(n)
			}
			return true
		})
		if err != nil {
			return err
		}
	}
	if rerr == io.EOF && got > 0 {
		return io.ErrUnexpectedEOF
	}
	return rerr
}
