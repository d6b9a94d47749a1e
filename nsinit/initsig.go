package nsinit

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The one-shot and pooled init's signals, without os/signal (docs/decisions.md,
// "Speed, fourth attempt: the init's signals"). os/signal costs the init a locked
// thread of its own (ensureSigM), a thread parked in signal_recv, and a handshake with
// the former per notified signal.
// Instead the launcher executes every init with initSignals blocked (forkExecInit), so
// that they stay pending and the reaper reads them from a signalfd(2) on the init's main
// thread, the thread it waits on anyway.
//
// The Go runtime keeps the start mask on every thread it makes, except for the signals
// it will not let a program block (runtime.blockableSig: those whose default is to kill
// or to crash, here SIGHUP, SIGINT, SIGTERM, SIGQUIT and SIGABRT), which it unblocks on
// each thread, its handler installed. A process-directed signal goes to a thread that
// does not block it: left so, those five would reach the runtime's handler, which (no
// channel notified) ends the process. So the init blocks them again on its main thread
// and gives them a handler of its own (sigRedirect, initsig_amd64.s), no Go code: it
// sends the signal to the main thread (tgkill(2)), where it stays pending for the
// signalfd. The others (SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT, SIGALRM and the job-control
// stops SIGTSTP, SIGTTIN, SIGTTOU) start blocked on every thread; the init unblocks them on all but the main one (initthreads.go), where they
// take the same way. A session's init keeps os/signal (Init): its signals are drained by a
// goroutine while its requests are served by others, and its one-off cost is paid once
// per session, not per command.

// initSignals are the signals an init catches: those it forwards to the command
// (forwarded) and SIGABRT, which it drops.
var initSignals = [...]unix.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM,
	unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGABRT}

// runtimeUnblocked are the initSignals the Go runtime unblocks on every thread it makes
// (runtime.blockableSig false: their default kills).
var runtimeUnblocked = [...]unix.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGABRT}

// redirected are the signals given sigRedirect: all of initSignals. The runtime unblocks
// five of them on every thread it makes (SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGABRT), and
// a program that links nsinit may ask os/signal for the others in a package's init
// (the init stage is that program again), which unblocks them on os/signal's thread and
// gives them the runtime's handler: each would be taken from the command there (review8
// F3). With sigRedirect on all, whichever thread takes one sends it on to the main thread.
var redirected = initSignals

// initSigMask is initSignals as a kernel sigset_t (bit n-1 for signal n).
func initSigMask() uint64 {
	var m uint64
	for _, s := range initSignals {
		m |= 1 << (uint(s) - 1)
	}
	return m
}

// The thread group and thread sigRedirect sends to (assembly reads them).
var redirectPid, redirectTid uint64

// redirectAddrs returns the addresses of sigRedirect and of its restorer
// (initsig_amd64.s).
func redirectAddrs() (handler, restorer uintptr)

// sigaction flags (asm-generic/signal-defs.h, x86's SA_RESTORER)
const (
	saOnStack  = 0x08000000 // on the thread's alternate stack: Go set one on every thread
	saRestart  = 0x10000000
	saRestorer = 0x04000000
)

// catchSignals makes the calling thread the one initSignals wait on, and returns a
// signalfd(2) of them (close-on-exec, non-blocking): they are blocked on this thread,
// and the redirected ones given sigRedirect. The calling thread must be locked
// (runtime.LockOSThread) for the life of the init. Errors name the system call.
func catchSignals() (int, error) {
	mask := initSigMask()
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0); e != 0 {
		return -1, fmt.Errorf("rt_sigprocmask: %w", e)
	}
	redirectPid, redirectTid = uint64(unix.Getpid()), uint64(unix.Gettid())
	h, r := redirectAddrs()
	// every signal blocked while it runs: it runs once per signal, and no other handler
	// interleaves with its tgkill
	act := kernelSigaction{handler: h, flags: saOnStack | saRestart | saRestorer, restorer: r, mask: ^uint64(0)}
	for _, s := range redirected {
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			return -1, fmt.Errorf("rt_sigaction %v: %w", s, e)
		}
	}
	fd, err := unix.Signalfd(-1, &unix.Sigset_t{Val: [16]uint64{mask}}, unix.SFD_CLOEXEC|unix.SFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("signalfd: %w", err)
	}
	return fd, nil
}

// forwardSignals reads every signal pending on sigfd and sends those in forwarded on
// (sendOn); the others, SIGABRT, are dropped.
func forwardSignals(sigfd, pid int) {
	var buf [8 * sizeofSiginfo]byte
	for {
		n, err := unix.Read(sigfd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: none left
		}
		for off := 0; off+sizeofSiginfo <= n; off += sizeofSiginfo {
			si := (*unix.SignalfdSiginfo)(unsafe.Pointer(&buf[off]))
			if sig := unix.Signal(si.Signo); isForwarded(sig) {
				sendOn(pid, sig)
			}
		}
	}
}

// sendOn passes a signal the launcher sent pid 1 on to the sandbox of a one-shot or
// pooled init, as a shell's job control and timeout(1) would to a job (docs/decisions.md,
// "Stopped commands and job control"):
//   - SIGTSTP, SIGTTIN, SIGTTOU (the launcher was stopped from its terminal, Ctrl-Z):
//     SIGSTOP to every process of the sandbox, kill(2) with pid -1 (all but pid 1 itself).
//     SIGSTOP, because a command may catch or ignore the others and read on from the
//     user's terminal while the user's shell owns it (review13 F8);
//   - SIGCONT: to every process of the sandbox, as a shell's fg/bg continues a whole job;
//   - SIGWINCH: to the command;
//   - any other: to the command, then SIGCONT to it, as timeout(1) and a shell's kill do:
//     a stopped command would otherwise keep a SIGTERM pending for good (review13 F1).
func sendOn(pid int, sig unix.Signal) {
	switch sig {
	case unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		unix.Kill(-1, unix.SIGSTOP)
	case unix.SIGCONT:
		unix.Kill(-1, unix.SIGCONT)
	case unix.SIGWINCH:
		unix.Kill(pid, sig)
	default:
		unix.Kill(pid, sig)
		unix.Kill(pid, unix.SIGCONT)
	}
}

// sizeofSiginfo is the size of struct signalfd_siginfo (signalfd(2)).
const sizeofSiginfo = int(unsafe.Sizeof(unix.SignalfdSiginfo{}))

// initProcs is the init's GOMAXPROCS setting, 1: an init of one command (one-shot or
// pooled) does its work and waits on its own thread (reap), and the runtime then starts
// fewer threads and touches less memory (USS under 1 MiB). A session's init too: at 2
// its runtime's monitor thread (sysmon) polled every 20 µs while one P sat in a system
// call and the other was idle, which was most of each command's run, 0.4 ms of CPU a
// command; its request loop waits in the netpoller (readFrameOn), so the reaper has
// the one P when a command exits (docs/decisions.md, "Speed, eighth attempt: the
// session path").
const initProcs = "GOMAXPROCS=1"

// goAhead is the life pipe's go-ahead for c's init (protocol.go): lifeGo when the exec
// report is to be acknowledged, because an Events callback reads the command's host pid
// (childPid), which must not be reaped before; lifeGoNoAck otherwise, so that the init
// reaps a short command without waiting for the launcher's round trip. A pooled init's
// go-ahead comes before its command's Cmd, and so its Events, is known: always
// acknowledged (pooled; its Cmd has ctl).
func (c *Cmd) goAhead(pooled bool) byte {
	if pooled || c.Events != nil {
		return lifeGo
	}
	return lifeGoNoAck
}
