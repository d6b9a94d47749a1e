package nsinit

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// startInitAs is startInit for a root caller's sandbox whose command runs as host id
// hid: the clone is made from a thread whose effective uid is hid, so that the new
// user namespace is owned by hid, not by root. The kernel charges its per-user counts
// (inotify instances and watches, fanotify groups and marks, user namespaces, mqueue
// bytes, …: kernel/ucount.c, inc_ucount walks up to the namespace's owner) to the
// owner of each user namespace on the way up: with root as the owner, a sandbox spent
// host root's max_user_instances; with hid, it spends its own host id's.
//
// Credentials are per thread in the kernel: on a locked thread of its own, only the
// effective uid changes (setresuid(2) as a raw system call; Go's syscall.Setresuid
// changes every thread), the real and saved uids stay 0, and the effective
// capabilities the change clears are raised again from the permitted set (capset(2)):
// the id maps the launcher writes after the clone, from this thread, need CAP_SETGID.
// The thread goes back to euid 0 (which restores its effective set), or, should that
// fail, is never unlocked, so the runtime ends it with its goroutine.
func startInitAs(hid uint32, argv []string, attr *syscall.ProcAttr, cpus *unix.CPUSet) (*initProc, error) {
	var p *initProc
	err := asHostID(hid, func() (err error) {
		p, err = startInit(argv, attr, cpus)
		return err
	})
	return p, err
}

// asHostID runs clone on a locked thread of its own whose effective uid is hid (see
// startInitAs), and returns its error or the one that kept it from running.
func asHostID(hid uint32, clone func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var caps [2]unix.CapUserData
		if err := unix.Capget(&hdr, &caps[0]); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("capget: %w", err)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(hid), ^uintptr(0)); e != 0 {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("setresuid(-1, %d, -1): %w", hid, e)
			return
		}
		var err error
		raised := caps
		for i := range raised {
			raised[i].Effective = raised[i].Permitted
		}
		if err = unix.Capset(&hdr, &raised[0]); err != nil {
			err = fmt.Errorf("capset after setting the effective uid to %d: %w", hid, err)
		} else {
			err = clone()
		}
		// back to euid 0: the kernel sets the effective set to the permitted one; then
		// exactly the effective set the thread had
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e == 0 &&
			unix.Capset(&hdr, &caps[0]) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// rawAsHostID runs clone, a rawplan.StartAs, on a goroutine of its own that ends after
// it: should StartAs fail to put its thread's credentials back, it leaves the goroutine
// locked to the thread, which the runtime then ends with the goroutine, as asHostID's
// does. Unlike asHostID's, the goroutine is not locked otherwise: StartAs holds its
// thread only for its window (no template thread for the launch).
func rawAsHostID(hid uint32, clone func() error) error {
	done := make(chan error, 1)
	go func() { done <- clone() }()
	return <-done
}
