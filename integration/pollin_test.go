package integration

import (
	"time"

	"golang.org/x/sys/unix"
)

// pollIn waits up to d for fd to become readable (poll(2), POLLIN), again after an
// EINTR with the time left: the Go runtime's own signals (SIGURG preemption) interrupt
// a poll in a test. It returns poll's count (1 readable, 0 timed out) and its error.
func pollIn(fd int, d time.Duration) (int, error) {
	end := time.Now().Add(d)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(end), 0)/time.Millisecond))
		if err != unix.EINTR {
			return n, err
		}
	}
}
