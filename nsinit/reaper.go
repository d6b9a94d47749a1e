package nsinit

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
)

// reap is pid 1 of the sandbox once the command runs: it forwards signals to the
// command, reaps every zombie, and when the command ends reports its wait status and
// exits, which makes the kernel kill whatever else is left in the pid namespace
// (background jobs, daemons). It never returns.
//
// Reaping is a blocking wait4(2) loop rather than a SIGCHLD handler: a signal can be
// coalesced or dropped from a full channel, a child's exit cannot.
func reap(w syncWriter, pid int) {
	go func() {
		for sig := range sigc {
			if isForwarded(sig) {
				unix.Kill(pid, sig.(unix.Signal))
			}
		}
	}()
	select {
	case <-acked:
	case <-launcherGone:
	}
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		gone := isClosed(launcherGone)
		if err != nil {
			if gone {
				cleanUpAlone()
			}
			// ECHILD cannot happen while the command is unreaped; leave as killed.
			os.Exit(ExitKilled)
		}
		if got == pid && !gone {
			w.send(message{Type: msgExit, Status: int(ws)})
			os.Exit(exitCode(ws))
		}
		if gone {
			unix.Kill(-1, unix.SIGKILL) // whatever the command started since; reaped above until none is left
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// cleanUpAlone removes, once every other process of the sandbox is gone, what must not
// outlive the sandbox (runCleanup), in place of the launcher, which was killed
// before its Wait could (SIGKILL of gosbx exec). The init sees the host paths at the
// same places (the binds keep their paths). Nobody is left to report to.
func cleanUpAlone() {
	if fault.Check("init cleanup") != nil {
		return // as when the command crippled pid 1 (the journal test)
	}
	if cleanupSpec != nil {
		runCleanup(cleanupSpec)
	}
}

// exitCode maps a wait status as a shell does: the exit status, or 128+S for a signal.
func exitCode(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func isForwarded(sig os.Signal) bool {
	for _, f := range forwarded {
		if f == sig {
			return true
		}
	}
	return false
}

// dropThreadCaps clears the capability sets of every thread of the init. Capabilities
// are per thread: the init dropped them (and its bounding set) on the thread that forks
// the command, but the Go runtime's other threads kept those the init had in the
// sandbox's user namespace, and neither the fork nor the reaper needs any. Done right
// before the fork, so that no thread of pid 1 holds one once the command runs
// (syscall.AllThreadsSyscall: one stop-the-world; dropping never fails).
func dropThreadCaps() {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
}
