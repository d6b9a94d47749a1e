package seccomp

import "golang.org/x/sys/unix"

// namespaceFlags are the clone(2) flags that create namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

// Terminal ioctls that inject input, drive the console or replace a terminal's line
// discipline (tty_ioctl(4), ioctl_console(2)).
const (
	tiocsti   = 0x5412
	tioclinux = 0x541c
	tiocsetd  = 0x5423
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
		// a plain exec's command holds the caller's terminal itself, and the launcher can
		// put a line discipline back only from the terminal's foreground group: N_NULL set
		// by a background `gosbx exec … &` discarded all the terminal carried for good
		// (from an attack review, rstdio F1)
		{Syscalls: []string{"ioctl"}, Action: "errno", Errno: "EPERM", Args: []Arg{{Index: 1, Op: "masked_eq", Mask: 0xffffffff, Value: tiocsetd}},
			Comment: "TIOCSETD replaces a terminal's line discipline (N_NULL discards all it carries); compared on 32 bits"},
	}
}

// NoSetIDRules send to the sandbox init (SECCOMP_RET_USER_NOTIF) every call that would
// set the set-user-ID or set-group-ID bit on a file: chmod(2) and its variants, creat(2)
// and mknod(2) with either bit, open(2) and openat(2) with either bit when they create a
// file (O_CREAT or O_TMPFILE: otherwise the mode argument is not read, and may hold
// anything). The init's handler (nsinit/setid.go) makes the call itself with the
// command's credentials and the two bits dropped: the rest of the mode applies. For a
// command whose files land on the host owned by root (a root caller's idmapped
// workspace), a set-ID file would be a set-ID-root program on the host. openat2(2),
// whose mode a filter cannot read, fails with ENOSYS (libc and Go fall back to openat).
// mkdir(2) needs no rule: the kernel drops both bits from its mode (vfs_prepare_mode),
// and a new directory has S_ISGID only when its parent has (inode_init_owner). Without a
// listener the kernel fails these calls with ENOSYS: never a set-ID file. See inode(7),
// open(2), seccomp_unotify(2).
func NoSetIDRules() []Rule { return noSetID("notify", "") }

// NoSetIDDenyRules are NoSetIDRules for a filter nobody answers (gosbx seccomp export,
// for bwrap): the same calls fail with EPERM.
func NoSetIDDenyRules() []Rule { return noSetID("errno", "EPERM") }

func noSetID(action, errno string) []Rule {
	const why = "no set-user-ID or set-group-ID files: in a root caller's workspace they would be set-ID root on the host"
	const oTmpfile = 0x400000 // __O_TMPFILE; O_TMPFILE adds O_DIRECTORY
	var rules []Rule
	for _, bit := range []uint64{unix.S_ISUID, unix.S_ISGID} {
		mode := func(i uint) Arg { return Arg{Index: i, Op: "masked_eq", Mask: bit, Value: bit} }
		for _, c := range []struct {
			name string
			mode uint
		}{{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"creat", 1}, {"mknod", 1}, {"mknodat", 2}} {
			rules = append(rules, Rule{Syscalls: []string{c.name}, Action: action, Errno: errno, Args: []Arg{mode(c.mode)}, Comment: why})
		}
		for _, c := range []struct {
			name        string
			flags, mode uint
		}{{"open", 1, 2}, {"openat", 2, 3}} {
			for _, create := range []uint64{unix.O_CREAT, oTmpfile} {
				rules = append(rules, Rule{Syscalls: []string{c.name}, Action: action, Errno: errno, Comment: why,
					Args: []Arg{{Index: c.flags, Op: "masked_eq", Mask: create, Value: create}, mode(c.mode)}})
			}
		}
	}
	return append(rules, Rule{Syscalls: []string{"openat2"}, Action: "errno", Errno: "ENOSYS",
		Comment: "openat2 passes its mode in memory a filter cannot read: ENOSYS makes callers fall back to openat"})
}
