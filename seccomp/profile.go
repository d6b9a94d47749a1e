package seccomp

import "golang.org/x/sys/unix"

// namespaceFlags are the clone(2) flags that create namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// Terminal ioctls that inject input or drive the console (tty_ioctl(4), ioctl_console(2)).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541c
)

// AgentRules is the "agent" profile: what agents' commands never need and what has
// been the way out of sandboxes, denied; everything else allowed. ptrace stays allowed
// (gdb, strace): the pid namespace and the non-dumpable init bound it. Rule by rule:
func AgentRules() []Rule {
	eperm := func(comment string, names ...string) Rule {
		return Rule{Syscalls: names, Action: "errno", Errno: "EPERM", Comment: comment}
	}
	return []Rule{
		eperm("the mount tree is fixed when the sandbox is built: no mounts, no pivot_root, no new mount API",
			"mount", "umount2", "pivot_root", "move_mount", "open_tree", "open_tree_attr", "fsopen", "fsmount",
			"fsconfig", "fspick", "mount_setattr"),
		eperm("no joining or making namespaces: a nested user namespace brings back every capability over its own mounts",
			"setns", "unshare"),
		{Syscalls: []string{"clone"}, Action: "allow", Args: []Arg{{Index: 0, Op: "masked_eq", Mask: namespaceFlags, Value: 0}},
			Comment: "clone(2) of plain processes and threads stays allowed..."},
		eperm("...with a namespace flag it is refused", "clone"),
		{Syscalls: []string{"clone3"}, Action: "errno", Errno: "ENOSYS",
			Comment: "clone3 passes its flags in memory a filter cannot read: ENOSYS makes libc fall back to clone"},
		eperm("the kernel keyring is shared by every process of the user: no keys", "keyctl", "add_key", "request_key"),
		eperm("kernel attack surface agents never need: eBPF, perf events, userfaultfd, io_uring",
			"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register"),
		eperm("no loading kernels or modules", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module"),
		eperm("file handles bypass the path walk and so the mount boundary", "open_by_handle_at", "name_to_handle_at"),
		eperm("host-wide state: accounting, swap, reboot, clocks, the kernel log, quotas",
			"acct", "swapon", "swapoff", "reboot", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
			"syslog", "vhangup", "quotactl", "quotactl_fd", "lookup_dcookie"),
		{Syscalls: []string{"personality"}, Action: "allow", Args: []Arg{{Index: 0, Op: "eq", Value: 0}}, Comment: "personality(PER_LINUX)"},
		{Syscalls: []string{"personality"}, Action: "allow", Args: []Arg{{Index: 0, Op: "eq", Value: 8}}, Comment: "personality(PER_LINUX32)"},
		{Syscalls: []string{"personality"}, Action: "allow", Args: []Arg{{Index: 0, Op: "eq", Value: 0x20000}}, Comment: "personality(UNAME26)"},
		{Syscalls: []string{"personality"}, Action: "allow", Args: []Arg{{Index: 0, Op: "eq", Value: 0x20008}}, Comment: "personality(PER_LINUX32|UNAME26)"},
		{Syscalls: []string{"personality"}, Action: "allow", Args: []Arg{{Index: 0, Op: "eq", Value: 0xffffffff}}, Comment: "personality query"},
		eperm("other personalities (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, …) weaken the process", "personality"),
		{Syscalls: []string{"ioctl"}, Action: "errno", Errno: "EPERM", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0xffffffff, Value: tiocsti}},
			Comment: "TIOCSTI pushes input into a terminal; compared on 32 bits as the kernel does (CVE-2019-10063)"},
		{Syscalls: []string{"ioctl"}, Action: "errno", Errno: "EPERM", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0xffffffff, Value: tioclinux}},
			Comment: "TIOCLINUX can paste into a console; compared on 32 bits"},
	}
}
