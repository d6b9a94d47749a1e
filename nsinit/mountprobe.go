package nsinit

import (
	"golang.org/x/sys/unix"
)

// mountProbe is one call of the mount family made with an argument the kernel rejects
// before any permission check, and the errno that rejection gives.
type mountProbe struct {
	name string
	nr   uintptr
	args [6]uintptr
	want unix.Errno
}

const badFlags = 0xffff0000 // no valid MS_*, MNT_*, OPEN_TREE_*, AT_* flag combination

// mountProbes are the mount calls whose entry checks an argument before it asks
// may_mount() or any capability (fs/namespace.c, fs/fsopen.c, Linux 6.x), each with
// such a bad argument: measured here as uid 65534 without capabilities and as root, the
// kernel answers EFAULT/EINVAL; under gosbx exec's own filter every one gives EPERM.
// fsopen, fsmount, fspick, move_mount and pivot_root ask may_mount() first, so from an
// unprivileged process they cannot tell a filter's EPERM from the kernel's.
var mountProbes = [...]mountProbe{
	// copy_mount_string(type) before anything else: a type pointer of 1 faults
	{"mount", unix.SYS_MOUNT, [6]uintptr{0, 0, 1, 0, 0, 0}, unix.EFAULT},
	// ksys_umount: flags checked first
	{"umount2", unix.SYS_UMOUNT2, [6]uintptr{0, badFlags, 0, 0, 0, 0}, unix.EINVAL},
	// open_tree: flags checked before may_mount() for a detached clone
	{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{^uintptr(0), 0, badFlags, 0, 0, 0}, unix.EINVAL},
	// mount_setattr: flags checked first
	{"mount_setattr", unix.SYS_MOUNT_SETATTR, [6]uintptr{^uintptr(0), 0, badFlags, 0, 0, 0}, unix.EINVAL},
	// fsconfig: a negative fd is refused first
	{"fsconfig", unix.SYS_FSCONFIG, [6]uintptr{^uintptr(0), 0, 0, 0, 0, 0}, unix.EINVAL},
}

// mountCallsReachKernel reports whether the seccomp filter this process runs under (the
// init inherits it) lets the mount calls through: each of mountProbes must get the
// kernel's own argument error; a filter's refusal is EPERM or ENOSYS (its errno, in
// any case not the kernel's answer to these arguments). The probes change nothing: the
// kernel stops at the bad argument. A filter that kills or traps on these calls would
// kill the caller, so it is asked only after a mount step failed with an errno, where
// the filter answered the init's call with one.
func mountCallsReachKernel() bool {
	for _, p := range mountProbes {
		_, _, e := unix.Syscall6(p.nr, p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
		if e != p.want {
			return false
		}
	}
	return true
}
