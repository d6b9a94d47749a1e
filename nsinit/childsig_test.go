package nsinit

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestChildResetSignals: every signal this process has a handler for (read here on its
// own) is reset by a command's child before it unblocks any, the redirected ones first;
// SIGKILL and SIGSTOP are never named, and the Go runtime's own (SIGURG, SIGSEGV) are.
// A handler left would run in the child on the init's thread's signal stack.
func TestChildResetSignals(t *testing.T) {
	got := childResetSignals()
	in := map[unix.Signal]bool{}
	for _, s := range got {
		if in[s] {
			t.Errorf("%v listed twice", s)
		}
		in[s] = true
	}
	for i, s := range redirected {
		if got[i] != s {
			t.Fatalf("reset %d is %v, want the redirected %v first", i, got[i], s)
		}
	}
	for sig := unix.Signal(1); sig <= 64; sig++ {
		var old kernelSigaction
		if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
			continue
		}
		if old.handler > 1 && !in[sig] {
			t.Errorf("%s has a handler in this process but is not reset in the child", signalName(sig))
		}
	}
	for _, s := range []unix.Signal{unix.SIGKILL, unix.SIGSTOP} {
		if in[s] {
			t.Errorf("%v listed", s)
		}
	}
	for _, s := range []unix.Signal{unix.SIGURG, unix.SIGSEGV} {
		if !in[s] {
			t.Errorf("the runtime's %v not listed", s)
		}
	}
}
