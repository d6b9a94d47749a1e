package nsinit

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/wire"
)

// A root caller's command loads a filter that sends the set-ID calls to pid 1
// (seccomp.NoSetIDRules, SECCOMP_RET_USER_NOTIF). This file is the process stage's
// part: the filter loaded with a listener, the listener sent to pid 1 on a socket pair
// made for this command, and closed, before execve(2), so that the command never holds
// it (a command that answered its own notifications would make any set-ID file).
// setid.go is pid 1's part, the handler.

// planListener adds to step s the filter's load with SECCOMP_FILTER_FLAG_NEW_LISTENER
// (and WAIT_KILLABLE_RECV: once the handler has received a call, a signal cannot make
// the command restart it, and so repeat a creation the handler made), the listener's
// sendmsg(2) on the child's end of a new socket pair, and its close(2). The listener
// is close-on-exec already (seccomp(2)); it is closed explicitly so that nothing of the
// command's could ever see it. Errors: socketpair(2).
func (p *procPlan) planListener(s int) error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socketpair for the set-ID listener: %w", err)
	}
	p.listen = [2]int{fds[0], fds[1]}
	p.ops = append(p.ops, procOp{step: s, kind: opKeepFd, nr: unix.SYS_SECCOMP,
		a:    [6]uintptr{unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, ptr(&p.fprog)},
		what: "seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER|WAIT_KILLABLE_RECV)"})
	p.sendKept(s, fds[1], 'L', "send the seccomp listener to pid 1")
	p.ops = append(p.ops, procOp{step: s, kind: opUseKept, nr: unix.SYS_CLOSE, what: "close the seccomp listener"})
	return nil
}

// closeListen closes the plan's socket pair (what is left of it).
func (p *procPlan) closeListen() {
	for i, fd := range p.listen {
		if fd > 0 {
			unix.Close(fd)
		}
		p.listen[i] = -1
	}
}

// serveListener receives the listener of the command p started (err: it did not) and
// hands it to the init's set-ID handler (addSetIDListener), which serves it for as long
// as any process holds the filter. Should no listener come, the set-ID calls fail with
// ENOSYS: the kernel fails a notification nobody listens for.
func (p *procPlan) serveListener(err error) {
	defer p.closeListen()
	defer runtime.KeepAlive(p)
	if err != nil {
		return
	}
	if fault.Check("set-ID handler") != nil {
		return // a test build: nobody answers, the calls fail with ENOSYS
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	// sent before execve, which was reported: the message waits in the socket
	_, oobn, _, _, rerr := unix.Recvmsg(p.listen[0], buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if rerr != nil {
		return
	}
	fds := wire.Rights(oob[:oobn])
	if len(fds) != 1 {
		closeFds(fds)
		return
	}
	addSetIDListener(fds[0])
}
