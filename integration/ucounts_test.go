package integration

// Issue 15 item 4: a root caller's sandbox is charged to its own host id for the
// kernel's per-user counts (inotify instances, fanotify groups, …), not to host root:
// the kernel charges the user that owns the sandbox's user namespace (kernel/ucount.c).
// Checked from the host: while a sandbox holds all it can, host root can still make one.

import (
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const exhaustScript = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
def exhaust(make):
    fds = []
    while len(fds) < 4096:
        fd = make()
        if fd < 0:
            return len(fds), ctypes.get_errno()
        fds.append(fd)
    return len(fds), 0
ino = exhaust(lambda: libc.inotify_init1(0))
fan = exhaust(lambda: libc.fanotify_init(0x200, 0))  # FAN_CLASS_NOTIF | FAN_REPORT_FID
print(ino[0], ino[1], fan[0], fan[1], flush=True)
sys.stdin.read()
`

func TestRootCallerPerUserCounts(t *testing.T) {
	s := newRootSandbox(t)
	ctx := s.limitCtx(runLimit)
	sr := s.startStatus(ctx, "--nofile", "8192", "--", python, "-c", exhaustScript)
	defer func() { sr.cmd.Process.Kill(); sr.cmd.Wait() }()
	first := sr.next(20 * time.Second)
	hostUID, ok := num(first, "host-uid")
	if !ok {
		t.Fatalf("first status line %v: no host-uid, the launch was not mapped", first)
	}
	// the sandbox's user namespace is owned by its host id (ioctl_ns(2) NS_GET_OWNER_UID)
	initPid, _ := num(first, "child-pid")
	if fd, err := unix.Open("/proc/"+strconv.FormatInt(initPid, 10)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		t.Errorf("open the sandbox's user namespace: %v", err)
	} else {
		var owner uint32
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.NS_GET_OWNER_UID, uintptr(unsafe.Pointer(&owner)))
		unix.Close(fd)
		if e != 0 || int64(owner) != hostUID {
			t.Errorf("the sandbox's user namespace is owned by uid %d (%v); want its host id %d", owner, e, hostUID)
		}
	}
	line, err := sr.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("the sandbox's report: %v (stderr %q)", err, sr.stderr)
	}
	f := strings.Fields(line)
	if len(f) != 4 {
		t.Fatalf("report %q", line)
	}
	inotify, _ := strconv.Atoi(f[0])
	fanotify, _ := strconv.Atoi(f[2])
	t.Logf("the sandbox made %s inotify instances (then errno %s), %s fanotify groups (then errno %s)", f[0], f[1], f[2], f[3])
	if inotify == 0 {
		t.Fatalf("the sandbox could make no inotify instance: %q", line)
	}
	// While the sandbox holds all it could make: host root still can.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Errorf("host root's inotify_init1 failed while the sandbox holds %d instances: %v (charged to root)", inotify, err)
	} else {
		unix.Close(fd)
	}
	if fanotify > 0 {
		fd, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_REPORT_FID|unix.FAN_CLOEXEC, 0)
		if err != nil {
			t.Errorf("host root's fanotify_init failed while the sandbox holds %d groups: %v (charged to root)", fanotify, err)
		} else {
			unix.Close(fd)
		}
	}
	sr.stdin.Close()
}
