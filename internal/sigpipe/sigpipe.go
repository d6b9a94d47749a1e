// Package sigpipe catches signals without os/signal: a handler with no Go code writes
// each caught signal's number to a pipe, which the caller reads as a pollable file.
//
// os/signal costs a launcher two threads it never otherwise needs (docs/decisions.md,
// "Speed, seventh attempt: the launcher's threads"): ensureSigM's locked thread and the
// thread blocked in the runtime's signal_recv, plus a handshake with the former for each
// signal notified. Here the signal reaches the pipe from whichever thread took it (the
// self-pipe trick; signal-safety(7): write(2) is async-signal-safe), and the reader
// waits in the runtime's poller as any other pollable file does.
package sigpipe

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeFd is the pipe's write end, written by sigWrite (sigpipe_amd64.s).
var writeFd int64

// addrs returns the addresses of sigWrite and of its restorer (sigpipe_amd64.s).
func addrs() (handler, restorer uintptr)

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on amd64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigaction flags (asm-generic/signal-defs.h, x86's SA_RESTORER)
const (
	saOnStack  = 0x08000000 // on the thread's alternate stack: the runtime set one on every thread
	saRestart  = 0x10000000
	saRestorer = 0x04000000
)

// Catch gives each of sigs a handler that writes its number (one byte) to a new pipe,
// and returns the pipe's read end: a non-blocking, close-on-exec *os.File the runtime
// polls. It replaces the runtime's own handler (or SIG_IGN: as signal.Notify, a signal
// the process was started with ignored is caught too), for the life of the process;
// call it once, before any thread could need the signals, and never ask os/signal for
// the same signals afterwards (the runtime would not put its handler back). sigs are
// also unblocked on the calling thread, so that a caller's inherited blocked mask does
// not keep them from the process (os/signal's thread unblocks what it is notified of).
// A signal that finds the pipe full (65536 pending) is dropped. Errors name the system
// call (pipe2, rt_sigaction, rt_sigprocmask).
func Catch(sigs ...unix.Signal) (*os.File, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("pipe2 for the caught signals: %w", err)
	}
	writeFd = int64(p[1])
	h, r := addrs()
	var set uint64
	// every signal blocked while it runs: no other handler interleaves with its write
	act := kernelSigaction{handler: h, flags: saOnStack | saRestart | saRestorer, restorer: r, mask: ^uint64(0)}
	for _, s := range sigs {
		set |= 1 << (uint(s) - 1)
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
			// the handlers set so far stay, writing to a pipe nobody reads: the caller
			// stops the launch
			return nil, fmt.Errorf("rt_sigaction %v: %w", s, e)
		}
	}
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, uintptr(unsafe.Pointer(&set)), 0, 8, 0, 0); e != 0 {
		return nil, fmt.Errorf("rt_sigprocmask: %w", e)
	}
	return os.NewFile(uintptr(p[0]), "caught signals"), nil
}

// Read returns the signals caught since the last Read, in the order they came, waiting
// for one if none is pending (in the runtime's poller). buf holds the pipe's bytes: at
// most len(buf) signals a call. An error is the pipe's (os.ErrClosed once closed).
func Read(f *os.File, buf []byte) ([]unix.Signal, error) {
	n, err := f.Read(buf)
	if n <= 0 {
		return nil, err
	}
	sigs := make([]unix.Signal, n)
	for i, b := range buf[:n] {
		sigs[i] = unix.Signal(b)
	}
	return sigs, nil
}
