package nsinit

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
)

// The init's clone without a copy of the launcher. syscall.ForkExec cannot share the
// launcher's memory with a child that makes a user namespace (its CLONE_VM|CLONE_VFORK
// child would wait for id maps that its suspended parent must write), so it forks: the
// kernel copies every page table of a multi-threaded Go process, and both sides then
// take copy-on-write faults and TLB shootdowns (~1 ms of CPU per launch here, issue 20).
// Here the init is cloned with CLONE_VM and without CLONE_VFORK, onto a small stack of
// its own (cloneInit, clone_amd64.s), as the process stage clones the holder: no page
// table is copied. The child runs a plan compiled by the parent, a flat list of system
// calls (initOp), nosplit, allocating nothing and storing no pointer, and ends in
// execve(2) of /proc/self/exe, which gives it a memory of its own. The steps are those
// of syscall.forkAndExecInChild1 for the SysProcAttr the launcher uses, in its order:
// every signal blocked; PR_SET_KEEPCAPS (for the ambient capabilities); wait until the
// parent has written the id maps; setsid; every signal the launcher handles set back to
// its default, then the launcher thread's signal mask; setgroups, setgid, setuid;
// the ambient capabilities raised; the descriptors moved to their numbers; execve.
// Unlike ForkExec the child starts with the launcher's RLIMIT_NOFILE as Go raised it
// (soft = hard - 1, which the init's own runtime then keeps): the command got that
// limit before too, from the init's runtime.

// initOpKind says how the child runs and judges one call.
type initOpKind uint8

const (
	initCall       initOpKind = iota // fails on any errno
	initReadOne                      // read(2) of one byte: end of file fails (EPIPE)
	initSetDefault                   // rt_sigaction(2) to SIG_DFL, the old action read into initPlan.old
	initIfIgnored                    // rt_sigaction(2) back to SIG_IGN, only when initPlan.old was SIG_IGN
	initCapGet                       // capget(2), then initPlan.capAdd or'ed into permitted and inheritable
	initMoveReport                   // dup3(2) of the report pipe above the places: initPlan.report follows it once done
	initFail                         // a step made to fail (internal/fault)
)

// initOp is one system call of the child's plan; step indexes initSteps.
type initOp struct {
	kind initOpKind
	step uint8
	nr   uintptr
	a    [6]uintptr
}

// initSteps name the child's steps in the errors the parent returns.
var initSteps = [...]string{
	"block signals", "keep capabilities", "wait for the id maps", "setsid",
	"reset signal handlers", "restore the signal mask", "setgroups", "setgid", "setuid",
	"ambient capabilities", "move descriptors", "execve /proc/self/exe",
}

const (
	stepBlock uint8 = iota
	stepKeepCaps
	stepMaps
	stepSetsid
	stepHandlers
	stepMask
	stepGroups
	stepGid
	stepUid
	stepAmbient
	stepFds
	stepExec
)

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on amd64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// cloneArgs is struct clone_args (clone3(2), CLONE_ARGS_SIZE_VER2).
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
}

// initPlan is the child's whole world: every pointer argument of ops points into it or
// into memory it keeps alive until the child has executed or failed.
type initPlan struct {
	ops      []initOp
	report   int      // the close-on-exec pipe the child writes a failure on (its number now: the child moves it)
	rep      [2]int32 // op index and errno, written on failure
	oneByte  [1]byte  // the id maps' go-ahead
	all      uint64   // every signal
	mask     uint64   // the cloning thread's signal mask, restored before execve
	dfl, ign kernelSigaction
	old      kernelSigaction
	groups   []uint32
	capHdr   unix.CapUserHeader
	capData  [2]unix.CapUserData
	capAdd   [2]uint32 // the ambient capabilities, by capData word
	argv0    *byte
	argv     []*byte
	envv     []*byte
	args     cloneArgs
	stack    []byte
}

func (p *initPlan) add(step uint8, kind initOpKind, nr uintptr, a ...uintptr) {
	op := initOp{kind: kind, step: step, nr: nr}
	if fault.Enabled && fault.Check("clone: "+initSteps[step]) != nil {
		op.kind = initFail // a -tags gosbxfault build: the step fails in the child
	}
	copy(op.a[:], a)
	p.ops = append(p.ops, op)
}

// planOpsCap bounds the ops of a plan with nfiles files and ncaps ambient
// capabilities: two per signal, up to three per file, one per capability and a few
// more. The plan's ops are made once with it: growing them by appends left ~20 KiB of
// the launcher's heap behind, which no collection frees before it exits.
func planOpsCap(nfiles, ncaps int) int { return 2*64 + 3*nfiles + 2*ncaps + 16 }

// planInit compiles the child's steps for argv, env and sys (the SysProcAttr fields the
// launcher sets; any other field is refused), with files moved to 0..n-1 as
// syscall.ProcAttr.Files says, report the child's end of the report pipe and mapR
// and mapW the id maps' pipe (-1 without maps). mask is the signal mask to restore.
func planInit(argv, env []string, files []uintptr, sys *syscall.SysProcAttr, report, mapR, mapW int, mask uint64) (*initPlan, error) {
	if sys.Chroot != "" || sys.Ptrace || sys.Setpgid || sys.Setctty || sys.Noctty || sys.Foreground ||
		sys.Pdeathsig != 0 || sys.Unshareflags != 0 || sys.PidFD != nil {
		return nil, errors.New("a SysProcAttr field the init's clone does not implement")
	}
	p := &initPlan{report: report, all: ^uint64(0), mask: mask,
		ops: make([]initOp, 0, planOpsCap(len(files), len(sys.AmbientCaps)))}
	p.ign.handler = 1 // SIG_IGN
	var err error
	if p.argv0, err = unix.BytePtrFromString("/proc/self/exe"); err != nil {
		return nil, err
	}
	if p.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return nil, fmt.Errorf("argv: %w", err)
	}
	if p.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	// The launcher thread's mask stays blocked only until its handlers are gone: a signal
	// must not run a Go handler on this thread, which shares the launcher's memory.
	p.add(stepBlock, initCall, unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, ptr(&p.all), 0, 8)
	if len(sys.AmbientCaps) > 0 {
		p.add(stepKeepCaps, initCall, unix.SYS_PRCTL, unix.PR_SET_KEEPCAPS, 1)
	}
	if mapR >= 0 {
		p.add(stepMaps, initCall, unix.SYS_CLOSE, uintptr(mapW))
		p.add(stepMaps, initReadOne, unix.SYS_READ, uintptr(mapR), ptr(&p.oneByte[0]), 1)
	}
	if sys.Setsid {
		p.add(stepSetsid, initCall, unix.SYS_SETSID)
	}
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		// one call per signal: to SIG_DFL, and back to SIG_IGN where it was ignored (every
		// signal is blocked meanwhile: a pending one waits, and an ignored one is dropped)
		p.add(stepHandlers, initSetDefault, unix.SYS_RT_SIGACTION, sig, ptr(&p.dfl), ptr(&p.old), 8)
		p.add(stepHandlers, initIfIgnored, unix.SYS_RT_SIGACTION, sig, ptr(&p.ign), 0, 8)
	}
	p.add(stepMask, initCall, unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, ptr(&p.mask), 0, 8)
	if cred := sys.Credential; cred != nil {
		p.groups = cred.Groups
		var groups uintptr
		if len(p.groups) > 0 {
			groups = ptr(&p.groups[0])
		}
		if !(sys.GidMappings != nil && !sys.GidMappingsEnableSetgroups && len(p.groups) == 0) && !cred.NoSetGroups {
			p.add(stepGroups, initCall, unix.SYS_SETGROUPS, uintptr(len(p.groups)), groups)
		}
		p.add(stepGid, initCall, unix.SYS_SETGID, uintptr(cred.Gid))
		p.add(stepUid, initCall, unix.SYS_SETUID, uintptr(cred.Uid))
	}
	if len(sys.AmbientCaps) > 0 {
		p.capHdr.Version = unix.LINUX_CAPABILITY_VERSION_3
		for _, c := range sys.AmbientCaps {
			p.capAdd[c/32] |= 1 << (c % 32)
		}
		p.add(stepAmbient, initCapGet, unix.SYS_CAPGET, ptr(&p.capHdr), ptr(&p.capData[0]))
		p.add(stepAmbient, initCall, unix.SYS_CAPSET, ptr(&p.capHdr), ptr(&p.capData[0]))
		for _, c := range sys.AmbientCaps {
			p.add(stepAmbient, initCall, unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, c)
		}
	}
	p.planFds(files)
	p.add(stepExec, initCall, unix.SYS_EXECVE, ptr(p.argv0), ptr(&p.argv[0]), ptr(&p.envv[0]))
	return p, nil
}

// planFds adds the moves of files to 0..n-1, as syscall.forkAndExecInChild1 makes them
// (its two passes, computed here: the numbers are known before the clone): first every
// descriptor below its place, and the report pipe below n, moved above them all; then
// each dup3'ed onto its place (a descriptor already there loses close-on-exec).
func (p *initPlan) planFds(files []uintptr) {
	fd := make([]int, len(files))
	next := len(files)
	for i, f := range files {
		fd[i] = int(f)
		next = max(next, int(f))
	}
	next++
	// The report pipe is moved first; until that move has run, a failure is written on
	// its old number (runInit updates initPlan.report), never on one the child has not
	// made yet, which may be another of the launcher's descriptors (review6 F1).
	moved := p.report
	if p.report < next {
		p.add(stepFds, initMoveReport, unix.SYS_DUP3, uintptr(p.report), uintptr(next), unix.O_CLOEXEC)
		moved = next
		next++
	}
	for i := range fd {
		if fd[i] >= 0 && fd[i] < i {
			if next == moved {
				next++
			}
			p.add(stepFds, initCall, unix.SYS_DUP3, uintptr(fd[i]), uintptr(next), unix.O_CLOEXEC)
			fd[i] = next
			next++
		}
	}
	for i := range fd {
		switch {
		case fd[i] < 0:
			p.add(stepFds, initCall, unix.SYS_CLOSE, uintptr(i))
		case fd[i] == i:
			p.add(stepFds, initCall, unix.SYS_FCNTL, uintptr(i), unix.F_SETFD, 0)
		default:
			p.add(stepFds, initCall, unix.SYS_DUP3, uintptr(fd[i]), uintptr(i), 0)
		}
	}
}

// cloneSys is the child's system-call seam: the kernel (cloneKernel), or a recording
// double in the unit tests. An implementation that runs in the child must be nosplit
// and must neither allocate nor store a pointer.
type cloneSys interface {
	call(op *initOp) (uintptr, unix.Errno)
}

type cloneKernel struct{}

var theCloneKernel cloneKernel

//go:nosplit
//go:norace
func (*cloneKernel) call(op *initOp) (uintptr, unix.Errno) {
	r, _, e := syscall.RawSyscall6(op.nr, op.a[0], op.a[1], op.a[2], op.a[3], op.a[4], op.a[5])
	return r, unix.Errno(e)
}

// runInit runs p's calls in order through k and returns the index of the call that
// failed and its errno, or -1 when all returned (execve does not, when it succeeds).
//
//go:nosplit
//go:norace
func runInit(p *initPlan, k cloneSys) (int, unix.Errno) {
	for i := 0; i < len(p.ops); i++ {
		op := &p.ops[i]
		switch op.kind {
		case initFail:
			return i, unix.EPERM
		case initIfIgnored:
			if p.old.handler != 1 { // SIG_IGN
				continue
			}
		}
		r, errno := k.call(op)
		if errno == 0 && op.kind == initReadOne && r != 1 {
			errno = unix.EPIPE
		}
		if errno == 0 && op.kind == initMoveReport {
			p.report = int(op.a[1])
		}
		if errno == 0 && op.kind == initCapGet {
			for w := range p.capData {
				p.capData[w].Permitted |= p.capAdd[w]
				p.capData[w].Inheritable |= p.capAdd[w]
			}
		}
		if errno != 0 {
			return i, errno
		}
	}
	return -1, 0
}

// initChildEntry is where cloneInit's child starts, on its own stack, in the launcher's
// memory and with the launcher thread's g: nosplit throughout, no allocation, no
// pointer stored. On failure it writes the failed call's index and errno on the report
// pipe and exits 125.
//
//go:nosplit
//go:norace
func initChildEntry(p *initPlan) {
	i, errno := runInit(p, &theCloneKernel)
	p.rep[0], p.rep[1] = int32(i), int32(errno)
	syscall.RawSyscall(unix.SYS_WRITE, uintptr(p.report), uintptr(unsafe.Pointer(&p.rep[0])), 8)
	for {
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, ExitSetup, 0, 0)
	}
}

// cloneInit is clone_amd64.s.
func cloneInit(nr, a1, a2 uintptr, p *initPlan) (pid, errno uintptr)

// initStack is the size of the init child's stack: its calls are nosplit and shallow.
const initStack = 16 << 10

// forkExecInit starts /proc/self/exe with argv and attr in the namespaces of
// attr.Sys.Cloneflags (its id maps written from the calling thread) and returns the
// child's pid once execve(2) has succeeded, or the error that stopped it, naming the
// step ("setuid: EPERM"; an errno is wrapped). It replaces syscall.ForkExec for the
// init: see the top of this file.
func forkExecInit(argv []string, attr *syscall.ProcAttr) (int, error) {
	sys := attr.Sys
	if sys == nil {
		sys = &syscall.SysProcAttr{}
	}
	if attr.Dir != "" {
		return 0, errors.New("a ProcAttr field the init's clone does not implement (Dir)")
	}
	maps := sys.UidMappings != nil || sys.GidMappings != nil
	var rep, mp [2]int
	if err := unix.Pipe2(rep[:], unix.O_CLOEXEC); err != nil {
		return 0, fmt.Errorf("pipe2: %w", err)
	}
	mp = [2]int{-1, -1}
	if maps {
		if err := unix.Pipe2(mp[:], unix.O_CLOEXEC); err != nil {
			unix.Close(rep[0])
			unix.Close(rep[1])
			return 0, fmt.Errorf("pipe2: %w", err)
		}
	}
	closeAll := func(fds ...int) {
		for _, fd := range fds {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}
	// the mask of the thread that clones, and the init's signals: the child's before
	// execve
	var mask uint64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, e := syscall.RawSyscall6(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, 0, ptr(&mask), 8, 0, 0); e != 0 {
		closeAll(rep[0], rep[1], mp[0], mp[1])
		return 0, fmt.Errorf("rt_sigprocmask: %w", e)
	}
	// The init starts with its signals blocked, and waits for them on a signalfd
	// (initsig.go); the process stage unblocks them for each command.
	mask |= initSigMask()
	p, err := planInit(argv, attr.Env, attr.Files, sys, rep[1], mp[0], mp[1], mask)
	if err != nil {
		closeAll(rep[0], rep[1], mp[0], mp[1])
		return 0, err
	}
	p.stack = make([]byte, initStack)
	top := uintptr(unsafe.Pointer(&p.stack[len(p.stack)-1])) &^ 15
	flags := sys.Cloneflags | unix.CLONE_VM
	nr, a1, a2 := uintptr(unix.SYS_CLONE), flags|uintptr(unix.SIGCHLD), top
	if sys.UseCgroupFD {
		base := uintptr(unsafe.Pointer(&p.stack[0]))
		p.args = cloneArgs{flags: uint64(flags) | unix.CLONE_INTO_CGROUP, exitSignal: uint64(unix.SIGCHLD),
			stack: uint64(base), stackSize: uint64(top - base), cgroup: uint64(sys.CgroupFD)}
		nr, a1, a2 = unix.SYS_CLONE3, ptr(&p.args), unsafe.Sizeof(p.args)
	}
	syscall.ForkLock.Lock()
	runtime_BeforeFork()
	pid, errno := cloneInit(nr, a1, a2, p)
	runtime_AfterFork()
	syscall.ForkLock.Unlock()
	closeAll(rep[1], mp[0])
	if errno != 0 {
		closeAll(rep[0], mp[1])
		return 0, syscall.Errno(errno)
	}
	var mapErr error
	if maps {
		mapErr = writeIDMaps(int(pid), sys)
		if mapErr == nil {
			if _, err := unix.Write(mp[1], []byte{0}); err != nil {
				mapErr = fmt.Errorf("write the id maps' go-ahead: %w", err)
			}
		}
		unix.Close(mp[1]) // on failure, the child reads end of file and stops
	}
	var b [8]byte
	n, rerr := readFull(rep[0], b[:])
	unix.Close(rep[0])
	runtime.KeepAlive(p)
	if n == 0 && rerr == nil && mapErr == nil {
		return int(pid), nil // end of file: executed
	}
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(int(pid), &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	i := int(int32(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24))
	e := unix.Errno(uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24)
	reported := rerr == nil && n == 8 && i >= 0 && i < len(p.ops)
	switch {
	case mapErr != nil && (!reported || p.ops[i].kind == initReadOne && e == unix.EPIPE):
		return 0, mapErr // the child stopped because the maps were not written
	case !reported:
		return 0, fmt.Errorf("the init's clone ended without a report (%s)", describe(ws))
	}
	return 0, &cloneStepError{Step: initSteps[p.ops[i].step], Err: e}
}

// cloneStepError is a step of the init's clone child that failed after the clone itself
// succeeded ("setsid", "setuid", ...): the namespaces were made, so the hints about
// creating them (Hint, step "clone") do not apply to it.
type cloneStepError struct {
	Step string
	Err  error
}

func (e *cloneStepError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *cloneStepError) Unwrap() error { return e.Err }

// writeIDMaps writes the id maps of the child pid's user namespace from the calling
// thread, as syscall.ForkExec's parent does: uid_map, then setgroups (deny unless
// GidMappingsEnableSetgroups), then gid_map (user_namespaces(7)).
func writeIDMaps(pid int, sys *syscall.SysProcAttr) error {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	files, data := idMapWrites(sys)
	for i, f := range files {
		if err := writeProcFile(dir+f, data[i]); err != nil {
			return err
		}
	}
	return nil
}

// idMapWrites are the files of /proc/PID/ that writeIDMaps writes for sys, in its
// order, and what it writes to each.
func idMapWrites(sys *syscall.SysProcAttr) (files []string, data [][]byte) {
	if sys.UidMappings != nil {
		files, data = append(files, "uid_map"), append(data, formatIDMap(sys.UidMappings))
	}
	if sys.GidMappings != nil {
		setgroups := "deny"
		if sys.GidMappingsEnableSetgroups {
			setgroups = "allow"
		}
		files = append(files, "setgroups", "gid_map")
		data = append(data, []byte(setgroups), formatIDMap(sys.GidMappings))
	}
	return files, data
}

func formatIDMap(ms []syscall.SysProcIDMap) []byte {
	var b []byte
	for _, m := range ms {
		b = strconv.AppendInt(b, int64(m.ContainerID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(m.HostID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(m.Size), 10)
		b = append(b, '\n')
	}
	return b
}

func writeProcFile(path string, b []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, b); err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}
