package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// maxDrains is how many read ends of a client's output relay a request may carry (its
// stdout's and its stderr's pipes).
const maxDrains = 2

// drainRelay keeps the read ends of a terminal client's output relay (stdiorelay.go)
// read once the request has ended, so that a process its command left running (a
// server started with `&`) writes on without SIGPIPE or EPIPE, as to a closed terminal
// emulator's pty; the bytes are discarded (from an attack review, r35 F7). The draining
// starts only once the client's end of the connection conn is closed (POLLHUP, poll(2)):
// until then the client may still be copying the command's last output to its terminal.
// Each drain ends at the pipe's end of file (every writer gone: the leftovers exited, or
// the session ended); it only reads, blocked in the runtime's poller between writes (the
// relay's read ends are non-blocking). conn is duplicated here: the caller closes its own.
func drainRelay(conn int, pipes []*os.File) {
	c, err := unix.FcntlInt(uintptr(conn), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		for _, p := range pipes {
			p.Close()
		}
		return
	}
	go func() {
		// events 0: only POLLHUP (the peer closed; this side's SHUT_RD alone does not
		// raise it) or POLLERR wake it
		pfd := []unix.PollFd{{Fd: int32(c), Events: 0}}
		for {
			if _, err := unix.Poll(pfd, -1); err != unix.EINTR {
				break
			}
		}
		unix.Close(c)
		for _, p := range pipes {
			go func() {
				io.Copy(io.Discard, p)
				p.Close()
			}()
		}
	}()
}
