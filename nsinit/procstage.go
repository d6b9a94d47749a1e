package nsinit

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/lazy"
	"github.com/gosbx/gosbx/seccomp"
)

// The process stage: what happens to one command between the fork by the sandbox init
// and its execve(2), in the forked child (README.md, "The boundary", row processes). Capabilities,
// no_new_privs and the seccomp filter belong to the calling thread, and rlimits, the
// working directory, the umask and the session to the calling process: done in the
// child, they change nothing of pid 1, which can then start another command.
//
// A forked Go child cannot run Go code (one thread of a multi-threaded runtime; no
// allocation, no stack growth, no write barrier). So the steps are compiled by pid 1
// into a plan, a flat list of system calls whose arguments point into memory the plan
// owns, and the child only walks it (runSteps, nosplit) and executes. This is the shape
// of syscall.forkAndExecInChild, with the steps gosbx needs; it costs a vfork-style
// clone (forkRun), not a Go runtime start. The commands' pid 1 (planHolder) is started
// the same way.

// opKind says how runSteps judges one call.
type opKind uint8

const (
	opCall    opKind = iota // fails on any errno
	opAbsCwd                // getcwd(2): fails unless the path starts with '/' ("(unreachable)" otherwise)
	opFail                  // a fault-injection test build: the step fails here
	opKeepFd                // the call returns a descriptor: sent by the next call (procPlan.fdmsg)
	opUseKept               // the call's first argument is the descriptor opKeepFd kept
)

// procOp is one system call of a plan.
type procOp struct {
	step int // index into procPlan.steps
	kind opKind
	nr   uintptr
	a    [6]uintptr
	what string // the call as an error names it: "setrlimit RLIMIT_NOFILE=1024:1024"
}

// procPlan is one command's process stage (or the holder's), ready to run in a forked
// child. Every
// pointer argument of ops points into the plan (or into memory it keeps alive), which
// pid 1 keeps until the child has executed or failed.
type procPlan struct {
	steps []string
	ops   []procOp

	path       string
	pathp      *byte
	argv, envv []*byte
	rlimits    []unix.Rlimit
	capHdr     unix.CapUserHeader
	capData    [2]unix.CapUserData
	fprog      unix.SockFprog
	filter     seccomp.Program
	cwd        [unix.PathMax]byte
	dir        *os.File        // the working directory, opened inside the root by pid 1
	sigset     [1]uint64       // the mask set: the holder's all, a command's none
	dfl        kernelSigaction // SIG_DFL
	report     [2]int32        // written by the child on failure: op index, errno
	stack      []byte          // the child's stack (forkRun)
	reportFd   int
	pooled     bool // stack is takeStack's, for releaseStack
	holder     bool
	listen     [2]int // the set-ID listener's socket pair, pid 1's end and the child's (setid.go)

	// the holder's procfs context, sent to pid 1 (planHolder)
	fsType [8]byte
	empty  [1]byte
	slash  [2]byte // "/": the holder's working directory
	fdmsg  fdMessage
	iobyte [1]byte
	iov    unix.Iovec
	msg    unix.Msghdr
}

// fdMessage is the control message of one descriptor (SCM_RIGHTS, unix(7)): its
// unix.CmsgSpace(4) bytes.
type fdMessage struct {
	hdr unix.Cmsghdr
	fd  int32
	_   int32
}

func (p *procPlan) begin(name string) int {
	p.steps = append(p.steps, name)
	i := len(p.steps) - 1
	if fault.Check(name) != nil {
		p.ops = append(p.ops, procOp{step: i, kind: opFail, what: "fault injected"})
	}
	return i
}

func (p *procPlan) call(step int, what string, nr uintptr, a ...uintptr) {
	op := procOp{step: step, nr: nr, what: what}
	copy(op.a[:], a)
	p.ops = append(p.ops, op)
}

func ptr[T any](v *T) uintptr { return uintptr(unsafe.Pointer(v)) }

// planProcess compiles the process stage of proc, in this order: a new session, the
// rlimits, every descriptor but 0-2 close-on-exec, the working directory (dir, opened
// inside the root; getcwd(2) must then see it inside the root: CVE-2024-21626), the
// umask, every capability dropped with the no-root securebits locked and no_new_privs
// set (caps), the seccomp filter (last: a denied call would stop what follows), and
// execve(2) of path. It takes ownership of dir. Errors name a malformed rlimit.
func planProcess(proc *specs.Process, filter seccomp.Program, dir *os.File, path string) (*procPlan, error) {
	// room for every step and call (≈ 70 with the bounding set's 41): a session's init
	// plans each command anew, and growing the slices was a third of it
	p := &procPlan{path: path, dir: dir, filter: filter,
		steps: make([]string, 0, 24), ops: make([]procOp, 0, 40+lastCap()+len(childResetSignals())+len(proc.Rlimits))}
	var err error
	if p.pathp, err = unix.BytePtrFromString(path); err != nil {
		return nil, &stepError{"exec", fmt.Errorf("path %q: %w", path, err)}
	}
	if p.argv, err = syscall.SlicePtrFromStrings(proc.Args); err != nil {
		return nil, &stepError{"exec", fmt.Errorf("args: %w", err)}
	}
	if p.envv, err = syscall.SlicePtrFromStrings(proc.Env); err != nil {
		return nil, &stepError{"exec", fmt.Errorf("env: %w", err)}
	}
	res, err := parseRlimits(proc.Rlimits)
	if err != nil {
		return nil, &stepError{"rlimits", err}
	}
	p.rlimits = make([]unix.Rlimit, len(res))

	// Every signal is blocked on the forking thread while it clones (the runtime's fork
	// hook), and so in the child; every handler of this process (the redirected ones'
	// sigRedirect, the runtime's) is set back to the default before the command's
	// empty mask is set (childsig.go: no runtime fork hook in the child), so that no
	// handler of the init's can run in the child (on the init's thread's signal stack)
	// and the command starts with an empty mask and no handler of the init's.
	resets := childResetSignals()
	s := p.begin("signal mask")
	for _, sig := range resets {
		p.call(s, "rt_sigaction "+signalName(sig)+" SIG_DFL", unix.SYS_RT_SIGACTION, uintptr(sig), ptr(&p.dfl), 0, 8)
	}
	p.call(s, "unblock every signal", unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, ptr(&p.sigset[0]), 0, 8)

	s = p.begin("setsid")
	p.call(s, "setsid", unix.SYS_SETSID)

	s = p.begin("rlimits")
	for i, r := range proc.Rlimits {
		p.rlimits[i] = unix.Rlimit{Cur: r.Soft, Max: r.Hard}
		p.call(s, fmt.Sprintf("setrlimit %s=%d:%d", r.Type, r.Soft, r.Hard),
			unix.SYS_PRLIMIT64, 0, uintptr(res[i]), ptr(&p.rlimits[i]), 0)
	}

	// Everything but stdio is close-on-exec: the command inherits 0-2 and nothing else.
	s = p.begin("close fds")
	p.call(s, "close_range 3-max CLOSE_RANGE_CLOEXEC", unix.SYS_CLOSE_RANGE, 3, ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC)

	s = p.begin("chdir")
	p.call(s, "fchdir "+proc.Cwd, unix.SYS_FCHDIR, dir.Fd())
	p.ops = append(p.ops, procOp{step: s, kind: opAbsCwd, nr: unix.SYS_GETCWD,
		a: [6]uintptr{ptr(&p.cwd[0]), uintptr(len(p.cwd))}, what: "getcwd: working directory " + proc.Cwd + " is outside the new root"})

	// The command keeps the caller's umask (inherited through the launcher) unless the
	// spec names one.
	if u := proc.User.Umask; u != nil {
		s = p.begin("umask")
		p.call(s, fmt.Sprintf("umask %#o", *u), unix.SYS_UMASK, uintptr(*u))
	}

	// caps.DropAll's calls: the bounding set first (needs CAP_SETPCAP), then the locked
	// no-root securebits, the ambient set, the other sets, and no_new_privs.
	s = p.begin("drop capabilities")
	for c := 0; c <= lastCap(); c++ {
		p.call(s, "", unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c)) // what: describeOp
	}
	p.call(s, "set securebits", unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, caps.LockedNoRoot)
	p.call(s, "clear the ambient set", unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL)
	p.capHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	p.call(s, "capset to empty", unix.SYS_CAPSET, ptr(&p.capHdr), ptr(&p.capData[0]))
	p.call(s, "set no_new_privs", unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1)

	if len(filter) > 0 {
		// One thread: no SECCOMP_FILTER_FLAG_TSYNC.
		s = p.begin("seccomp")
		p.fprog = unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
		if filter.Notifies() {
			// a user-notification listener, sent to pid 1 before execve (setid.go)
			if err := p.planListener(s); err != nil {
				return nil, &stepError{"seccomp", err}
			}
		} else {
			p.call(s, "seccomp(SECCOMP_SET_MODE_FILTER)", unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, ptr(&p.fprog))
		}
	}

	s = p.begin("exec")
	p.call(s, "execve "+path, unix.SYS_EXECVE, ptr(p.pathp), ptr(&p.argv[0]), ptr(&p.envv[0]))
	return p, nil
}

// planHolder compiles the commands' pid 1, the holder: a procfs context made (fsopen(2):
// a procfs is the pid namespace of the process that opens it) and sent to pid 1 on
// sock, for the root's /proc; the no-root securebits, every capability dropped and
// no_new_privs (execve(2) then grants none, as uid 0 too), every signal blocked (SIGCHLD
// is waited for), every descriptor close-on-exec; then the holder program (holderELF)
// executed from exe, which reaps what the commands leave orphaned, for good.
func planHolder(sock, exe int) *procPlan {
	p := &procPlan{path: "gosbx-pid1"}
	s := p.begin("pid 1 of the commands")
	copy(p.fsType[:], "proc")
	p.ops = append(p.ops, procOp{step: s, kind: opKeepFd, nr: unix.SYS_FSOPEN,
		a: [6]uintptr{ptr(&p.fsType[0]), unix.FSOPEN_CLOEXEC}, what: "fsopen proc"})
	p.sendKept(s, sock, 'P', "send the procfs context")
	p.call(s, "set securebits", unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, caps.LockedNoRoot)
	p.capHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	p.call(s, "capset to empty", unix.SYS_CAPSET, ptr(&p.capHdr), ptr(&p.capData[0]))
	p.call(s, "set no_new_privs", unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1)
	p.sigset[0] = ^uint64(0)
	p.call(s, "block every signal", unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, ptr(&p.sigset[0]), 0, 8)
	p.call(s, "close_range 0-max CLOSE_RANGE_CLOEXEC", unix.SYS_CLOSE_RANGE, 0, ^uintptr(0), unix.CLOSE_RANGE_CLOEXEC)
	// its working directory the launcher's no more: the old root, which the init's
	// pivot_root(2) then moves to the sandbox's root with the holder's root (it moves
	// every process of the mount namespace whose root or working directory is the old
	// root), so that pid 1 of the commands holds nothing of the host's tree
	copy(p.slash[:], "/")
	p.call(s, "chdir /", unix.SYS_CHDIR, ptr(&p.slash[0]))
	p.pathp = &p.empty[0] // "": execveat(2) AT_EMPTY_PATH
	p.argv, _ = syscall.SlicePtrFromStrings([]string{p.path})
	p.envv = []*byte{nil}
	p.call(s, "execveat the holder (a memfd: vm.memfd_noexec=2 forbids it)", unix.SYS_EXECVEAT, uintptr(exe),
		ptr(p.pathp), ptr(&p.argv[0]), ptr(&p.envv[0]), unix.AT_EMPTY_PATH)
	return p
}

// sendKept adds the sendmsg(2) of the descriptor the previous opKeepFd call returned
// (SCM_RIGHTS, one byte b) on sock.
func (p *procPlan) sendKept(s, sock int, b byte, what string) {
	p.fdmsg.hdr = unix.Cmsghdr{Level: unix.SOL_SOCKET, Type: unix.SCM_RIGHTS}
	p.fdmsg.hdr.SetLen(unix.CmsgLen(4))
	p.iobyte[0] = b
	p.iov.Base = &p.iobyte[0]
	p.iov.SetLen(1)
	p.msg.Iov = &p.iov
	p.msg.Iovlen = 1
	p.msg.Control = (*byte)(unsafe.Pointer(&p.fdmsg))
	p.msg.SetControllen(int(unsafe.Sizeof(p.fdmsg)))
	p.call(s, what, unix.SYS_SENDMSG, uintptr(sock), ptr(&p.msg), 0)
}

// parseRlimits maps each rlimit's runtime-spec type to its resource number.
func parseRlimits(rl []specs.POSIXRlimit) ([]int, error) {
	res := make([]int, len(rl))
	for i, r := range rl {
		n, ok := rlimitResource(r.Type)
		if !ok {
			return nil, fmt.Errorf("unknown rlimit %q", r.Type)
		}
		res[i] = n
	}
	return res, nil
}

// rawSys is the process stage's system-call seam: the kernel in the forked child
// (kernelSys), a recording double in the unit tests. An implementation that runs in the
// child must be nosplit and must neither allocate nor store a pointer.
type rawSys interface {
	do(op *procOp) (uintptr, unix.Errno)
}

type kernelSys struct{}

var theKernel kernelSys

//go:nosplit
//go:norace
func (*kernelSys) do(op *procOp) (uintptr, unix.Errno) {
	r, _, e := syscall.RawSyscall6(op.nr, op.a[0], op.a[1], op.a[2], op.a[3], op.a[4], op.a[5])
	return r, unix.Errno(e)
}

// runSteps runs p's calls in order through k and returns the index of the call that
// failed and its errno, or -1 once all succeeded. It runs in the forked child: nosplit,
// no allocation.
//
//go:nosplit
//go:norace
func runSteps(p *procPlan, k rawSys) (int, unix.Errno) {
	for i := 0; i < len(p.ops); i++ {
		op := &p.ops[i]
		if op.kind == opFail {
			return i, unix.EPERM
		}
		if op.kind == opUseKept {
			op.a[0] = uintptr(p.fdmsg.fd)
		}
		r, errno := k.do(op)
		if errno == 0 && op.kind == opAbsCwd && (r == 0 || p.cwd[0] != '/') {
			errno = unix.ENOENT
		}
		if errno == 0 && op.kind == opKeepFd {
			p.fdmsg.fd = int32(r)
		}
		if errno != 0 {
			return i, errno
		}
	}
	return -1, 0
}

// Declared in package syscall for forkExec, implemented by the runtime; the runtime
// keeps them linknamed for outside use (go.dev/issue/67401). Its third,
// runtime_AfterForkInChild, is not called: it reads the parent thread's g (childsig.go).
//
//go:linkname runtime_BeforeFork syscall.runtime_BeforeFork
func runtime_BeforeFork()

//go:linkname runtime_AfterFork syscall.runtime_AfterFork
func runtime_AfterFork()

// forkPlan forks the calling thread, runs p in the child and there executes the
// command; it returns the child's pid once the command executed, or the error that
// stopped it: a *stepError naming the step, or an *execError when execve(2) itself
// failed. The child reports on a close-on-exec pipe: end of file is a successful
// execve.
func forkPlan(p *procPlan) (int, error) {
	pid, report, err := startPlan(p, forkWait)
	if p.listen[1] > 0 {
		unix.Close(p.listen[1]) // the child's end: the child has its own copy
		p.listen[1] = -1
	}
	if err != nil {
		p.closeListen()
		return 0, err
	}
	err = awaitPlan(p, pid, report)
	if p.listen[0] > 0 {
		p.serveListener(err) // setid.go
	}
	return pid, err
}

// startPlan forks the child of p (mode: how, forkRun) and returns its pid and the read
// end of its report pipe, for awaitPlan or awaitCommand.
func startPlan(p *procPlan, mode forkMode) (int, int, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return 0, -1, &stepError{p.steps[0], fmt.Errorf("pipe2: %w", err)}
	}
	pid, errno := forkRun(p, fds[1], mode)
	unix.Close(fds[1])
	if errno != 0 {
		p.releaseStack()
		unix.Close(fds[0])
		return 0, -1, &stepError{p.steps[0], fmt.Errorf("clone: %w", errno)}
	}
	return pid, fds[0], nil
}

// awaitPlan reads the report of p's child pid on report (and closes it): nil once a
// command executed or the holder is set up; otherwise the child is reaped and the
// error names the step that failed.
func awaitPlan(p *procPlan, pid, report int) error {
	var rep [8]byte
	n, err := readFull(report, rep[:])
	unix.Close(report)
	if p.dir != nil {
		p.dir.Close()
	}
	if n == 0 && err == nil {
		runtime.KeepAlive(p)
		return nil // end of file: executed
	}
	var ws unix.WaitStatus
	for {
		if _, werr := unix.Wait4(pid, &ws, 0, nil); werr != unix.EINTR {
			break
		}
	}
	runtime.KeepAlive(p)
	if err != nil || n != 8 {
		return &stepError{p.steps[0], fmt.Errorf("the forked child ended without a report (%s)", describe(ws))}
	}
	return p.reportError(rep)
}

// reportError is the error a child of p reported (childMain): the failed call's index
// and errno, little-endian int32s.
func (p *procPlan) reportError(rep [8]byte) error {
	i := int(int32(uint32(rep[0]) | uint32(rep[1])<<8 | uint32(rep[2])<<16 | uint32(rep[3])<<24))
	e := unix.Errno(uint32(rep[4]) | uint32(rep[5])<<8 | uint32(rep[6])<<16 | uint32(rep[7])<<24)
	if i < 0 || i >= len(p.ops) {
		return &stepError{p.steps[0], fmt.Errorf("the forked child reported call %d of %d", i, len(p.ops))}
	}
	op := p.ops[i]
	name := p.steps[op.step]
	switch {
	case op.kind == opFail:
		return &stepError{name, fault.Check(name)}
	case name == "exec":
		return &execError{path: p.path, errno: e}
	}
	return &stepError{name, fmt.Errorf("%s: %w", describeOp(op), e)}
}

// describeOp is op.what, or for a bounding-set drop (left blank: 41 strings a launch)
// the capability's.
func describeOp(op procOp) string {
	if op.what == "" && op.nr == unix.SYS_PRCTL && op.a[0] == unix.PR_CAPBSET_DROP {
		return "drop capability " + strconv.Itoa(int(op.a[1])) + " from the bounding set"
	}
	return op.what
}

// lastCap is caps.LastCap, probed once per process.
func lastCap() int { return lastCapOnce.Get(caps.LastCap) }

var lastCapOnce lazy.Value[int]

func readFull(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Read(fd, b[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// forkMode is how forkRun runs a child.
type forkMode int

const (
	// forkWait: a command's child, while the calling thread waits (CLONE_VFORK) until
	// it executes or fails, on commandStack
	forkWait forkMode = iota
	// forkAsync: a command's child beside the calling thread, on a stack of its own
	// (takeStack) until it executes or exits (awaitCommand)
	forkAsync
	// forkHolder: the holder beside pid 1, on a stack its plan keeps
	forkHolder
)

// forkRun clones the calling process as syscall.forkExec does, between the runtime's
// fork hooks, but with the child on a stack of its own (cloneVM): memory is shared
// (CLONE_VM), so no page table is copied. In forkWait a command's child runs while this
// thread waits (CLONE_VFORK) until it executes or fails; otherwise the child runs beside
// pid 1 (the holder until it executes the holder program, a session's command until it
// executes), on a stack the plan keeps, touching nothing but its plan and its own
// signal state. In the parent it returns the child's pid.
//
//go:norace
//go:noinline
func forkRun(p *procPlan, report int, mode forkMode) (int, syscall.Errno) {
	p.reportFd, p.holder = report, mode == forkHolder
	flags := uintptr(unix.CLONE_VM | unix.SIGCHLD)
	if mode == forkWait {
		flags |= unix.CLONE_VFORK
	}
	syscall.ForkLock.Lock()
	switch mode {
	case forkHolder:
		p.stack = make([]byte, childStack)
	case forkAsync:
		p.stack, p.pooled = takeStack(), true
	default:
		if commandStack == nil {
			commandStack = make([]byte, childStack)
		}
		p.stack = commandStack
	}
	top := uintptr(unsafe.Pointer(&p.stack[len(p.stack)-1])) &^ 15
	runtime_BeforeFork()
	pid, errno := cloneVM(flags, top, p)
	runtime_AfterFork()
	syscall.ForkLock.Unlock()
	return int(pid), syscall.Errno(errno)
}

// childStack is the size of a forked child's stack: its calls are nosplit and shallow.
const childStack = 32 << 10

// commandStack is every forkWait child's stack (a one-shot init's command), made at the
// first: the child runs while its parent thread waits (CLONE_VFORK) and ForkLock is held, so no two use
// it at once, and none once forkRun has returned. A stack per fork was 32 KiB of
// garbage a command in a session's init, which keeps it (no collection below a 4 MiB
// heap; docs/decisions.md, "Memory: idle sessions"). Guarded by syscall.ForkLock.
var commandStack []byte

// cloneVM is clone_amd64.s.
func cloneVM(flags, stack uintptr, p *procPlan) (pid, errno uintptr)

// childEntry is where cloneVM's child starts, on its own stack, with the parent's
// memory and, in its TLS, whatever g the parent thread runs now: nosplit throughout,
// no allocation, no pointer stored, nothing read through g (the runtime's
// runtime_AfterForkInChild reads getg().m, unsound once the parent thread runs on:
// childsig.go). Every signal stays blocked (runtime_BeforeFork blocked them) until
// the plan has reset every handler and set its own mask.
//
//go:nosplit
//go:norace
func childEntry(p *procPlan) {
	childMain(p, p.reportFd)
}

// childMain is the forked child: it runs the plan, which ends in execve(2); on failure
// it writes the failed call's index and errno on report and exits 125.
//
//go:nosplit
//go:norace
func childMain(p *procPlan, report int) {
	i, errno := runSteps(p, &theKernel)
	p.report[0], p.report[1] = int32(i), int32(errno)
	syscall.RawSyscall(unix.SYS_WRITE, uintptr(report), uintptr(unsafe.Pointer(&p.report[0])), 8)
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, ExitSetup, 0, 0)
	}
}
