package rawplan

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The raw child: a CLONE_VM child of the launcher, on a stack in its plan's arena, that
// runs the plan (Run) and never executes a Go program. Every signal is blocked in it
// from the clone on (runtime_BeforeFork blocked them on the cloning thread, and the
// child never restores the mask): a Go handler must never run on it, which shares the
// launcher's memory and thread's g; what it waits for it reads from descriptors. It
// shares no descriptor table (no CLONE_FILES): what the launcher opens or closes after
// the clone is its own, and what it inherited at the clone it has at the same numbers.

// StackSize is the size of a raw child's stack, in the arena: its calls are nosplit and
// shallow.
const StackSize = 16 << 10

// ExitFailed is the raw child's exit status when an op failed (nsinit.ExitSetup).
const ExitFailed = 125

// cloneRaw is clone_amd64.s.
func cloneRaw(nr, a1, a2 uintptr, st *State) (pid, errno uintptr)

// Declared in package syscall for forkExec, implemented by the runtime; kept linknamed
// for outside use (go.dev/issue/67401).
//
//go:linkname runtime_BeforeFork syscall.runtime_BeforeFork
func runtime_BeforeFork()

//go:linkname runtime_AfterFork syscall.runtime_AfterFork
func runtime_AfterFork()

// Start clones the raw child of p with the clone(2) flags flags (namespaces; CLONE_VM
// and SIGCHLD are added) and returns its pid, or the clone's errno. report is the
// descriptor, in the child's table, that the child writes a failure on (a Record
// RecFailed: the op's index and errno; ReadReport); the caller closes its own copy of the write end
// after Start. The plan's arena must stay mapped until the child has exited: Free only
// after wait4(2) reaped it.
func Start(p *Plan, flags uintptr, report int) (int, error) {
	if err := p.Finish(); err != nil {
		return 0, err
	}
	top, err := p.Stack(StackSize)
	if err != nil {
		return 0, err
	}
	p.St.Report = int64(report)
	// Not locked to its thread (runtime.LockOSThread would start the runtime's template
	// thread, one more thread for the launch): runtime_BeforeFork holds the goroutine on
	// its thread until runtime_AfterFork, as syscall.forkExec relies on, and nothing the
	// child does depends on the thread after the clone. A caller that needs the cloning
	// thread's credentials locks it itself (nsinit's asHostID).
	syscall.ForkLock.Lock()
	runtime_BeforeFork()
	pid, errno := cloneRaw(unix.SYS_CLONE, flags|unix.CLONE_VM|uintptr(unix.SIGCHLD), top, p.St)
	runtime_AfterFork()
	syscall.ForkLock.Unlock()
	if errno != 0 {
		return 0, fmt.Errorf("clone: %w", syscall.Errno(errno))
	}
	return int(pid), nil
}

// ErrNoReport is a report pipe that gave neither end of file nor a whole report.
var ErrNoReport = errors.New("the raw child's report was cut short")

// ReadReport reads the raw child's report on fd (the read end of its report pipe;
// closed here): ok at end of file (the plan ran to its end, or executed a program),
// else the failed op's step and error (Plan.Failure).
func ReadReport(p *Plan, fd int) (step string, err error) {
	defer unix.Close(fd)
	r, n := ReadRecord(fd)
	if n == 0 {
		return "", nil
	}
	return p.Failed(r, n)
}

// ReadRecord reads one Record from fd and returns it and how many bytes came (0 at end
// of file, recSize for a whole record).
func ReadRecord(fd int) (Record, int) {
	var b [recSize]byte
	n := 0
	for n < len(b) {
		m, rerr := unix.Read(fd, b[n:])
		if rerr == unix.EINTR {
			continue
		}
		if rerr != nil || m == 0 {
			break
		}
		n += m
	}
	return *(*Record)(unsafe.Pointer(&b[0])), n
}

// Failed is the step and error of a RecFailed record (n its bytes read), or of a report
// cut short.
func (p *Plan) Failed(r Record, n int) (string, error) {
	if n != recSize || r.Kind != RecFailed {
		return "raw init", ErrNoReport
	}
	return p.Failure(int(r.A), unix.Errno(r.B))
}

// childEntry is where cloneRaw's child starts: nosplit throughout, no allocation, no
// pointer stored. It runs the plan; on failure it writes the op's index and errno on
// the report descriptor and exits ExitFailed; a plan run to its end exits 0.
//
//go:nosplit
//go:norace
func childEntry(st *State) {
	i, errno := Run(st, &TheKernel)
	code := uintptr(0)
	if i >= 0 {
		st.Rep = Record{Kind: RecFailed, A: uint32(i), B: uint64(errno)}
		syscall.RawSyscall(unix.SYS_WRITE, uintptr(st.Report), uintptr(unsafe.Pointer(&st.Rep)), recSize)
		code = ExitFailed
	}
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, code, 0, 0)
	}
}
