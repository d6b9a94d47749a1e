package nsinit

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
)

// The raw init's clone: a CLONE_VM child of the launcher, on a stack in its plan's
// arena, that runs the plan (Run) and never executes a Go program. Every signal is
// blocked in it from the clone on (runtime_BeforeFork blocked them on the cloning
// thread, and the child never restores the mask): a Go handler must never run on it,
// which shares the launcher's memory and thread's g; what the raw init waits for it
// reads from descriptors (a signalfd among them). It shares no descriptor table
// (no CLONE_FILES): what the launcher opens or closes after the clone is its own.

// rawStack is the size of the raw child's stack, in the arena: its calls are nosplit
// and shallow.
const rawStack = 16 << 10

// cloneRaw is clone_amd64.s.
func cloneRaw(nr, a1, a2 uintptr, st *rawplan.State) (pid, errno uintptr)

// startRaw clones the raw child of p with the namespaces of flags (CLONE_NEW*; CLONE_VM
// and SIGCHLD are added) and returns its pid. report is the descriptor, in the child's
// table, that the child writes a failure on (8 bytes: the op's index and errno,
// readRawReport); the caller closes its own copy of the write end after the clone.
// The plan's arena must stay mapped until the child has exited.
func startRaw(p *rawplan.Plan, flags uintptr, report int) (int, error) {
	if err := p.Finish(); err != nil {
		return 0, err
	}
	top, err := p.Stack(rawStack)
	if err != nil {
		return 0, err
	}
	p.St.Report = int64(report)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	syscall.ForkLock.Lock()
	runtime_BeforeFork()
	pid, errno := cloneRaw(unix.SYS_CLONE, flags|unix.CLONE_VM|uintptr(unix.SIGCHLD), top, p.St)
	runtime_AfterFork()
	syscall.ForkLock.Unlock()
	if errno != 0 {
		return 0, &stepError{"clone", fmt.Errorf("clone: %w", syscall.Errno(errno))}
	}
	return int(pid), nil
}

// readRawReport reads the raw child's report on fd (the read end of its report pipe;
// closed here): nil at end of file (the plan ran to its end or executed), else the
// error of the op that failed, as the Go init's step would return it (Plan.failure).
func readRawReport(p *rawplan.Plan, fd int) error {
	var b [8]byte
	n, err := readFull(fd, b[:])
	unix.Close(fd)
	if n == 0 && err == nil {
		return nil
	}
	if err != nil || n != 8 {
		return &stepError{"raw init", fmt.Errorf("a report of %d bytes (%v)", n, err)}
	}
	i := int(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
	e := unix.Errno(uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24)
	step, err := p.Failure(i, e)
	return &stepError{step, err}
}

// rawChildEntry is where cloneRaw's child starts: nosplit throughout, no allocation,
// no pointer stored. It runs the plan; on failure it writes the op's index and errno on
// the report descriptor and exits 125 (ExitSetup); a plan run to its end exits 0.
//
//go:nosplit
//go:norace
func rawChildEntry(st *rawplan.State) {
	i, errno := rawplan.Run(st, &rawplan.TheKernel)
	code := uintptr(0)
	if i >= 0 {
		st.Rep[0], st.Rep[1] = int32(i), int32(errno)
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(st.Report), uintptr(unsafe.Pointer(&st.Rep[0])), 8)
		code = ExitSetup
	}
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, code, 0, 0)
	}
}
