package nsinit

import (
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/lazy"
)

// A command's forked child resets, as its plan's first calls, every signal handler this
// process has to the default, instead of calling the runtime's
// syscall.runtime_AfterForkInChild: that hook reads the forking thread's g
// (msigrestore(getg().m.sigmask)), which is only sound while the parent thread waits
// (CLONE_VFORK). A session's command child runs beside the init's thread (forkAsync):
// by then the goroutine that cloned it may be parked, its g.m nil, and the child died
// with SIGSEGV at m.sigmask in about 1 of 75 runs of 400 starts
// (TestSessionShortCommands; docs/decisions.md, "A command cannot stall its session").
// The plan's own rt_sigprocmask then sets the command's mask, so the child needs
// nothing of the runtime's.

// childResetSignals are the signals whose disposition a command's child sets to
// SIG_DFL before it unblocks any: the init's redirected ones, then every other signal
// this process catches (the Go runtime's handlers, installed before main; an inherited
// SIG_IGN stays ignored, as execve(2) keeps it). Read once per process with
// rt_sigaction(2): the runtime installs its handlers at start, and the init adds no
// handler later but sigRedirect's, on redirected.
func childResetSignals() []unix.Signal { return resetSignals.Get(readResetSignals) }

var resetSignals lazy.Value[[]unix.Signal]

func readResetSignals() []unix.Signal {
	out := append([]unix.Signal(nil), redirected[:]...)
	for sig := unix.Signal(1); sig <= 64; sig++ {
		if sig == unix.SIGKILL || sig == unix.SIGSTOP || isRedirected(sig) {
			continue
		}
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			continue // not a signal this kernel knows
		}
		if old.handler != 0 && old.handler != 1 { // neither SIG_DFL nor SIG_IGN
			out = append(out, sig)
		}
	}
	return out
}

func isRedirected(sig unix.Signal) bool {
	for _, r := range redirected {
		if r == sig {
			return true
		}
	}
	return false
}

// signalName is sig's name (SIGURG), or "signal N" for one without (the real-time ones).
func signalName(sig unix.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(sig))
}
