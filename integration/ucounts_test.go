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

// For a root caller the owner is the host id its command runs as; for uid 0 without
// CAP_SYS_ADMIN, whose command stays uid 0, an id of the same range taken for the
// sandbox alone.
func TestRootCallerPerUserCounts(t *testing.T) {
	requireBinary(t)
	for _, c := range []caller{rootCaller, rootNoAdmin} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			perUserCounts(t, newSandbox(t, c))
		})
	}
}

func perUserCounts(t *testing.T, s *sandbox) {
	ctx := s.limitCtx(runLimit)
	sr := s.startStatus(ctx, "--nofile", "8192", "--", python, "-c", exhaustScript)
	defer func() { sr.cmd.Process.Kill(); sr.cmd.Wait() }()
	first := sr.next(20 * time.Second)
	hostUID, mapped := num(first, "host-uid")
	if mapped != (len(s.c.setpriv) == 0) {
		t.Fatalf("first status line %v: host-uid present %v, want it only for a root caller", first, mapped)
	}
	// the sandbox's user namespace is owned by its host id, or one of the range
	// (ioctl_ns(2) NS_GET_OWNER_UID)
	initPid, _ := num(first, "child-pid")
	var owner uint32
	if fd, err := unix.Open("/proc/"+strconv.FormatInt(initPid, 10)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		t.Errorf("open the sandbox's user namespace: %v", err)
	} else {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.NS_GET_OWNER_UID, uintptr(unsafe.Pointer(&owner)))
		unix.Close(fd)
		switch {
		case e != 0:
			t.Errorf("NS_GET_OWNER_UID: %v", e)
		case mapped && int64(owner) != hostUID:
			t.Errorf("the sandbox's user namespace is owned by uid %d; want its host id %d", owner, hostUID)
		case owner < rootIDBase || owner >= rootIDBase+rootIDCount:
			t.Errorf("the sandbox's user namespace is owned by uid %d; want an id of the range %d:%d", owner, rootIDBase, rootIDCount)
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
	sr.cmd.Wait()
	noLockLeft(t, int64(owner)) // the owner id is free again once the sandbox has ended
}
