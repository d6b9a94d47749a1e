package main

import (
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
// the session ended); it reads in the runtime's poller (the relay's read ends are
// non-blocking), paying gate (the session's jobs' log copy's, jobLogRate) for each read:
// the supervisor runs outside the session's --cpus, and read as fast as a leftover
// writes it spent as much CPU again as the leftover's own capped share (from an attack
// review, r37 F1). conn is duplicated here: the caller closes its own.
func drainRelay(conn int, pipes []*os.File, gate *rateGate) {
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
			go discard(p, gate)
		}
	}()
}

// drainCharge is what each read of a drain pays the gate at least: a pipe's capacity
// (pipe(7): 64 KiB). A leftover writing a byte at a time must not make the supervisor
// wake for each byte; so charged, the drains of a session read at most 128 times a
// second together, and the pipe fills between the reads (its writer then waits, as a
// job's does on its log's gate).
const drainCharge = 64 << 10

// discard reads p to its end of file and drops what it reads, paying gate for each read
// (at least drainCharge). It waits in poll(2) on a descriptor of its own, out of the
// runtime's poller: there, each write to the pipe (an edge-triggered event) woke the
// runtime's poller while the drain slept on the gate, ~3000 wakeups a second for a
// leftover writing one byte at a time (measured: 27 ticks in 5 s, against 4 so). The
// wait holds a thread, as drainRelay's wait for the client's hangup does.
func discard(p *os.File, gate *rateGate) {
	fd := -1
	if rc, err := p.SyscallConn(); err == nil {
		// not p.Fd(), which would make the pipe blocking
		rc.Control(func(f uintptr) { fd, _ = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) })
	}
	p.Close() // out of the poller (the dup keeps the pipe open)
	if fd < 0 {
		return
	}
	defer unix.Close(fd)
	var buf []byte // allocated at the first output: most drains read none
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
			return
		}
		if buf == nil {
			buf = make([]byte, drainCharge)
		}
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err != nil || n == 0:
			return // the end of file: every writer gone
		}
		gate.pay(int64(max(n, drainCharge)))
	}
}
