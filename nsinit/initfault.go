package nsinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A one-shot or pooled init ignores the synchronous signals (fatalFromUser) that another
// process sends it before its command's fork, as os/signal's Ignore did before the init
// caught its signals without os/signal (docs/decisions.md, "The init's fault signals
// from another process"). The Go runtime crashes on a kill(2)'d SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGSTKFLT or SIGSYS it cannot notify: a host process allowed to
// signal the init (root, or the caller's uid) would end the launch with a runtime
// traceback. Only the signals no fault of the init's own raises are dropped: those
// whose si_code is SI_USER, SI_QUEUE, SI_TKILL or another code <= 0, which the kernel
// gives to signals sent by a process (kill(2), tgkill(2), rt_sigqueueinfo(2),
// pidfd_send_signal(2); siginfo.h); a fault's code is positive and reaches the
// runtime's handler as before (faultFilter, initsig_amd64.s). At "signal dispositions",
// right before the fork, defaultFaultSignals sets them to SIG_DFL, as before.

// faultNext holds, by signal number, the handler faultFilter passes a fault on to: the
// one that was installed before it (the Go runtime's). Written before faultFilter is
// installed for that signal, read only by it.
var faultNext [65]uintptr

// faultFilterAddr returns the address of faultFilter (initsig_amd64.s).
func faultFilterAddr() uintptr

// filterFaultSignals installs faultFilter for each of fatalFromUser that has a handler
// (the runtime installs one on each at start; a signal whose disposition is SIG_DFL or
// SIG_IGN is left so), keeping the handler's flags, restorer and mask, so that a real
// fault runs it as the kernel would have. Errors name the system call and the signal.
func filterFaultSignals() error {
	for _, s := range fatalFromUser {
		sig := uintptr(s.(unix.Signal))
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			return fmt.Errorf("rt_sigaction %v: %w", s, e)
		}
		if old.handler <= 1 { // SIG_DFL, SIG_IGN
			continue
		}
		faultNext[sig] = old.handler
		act := old
		act.handler = faultFilterAddr()
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return fmt.Errorf("rt_sigaction %v: %w", s, e)
		}
	}
	return nil
}
