// Command seccompprobe tries each system call the default ("agent") seccomp profile of
// gosbx denies and prints one "name result" line for each: the errno name, or "ok".
// The arguments are chosen so that the kernel itself, reached without the filter,
// mostly answers something else (EFAULT, EINVAL, EBADF, …): an EPERM then comes from
// the filter. Built by integration/seccomp_test.go with CGO_ENABLED=0.
//
//	seccompprobe          the list
//	seccompprobe int80    getpid through int 0x80 (i386 ABI): prints "int80 PID"
//	seccompprobe nest     runs readlink in a new user namespace made by clone(2): "nest ok" when it was made
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func int80() int64

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "int80":
			fmt.Printf("int80 %d\n", int80())
			return
		case "nest":
			nest()
			return
		}
		fmt.Fprintln(os.Stderr, "usage: seccompprobe [int80|nest]")
		os.Exit(2)
	}
	list()
}

func nest() {
	self, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		fmt.Println("nest", err)
		return
	}
	cmd := exec.Command("/bin/readlink", "/proc/self/ns/user")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	out, err := cmd.Output()
	switch {
	case err != nil:
		fmt.Printf("nest %v\n", errName(err))
	case strings.TrimSpace(string(out)) == self:
		fmt.Println("nest same-namespace")
	default:
		fmt.Println("nest ok") // a nested user namespace was made
	}
}

func errName(err error) string {
	for err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return unix.ErrnoName(e)
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err.Error()
		}
		err = u.Unwrap()
	}
	return "ok"
}

const (
	bad   = ^uintptr(0) // -1: no such fd
	badp  = uintptr(1)  // a pointer that faults
	flags = 0xffffffff  // every flag: EINVAL where flags are checked first
	hi    = 0xdeadbeef << 32
)

func list() {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	res := func(name string, e syscall.Errno) {
		r := "ok"
		if e != 0 {
			r = unix.ErrnoName(e)
		}
		fmt.Fprintf(out, "%s %s\n", name, r)
	}
	sys := func(name string, trap uintptr, a ...uintptr) {
		var v [6]uintptr
		copy(v[:], a)
		_, _, e := unix.Syscall6(trap, v[0], v[1], v[2], v[3], v[4], v[5])
		res(name, e)
	}
	// the mount tree
	sys("mount", unix.SYS_MOUNT, badp, badp, 0, 0, 0)
	sys("umount2", unix.SYS_UMOUNT2, badp, flags)
	sys("pivot_root", unix.SYS_PIVOT_ROOT, badp, badp)
	sys("move_mount", unix.SYS_MOVE_MOUNT, bad, badp, bad, badp, flags)
	sys("open_tree", unix.SYS_OPEN_TREE, bad, badp, flags)
	sys("open_tree_attr", unix.SYS_OPEN_TREE_ATTR, bad, badp, flags, 0, 0)
	sys("fsopen", unix.SYS_FSOPEN, badp, flags)
	sys("fsmount", unix.SYS_FSMOUNT, bad, flags, 0)
	sys("fsconfig", unix.SYS_FSCONFIG, bad, flags, 0, 0, 0)
	sys("fspick", unix.SYS_FSPICK, bad, badp, flags)
	sys("mount_setattr", unix.SYS_MOUNT_SETATTR, bad, badp, flags, 0, 0)
	// namespaces; a Go program is multi-threaded: unshare(CLONE_NEWUSER) is EINVAL there
	sys("setns", unix.SYS_SETNS, bad, 0)
	sys("unshare_newuser", unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	sys("unshare_newns", unix.SYS_UNSHARE, unix.CLONE_NEWNS)
	// clone with a namespace flag plus CLONE_THREAD without CLONE_SIGHAND (or CLONE_FS
	// with NEWUSER/NEWNS): EINVAL in the kernel, so nothing is ever created
	sys("clone_newuser", unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS)
	sys("clone_newns", unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS)
	sys("clone_newpid", unix.SYS_CLONE, unix.CLONE_NEWPID|unix.CLONE_THREAD)
	sys("clone_newnet", unix.SYS_CLONE, unix.CLONE_NEWNET|unix.CLONE_THREAD)
	sys("clone_newipc", unix.SYS_CLONE, unix.CLONE_NEWIPC|unix.CLONE_THREAD)
	sys("clone_newuts", unix.SYS_CLONE, unix.CLONE_NEWUTS|unix.CLONE_THREAD)
	sys("clone_newcgroup", unix.SYS_CLONE, unix.CLONE_NEWCGROUP|unix.CLONE_THREAD)
	sys("clone_plain", unix.SYS_CLONE, unix.CLONE_THREAD) // allowed: the kernel says EINVAL
	sys("clone3", unix.SYS_CLONE3, 0, 0)
	// keys
	sys("keyctl", unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd), 0)
	sys("add_key", unix.SYS_ADD_KEY, badp, badp, 0, 0, 0)
	sys("request_key", unix.SYS_REQUEST_KEY, badp, badp, 0, 0)
	// kernel attack surface
	sys("bpf", unix.SYS_BPF, flags, badp, 0)
	sys("perf_event_open", unix.SYS_PERF_EVENT_OPEN, badp, 0, bad, bad, 0)
	sys("userfaultfd", unix.SYS_USERFAULTFD, 1|0x2) // UFFD_USER_MODE_ONLY plus a bad flag
	sys("io_uring_setup", unix.SYS_IO_URING_SETUP, 0, badp)
	sys("io_uring_enter", unix.SYS_IO_URING_ENTER, bad, 0, 0, 0, 0, 0)
	sys("io_uring_register", unix.SYS_IO_URING_REGISTER, bad, 0, 0, 0)
	// kernels and modules
	sys("kexec_load", unix.SYS_KEXEC_LOAD, 0, 0, 0, flags)
	sys("kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, bad, bad, 0, 0, flags)
	sys("init_module", unix.SYS_INIT_MODULE, badp, 0, badp)
	sys("finit_module", unix.SYS_FINIT_MODULE, bad, badp, flags)
	sys("delete_module", unix.SYS_DELETE_MODULE, badp, 0)
	// file handles
	sys("open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, bad, badp, 0)
	sys("name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, bad, badp, badp, badp, flags)
	// host-wide state
	sys("acct", unix.SYS_ACCT, badp)
	sys("swapon", unix.SYS_SWAPON, badp, 0)
	sys("swapoff", unix.SYS_SWAPOFF, badp)
	sys("reboot", unix.SYS_REBOOT, 0, 0, 0, 0)
	sys("settimeofday", unix.SYS_SETTIMEOFDAY, 0, 0)
	sys("clock_settime", unix.SYS_CLOCK_SETTIME, flags, badp)
	sys("clock_adjtime", unix.SYS_CLOCK_ADJTIME, flags, badp)
	sys("adjtimex", unix.SYS_ADJTIMEX, badp)
	sys("syslog", unix.SYS_SYSLOG, 10, 0, 0) // SYSLOG_ACTION_SIZE_BUFFER
	sys("vhangup", unix.SYS_VHANGUP)
	sys("quotactl", unix.SYS_QUOTACTL, 0, badp, 0, 0)
	sys("quotactl_fd", unix.SYS_QUOTACTL_FD, bad, 0, 0, 0)
	sys("lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE, 0, 0, 0)
	// personality: the harmless values pass, the others not
	old, _, _ := unix.Syscall(unix.SYS_PERSONALITY, 0xffffffff, 0, 0)
	sys("personality_query", unix.SYS_PERSONALITY, 0xffffffff)
	sys("personality_linux", unix.SYS_PERSONALITY, 0)
	sys("personality_addr_no_randomize", unix.SYS_PERSONALITY, 0x0040000)
	sys("personality_read_implies_exec", unix.SYS_PERSONALITY, 0x0400000)
	unix.Syscall(unix.SYS_PERSONALITY, old, 0, 0)
	// terminal ioctls: on no fd (EBADF without the filter) and on a pty of our own
	b := []byte("x")
	pb := uintptr(unsafe.Pointer(&b[0]))
	sys("ioctl_tiocsti_badfd", unix.SYS_IOCTL, bad, unix.TIOCSTI, pb)
	sys("ioctl_tiocsti_hi_badfd", unix.SYS_IOCTL, bad, unix.TIOCSTI|hi, pb)
	sys("ioctl_tioclinux_badfd", unix.SYS_IOCTL, bad, unix.TIOCLINUX, pb)
	sys("ioctl_tioclinux_hi_badfd", unix.SYS_IOCTL, bad, unix.TIOCLINUX|hi, pb)
	if pts, err := openPty(); err != nil {
		fmt.Fprintf(out, "pty %v\n", err)
	} else {
		sys("ioctl_tiocsti_pty", unix.SYS_IOCTL, pts, unix.TIOCSTI, pb)
		sys("ioctl_tiocsti_hi_pty", unix.SYS_IOCTL, pts, unix.TIOCSTI|hi, pb)
		var t unix.Termios
		sys("ioctl_tcgets_pty", unix.SYS_IOCTL, pts, unix.TCGETS, uintptr(unsafe.Pointer(&t)))
	}
	// allowed
	sys("getpid", unix.SYS_GETPID)
	sys("getppid", unix.SYS_GETPPID)
	sys("ptrace", unix.SYS_PTRACE, unix.PTRACE_PEEKDATA, 0, 0, 0) // no such tracee: ESRCH
}

func openPty() (uintptr, error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		return 0, err
	}
	n, err := unix.IoctlGetInt(m, unix.TIOCGPTN)
	if err != nil {
		return 0, err
	}
	s, err := unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, err
	}
	return uintptr(s), nil
}
