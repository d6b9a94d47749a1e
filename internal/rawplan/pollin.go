package rawplan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pollIn is PollIn: poll(2) of the descriptor a[0] for POLLIN, without a timeout. It
// returns 0 once the descriptor is readable and EPIPE when it reports POLLHUP, POLLERR
// or POLLNVAL without POLLIN (a seccomp listener whose filter no process holds any
// more: seccomp_unotify(2)); EINTR as poll's, which Run retries.
//
//go:nosplit
//go:norace
func pollIn(st *State, k Caller) unix.Errno {
	a := &st.args
	st.pfds[0] = unix.PollFd{Fd: int32(a[0]), Events: unix.POLLIN}
	a[0], a[1], a[2] = uintptr(unsafe.Pointer(&st.pfds[0])), 1, ^uintptr(0)
	for {
		r, e := k.raw(unix.SYS_POLL, a)
		if e != 0 {
			return e
		}
		if r == 1 {
			break
		}
	}
	if st.pfds[0].Revents&unix.POLLIN != 0 {
		return 0
	}
	return unix.EPIPE
}
