package nsinit

import (
	"fmt"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// reap is pid 1 of the sandbox once the command runs: it forwards signals to the
// command, and when the command ends ends the rest of the sandbox (endRest: the holder
// killed, and with it every process of the commands' pid namespace, all reaped), then
// reports the command's wait status and exits. The report is the launcher's sign that
// no process of the sandbox but pid 1 is left: it returns then, without waiting for pid
// 1's own exit and the kernel's teardown of the namespaces. It never returns.
//
// It waits on this thread, in poll(2), on three descriptors: sigfd (catchSignals), the
// life pipe (the launcher's acknowledgement of the exec report, then its end:
// lifeEnded), and a pidfd of the command, readable once it has exited (watched only
// after the acknowledgement, when one comes (noAck false): the launcher reads the
// command's host pid before it may be reaped). No goroutine and no other thread takes part. The command is the init's only
// child besides the holder (what it starts is the holder's, in the commands' pid
// namespace; what it makes the init's own with CLONE_PARENT is reaped on every wake and at
// least once a second, reapOthers), so its end is what the init waits for; a pidfd, unlike SIGCHLD, cannot be
// taken by another thread of the runtime or coalesced.
func reap(w syncWriter, pid, holder, sigfd int, noAck bool) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		// cannot happen on the kernels gosbx runs on (5.9 and later): without a way to
		// see the command's end, end the sandbox; the launcher sees no exit report
		endRest(holder)
		os.Exit(ExitKilled)
	}
	acked, gone := noAck, false
	fixThreads() // those made during setup (initthreads.go)
	fds := make([]unix.PollFd, 0, 3)
	for exited := false; !exited; {
		fds = append(fds[:0], unix.PollFd{Fd: int32(sigfd), Events: unix.POLLIN})
		if !gone {
			fds = append(fds, unix.PollFd{Fd: lifeFd, Events: unix.POLLIN})
		}
		if acked || gone {
			fds = append(fds, unix.PollFd{Fd: int32(pidfd), Events: unix.POLLIN})
		}
		// a timeout, to reap what the command made the init's child (below)
		n, err := unix.Poll(fds, 1000)
		if err == nil {
			reapOthers(pid, holder)
			fixThreads() // any the runtime made since
		}
		if n == 0 && err == nil {
			continue
		}
		if err != nil {
			if err == unix.EINTR || err == unix.ENOMEM {
				continue
			}
			endRest(holder) // EFAULT, EINVAL: cannot happen
			os.Exit(ExitKilled)
		}
		for _, f := range fds {
			if f.Revents == 0 {
				continue
			}
			switch int(f.Fd) {
			case sigfd:
				forwardSignals(sigfd, pid)
			case lifeFd:
				// the acknowledgement; any other byte before it is not the protocol: as
				// if the launcher were gone
				if b, ok := readLife(); !ok || (!acked && b != lifeAck) {
					lifeEnded() // every process of the sandbox killed
					gone = true
				} else {
					acked = true
				}
			case pidfd:
				exited = true
			}
		}
	}
	if !gone {
		// The command has exited, but a zombie traced by another process of the sandbox
		// is the tracer's to wait for first (ptrace(2)): wait4 would block for as long as
		// the tracer lives, and nothing here would watch the launcher's end meanwhile
		// (review8 F1). The sandbox ends with its command anyway: the holder killed
		// first, every tracer in the commands' pid namespace dies with it and the zombie
		// is the init's to reap, its wait status as the command left it. What is still
		// running is counted first, for the caller's note (leftRunning).
		left, names := leftRunning()
		if holder > 0 {
			unix.Kill(holder, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(pid, &ws, 0, nil)
			if err == nil {
				break
			}
			if err != unix.EINTR {
				endRest(holder) // ECHILD cannot happen while the command is unreaped
				os.Exit(ExitKilled)
			}
		}
		endRest(holder)
		w.send(message{Type: msgExit, Status: int(ws), Left: left, Names: names})
		if fault.Check("slow exit") != nil {
			// a test build: pid 1 lingers after its report, so that a test sees
			// what would outlive gosbx exec were the report sent before endRest
			time.Sleep(time.Second)
		}
		os.Exit(exitCode(ws))
	}
	// The launcher is gone: every process was killed (lifeEnded); once all are reaped,
	// the cleanup the launcher owed.
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			cleanUpAlone()
			os.Exit(ExitKilled)
		}
		unix.Kill(-1, unix.SIGKILL) // whatever the command started since
	}
}

// reapOthers reaps every exited child of the init but the command and the holder,
// without waiting: a command can make its children the init's (clone(2) with
// CLONE_PARENT), and their zombies would hold pids of the sandbox's limits until the
// command ends (review8 F2). waitid(2) with WNOWAIT names one exited child without
// reaping it; the command is left for its exit report (the launcher may still read its
// host pid), so the walk stops there.
func reapOthers(cmd, holder int) {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil); err != nil {
			return
		}
		// si_pid: after si_signo, si_errno, si_code and the union's alignment (x86-64)
		child := int(*(*int32)(unsafe.Add(unsafe.Pointer(&info), 16)))
		if child <= 0 || child == cmd || child == holder {
			return
		}
		var ws unix.WaitStatus
		unix.Wait4(child, &ws, unix.WNOHANG|unix.WALL, nil)
	}
}

// endRest kills the commands' pid 1 (the holder) and reaps every child of the init
// until none is left. The holder is pid 1 of the pid namespace every command and its
// descendants live in (the init's own namespace holds no other process): the kernel
// kills every process of that namespace, nested ones included, when it dies, and
// completes the holder's exit only once all of them are reaped (pid_namespaces(7)). So
// when wait4(2) says ECHILD no process of the sandbox but the init is left, whatever
// the command left behind (a background job ignoring SIGTERM, a daemon). The init may
// kill the holder without a capability: it runs as the holder's ids, and SIGKILL from
// an ancestor namespace reaches a namespace's init (signal(7)).
func endRest(holder int) {
	if holder > 0 {
		unix.Kill(holder, unix.SIGKILL)
	}
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, unix.WALL, nil)
		if err == unix.ECHILD {
			return
		}
		if err != nil && err != unix.EINTR {
			// cannot happen with children left; the init's exit kills what is left, and
			// the launcher, seeing no report, waits for that exit
			os.Exit(ExitKilled)
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
// same places (the binds keep their paths). Nobody is left to report to. A session's
// init runs only what stays true whoever changed the state since its start
// (cleanupLasting); the journal names the rest to the user at the next launch.
func cleanUpAlone() {
	if fault.Check("init cleanup") != nil {
		return // as when the command crippled pid 1 (the journal test)
	}
	switch {
	case cleanupSpec == nil:
	case cleanupLasting:
		cleanup.RunLasting(cleanupSpec.Cleanup)
	default:
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
	// threadCapsRefused has made sure, before any process of the sandbox existed, that
	// this call is not refused
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
}

// threadCapsRefused is an error when syscall.AllThreadsSyscall is refused in this
// program: dropThreadCaps could then not clear the capabilities of the init's other
// threads, which would keep them in the sandbox's user namespace for the sandbox's life.
// The launch stops instead (fail closed). The runtime refuses it exactly when its iscgo
// is set (runtime/os_linux.go: ENOTSUP with runtime/cgo, a panic with a stand-in that
// sets iscgo without it, as ebitengine/purego's internal/fakecgo does in a CGO_ENABLED=0
// build), so that is what is read: no build tag (the stand-in has none), no call (a
// probe of a program without cgo would cost a stop-the-world of every thread).
func threadCapsRefused() error {
	if runtimeIscgo {
		return fmt.Errorf("the init cannot drop the capabilities of its other threads: syscall.AllThreadsSyscall: %w in a program linked with a cgo runtime (runtime/cgo, or a stand-in such as purego's fakecgo): build it with CGO_ENABLED=0 and without such a package", unix.ENOTSUP)
	}
	return nil
}

// runtimeIscgo is the runtime's iscgo: set when a cgo runtime is linked (runtime/cgo or
// a stand-in). The runtime keeps it open to linkname (runtime/cgo.go).
//
//go:linkname runtimeIscgo runtime.iscgo
var runtimeIscgo bool
