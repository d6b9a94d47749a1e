package seccomp

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// childEnv makes the test binary run kernelChild instead of the tests: the filter
// cannot be removed once loaded, so it is loaded in a re-executed child.
const childEnv = "GOSBX_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "agent":
		os.Exit(kernelChild())
	case "attach":
		os.Exit(attachChild())
	}
	os.Exit(m.Run())
}

// kernelArgRules are policy rules on 32-bit arguments the child loads before the
// agent profile's: compared as the kernel reads them, high bits set or not.
func kernelArgRules() []Rule {
	return []Rule{
		{Syscalls: []string{"kill"}, Action: "errno", Errno: "EPERM", Args: []Arg{{Index: 1, Op: "eq", Value: 9}}},
		{Syscalls: []string{"getpriority"}, Action: "errno", Errno: "EACCES", Args: []Arg{{Index: 0, Op: "lt", Value: 0}}},
	}
}

// kernelChild sets no_new_privs, loads the agent program (after kernelArgRules) with Load and prints one
// "name result" line per probe (result: an errno name, or "ok"). Exit 0 when every
// probe ran; 2 when the filter could not be set up.
func kernelChild() int {
	fail := func(f string, a ...any) int { fmt.Fprintf(os.Stderr, f+"\n", a...); return 2 }
	s, err := (&Config{Rules: kernelArgRules()}).Spec()
	if err != nil {
		return fail("spec: %v", err)
	}
	p, err := Compile(s)
	if err != nil {
		return fail("compile: %v", err)
	}
	// a pty, opened before the filter: TIOCSTI on its slave
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail("ptmx: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return fail("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		return fail("TIOCGPTN: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fail("pts: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fail("no_new_privs: %v", err)
	}
	if err := Load(p); err != nil {
		return fail("load: %v", err)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	res := func(name string, errno unix.Errno) {
		r := "ok"
		if errno != 0 {
			r = unix.ErrnoName(errno)
		}
		fmt.Fprintf(out, "%s %s\n", name, r)
	}
	sys := func(name string, trap uintptr, a ...uintptr) {
		var args [6]uintptr
		copy(args[:], a)
		_, _, e := unix.Syscall6(trap, args[0], args[1], args[2], args[3], args[4], args[5])
		res(name, e)
	}
	b := []byte("x")
	pb := uintptr(unsafe.Pointer(&b[0]))
	sfd, bad := pts.Fd(), ^uintptr(0)

	res("unshare_newuser", errnoOf(unix.Unshare(unix.CLONE_NEWUSER)))
	sys("keyctl", unix.SYS_KEYCTL, unix.KEYCTL_GET_KEYRING_ID, uintptr(0xfffffffd) /* KEY_SPEC_SESSION_KEYRING */, 0)
	res("mount", errnoOf(unix.Mount("none", "/nonexistent-gosbx-test", "tmpfs", 0, "")))
	sys("clone3", unix.SYS_CLONE3, 0, 0)
	sys("io_uring_setup", unix.SYS_IO_URING_SETUP, 0, 0)
	sys("ioctl_tiocsti_pty", unix.SYS_IOCTL, sfd, unix.TIOCSTI, pb)
	sys("ioctl_tiocsti_hi_pty", unix.SYS_IOCTL, sfd, unix.TIOCSTI|0xdeadbeef00000000, pb)
	sys("ioctl_tiocsti_badfd", unix.SYS_IOCTL, bad, unix.TIOCSTI, pb)
	sys("ioctl_tioclinux_badfd", unix.SYS_IOCTL, bad, unix.TIOCLINUX, pb)
	ldisc := uintptr(unsafe.Pointer(new(int32)))
	sys("ioctl_tiocsetd_pty", unix.SYS_IOCTL, sfd, unix.TIOCSETD, ldisc)
	sys("ioctl_tiocsetd_hi_pty", unix.SYS_IOCTL, sfd, unix.TIOCSETD|0xdeadbeef00000000, ldisc)
	_, err = unix.IoctlGetTermios(int(sfd), unix.TCGETS)
	res("ioctl_tcgets_pty", errnoOf(err))
	// CLONE_FS with CLONE_NEWUSER is EINVAL in the kernel: nothing is created when the
	// filter lets it through, and EPERM proves the filter answered.
	sys("clone_newuser", unix.SYS_CLONE, unix.CLONE_NEWUSER|unix.CLONE_FS)
	sys("clone_newns", unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS)
	// CLONE_THREAD without CLONE_SIGHAND is EINVAL: a plain clone reaches the kernel.
	sys("clone_plain", unix.SYS_CLONE, unix.CLONE_THREAD)
	sys("personality_query", unix.SYS_PERSONALITY, 0xffffffff)
	sys("personality_addr_no_randomize", unix.SYS_PERSONALITY, 0x0040000)
	sys("getpid", unix.SYS_GETPID)
	// no such pid: ESRCH when the call reaches the kernel
	sys("kill_sig9", unix.SYS_KILL, 0x7ffffffe, 9)
	sys("kill_sig9_hi", unix.SYS_KILL, 0x7ffffffe, 9|1<<32)
	sys("kill_sig15", unix.SYS_KILL, 0x7ffffffe, 15)
	// which -1 (an int) is EINVAL in the kernel; 1<<32 is PRIO_PROCESS
	sys("getpriority_neg", unix.SYS_GETPRIORITY, 0xffffffff, 0)
	sys("getpriority_neg_hi", unix.SYS_GETPRIORITY, 0x1_ffffffff, 0)
	sys("getpriority_hi_zero", unix.SYS_GETPRIORITY, 1<<32, 0)
	// the filter is on every thread (TSYNC), not only the one that loaded it
	done := make(chan unix.Errno)
	go func() {
		runtime.LockOSThread() // a fresh thread, never unlocked: it exits with the goroutine
		done <- errnoOf(unix.Unshare(unix.CLONE_NEWNS))
	}()
	res("unshare_other_thread", <-done)
	return 0
}

func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO
}

// The agent program, loaded into a real kernel, answers with the intended errnos.
func TestLoadAgentKernel(t *testing.T) {
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no /dev/ptmx")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=agent")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = v
		}
	}
	for name, want := range map[string]string{
		"unshare_newuser":               "EPERM",
		"keyctl":                        "EPERM",
		"mount":                         "EPERM",
		"clone3":                        "ENOSYS",
		"io_uring_setup":                "EPERM",
		"ioctl_tiocsti_pty":             "EPERM",
		"ioctl_tiocsti_hi_pty":          "EPERM",
		"ioctl_tiocsti_badfd":           "EPERM", // EBADF without the filter
		"ioctl_tioclinux_badfd":         "EPERM", // EBADF without the filter
		"ioctl_tiocsetd_pty":            "EPERM", // ok without the filter (N_TTY over N_TTY)
		"ioctl_tiocsetd_hi_pty":         "EPERM",
		"ioctl_tcgets_pty":              "ok",
		"clone_newuser":                 "EPERM", // EINVAL without the filter
		"clone_newns":                   "EPERM", // EINVAL without the filter
		"clone_plain":                   "EINVAL",
		"personality_query":             "ok",
		"personality_addr_no_randomize": "EPERM",
		"getpid":                        "ok",
		"kill_sig9":                     "EPERM",
		"kill_sig9_hi":                  "EPERM", // ESRCH when compared on 64 bits
		"kill_sig15":                    "ESRCH",
		"getpriority_neg":               "EACCES",
		"getpriority_neg_hi":            "EACCES", // EINVAL when compared on 64 bits
		"getpriority_hi_zero":           "ok",
		"unshare_other_thread":          "EPERM",
	} {
		if g, ok := got[name]; !ok {
			t.Errorf("%s: no result (stdout %q)", name, out)
		} else if g != want {
			t.Errorf("%s: %s, want %s", name, g, want)
		}
	}
}

// An empty program loads nothing (and does not fail).
func TestLoadEmpty(t *testing.T) {
	if err := Load(nil); err != nil {
		t.Errorf("Load(nil): %v", err)
	}
}
