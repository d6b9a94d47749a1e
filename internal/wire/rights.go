package wire

import "golang.org/x/sys/unix"

// Rights returns the descriptors of every SCM_RIGHTS message in oob, the ancillary data
// of one recvmsg(2) (unix(7)); nil when it holds none or cannot be parsed. The caller
// owns (and must close) each descriptor returned.
func Rights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
