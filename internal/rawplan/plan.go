// Package rawplan is the raw init's plan (issue 20, phase 1): the sandbox init's one-shot job compiled by
// the launcher into a flat list of system calls that a CLONE_VM child of the launcher
// runs without executing a Go program. It extends the init clone's initOp and the
// process stage's procOp with what building a root needs:
//
//   - descriptor registers: a call's result is stored in a numbered slot (Op.out),
//     and a later call takes a slot's value as an argument (Op.regIn), so that
//     fsopen → fsconfig → fsmount → move_mount, or openat2 of a mount point → move_mount,
//     chain without the child knowing any number in advance;
//   - tolerated errnos (Op.tol): EEXIST for mkdirat(2) of a mount point, ENOENT for
//     an optional read-only path; the op then skips the ops that depended on it
//     (Op.skip) and its register holds the negated errno;
//   - a descriptor received with recvmsg(2) (SCM_RIGHTS, unix(7)) into a slot.
//
// The plan's memory, ops and registers included, is an arena (outside the Go heap);
// the child walks it with Run, nosplit, allocating nothing and storing no pointer.
// What an error names (steps, the call) stays on the Go side, in Plan, and is looked
// up from the failed op's index that the child reports.
package rawplan

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
)

// Kind says how Run runs and judges one op.
type Kind uint8

const (
	Call          Kind = iota // fails on any errno not tolerated
	ReadOne                   // read(2) of one byte (into the State's buffer; the byte is the result): end of file fails (EPIPE)
	Try                       // a call whose errno is no failure: its register holds -errno
	SkipUnlessSet             // passes over the next skip ops when register a[0] holds no descriptor (< 0)
	RecvFd                    // recvmsg(2) of one byte and one descriptor (State's buffers) into out
	Close                     // close(2) of the register a[0] if it holds a descriptor, then -1; never fails
	Fail                      // a step made to fail (internal/fault)
	Skip                      // passes over the next skip ops
	SkipIfSet                 // passes over the next skip ops when register a[0] holds a descriptor (≥ 0)
	SkipUnlessDir             // fstat(2) of a[0]: passes over the next skip ops unless it is a directory
	SameFile                  // fstat(2) of a[0] and a[1]: ESTALE unless the same file (device and inode)
	ReadlinkIs                // readlinkat(2) of a[0], a[1]: EEXIST unless the link's target is the a[3] bytes at arena offset a[2]
	WriteAll                  // write(2) of a[2] bytes at a[1] to a[0], again after a short write
	SendFd                    // sendmsg(2) on a[0] of one byte with the descriptor a[1] (SCM_RIGHTS)
	CloneSub                  // clone(2) of a child (flags a[0], stack top a[1]; or clone3(2), its clone_args at a[0] of size a[1]) running the sub-plan at arena offset a[2], its registers a copy of these: its pid
	Emit                      // write(2) on a[0] of a Record: kind a[1], values a[2] and a[3]
	AbsCwd                    // getcwd(2): ENOENT unless the path starts with '/' ("(unreachable)" otherwise)
	LookPath                  // the first executable regular file among the candidates at arena offset a[1], from the directory a[0]: its address
	Reap                      // the init's reaper (reap.go); never returns
	Or16                      // no call: the 16 bits at arena offset a[0] or'ed with a[1] (a flag into an ifreq)
	AwaitSub                  // read(2) of a sub-plan's report on a[0]: end of file passes; a report fails as the sub-plan's op (indices from a[1])
	PollIn                    // poll(2) of a[0] until it is readable; EPIPE when it hangs up first (pollin.go)
)

// Regs is the number of registers of a plan.
const Regs = 128

// Op is one call of a raw plan. Arguments whose bit is set in regIn are register
// numbers, replaced by the register's value when the op runs. A result (r ≥ 0) goes to
// register out-1 when out > 0. An errno in tol is not a failure: register out-1 then
// holds -errno and the next skip ops are passed over.
type Op struct {
	nr    uintptr
	a     [6]uintptr
	kind  Kind
	regIn uint8
	out   uint8
	_     uint8
	tol   [2]uint16
	skip  uint16
	step  uint16
}

// msghdr is struct msghdr (recvmsg(2)) with its addresses as integers: it lives in
// the arena and the child writes none of its pointers.
type msghdr struct {
	name       uintptr
	namelen    uint32
	_          uint32
	iov        uintptr
	iovlen     uint64
	control    uintptr
	controllen uint64
	flags      int32
	_          int32
}

// iovec is struct iovec.
type iovec struct {
	base uintptr
	len  uint64
}

// State is what the child reads and writes: the ops, the registers, the report of a
// failure and the buffers of a descriptor's receipt. It lives in the arena.
type State struct {
	ops    []Op // in the arena
	regs   [Regs]int64
	Rep    Record     // the failure report (RecFailed), written by the child
	Report int64      // the descriptor the child writes rep on
	args   [6]uintptr // the running op's arguments, registers replaced (here: a local would escape through Caller)

	msg   msghdr
	iov   iovec
	iobuf [1]byte
	cmsg  fdMessage

	subrep Record             // AwaitSub's
	rec    Record             // Emit's
	sigbuf [8 * 128]byte      // Reap's signalfd_siginfo records
	pfds   [3]unix.PollFd     // Reap's
	stat   [2]unix.Stat_t     // SameFile's, SkipUnlessDir's
	link   [unix.PathMax]byte // ReadlinkIs's
}

// Reg names a register; Arg is an op's argument, a value or a register.
type Reg uint8

type Arg struct {
	v   uintptr
	reg bool
}

func Lit(v uintptr) Arg { return Arg{v: v} }
func (r Reg) Arg() Arg  { return Arg{v: uintptr(r), reg: true} }

// Plan compiles a raw plan. Its methods record the first error (arena full, a NUL
// in a path) and return placeholders after it; finish returns it.
type Plan struct {
	arena *arena
	St    *State // in the arena
	steps []string
	errs  []func(unix.Errno) error // per op: the error the Go init's step returns for errno
	used  [Regs]bool
	err   error
}

// New maps an arena of size bytes holding room for maxOps ops.
func New(size, maxOps int) (*Plan, error) {
	a, err := newArena(size)
	if err != nil {
		return nil, err
	}
	// one op's error function each: room for an agent plan's ~700 at once, not grown by
	// doubling through a launch (each growth a fresh block and a copy)
	p := &Plan{arena: a, errs: make([]func(unix.Errno) error, 0, min(maxOps, 1024))}
	// the State first, at offset 0: ReadlinkIs names its bytes by offset from it
	if p.St, err = arenaNew[State](a); err == nil {
		p.St.ops, err = arenaSlice[Op](a, maxOps)
	}
	if err != nil {
		a.free()
		return nil, err
	}
	p.St.ops = p.St.ops[:0]
	for i := range p.St.regs {
		p.St.regs[i] = -1
	}
	// the receipt's buffers: one byte, one descriptor
	p.St.iov = iovec{base: ptr(&p.St.iobuf[0]), len: 1}
	p.St.msg.iov = ptr(&p.St.iov)
	p.St.msg.iovlen = 1
	p.St.msg.control = ptr(&p.St.cmsg)
	return p, nil
}

// Free unmaps the plan's arena: once its child has exited.
func (p *Plan) Free() error { return p.arena.free() }

// Begin names a new step and returns its number; a fault-injection build fails it here
// on request.
func (p *Plan) Begin(name string) uint16 {
	p.steps = append(p.steps, name)
	s := uint16(len(p.steps) - 1)
	if fault.Enabled && fault.Check(name) != nil {
		p.Op(s, nil, Fail, 0)
	}
	return s
}

// Op appends one call of step s; errf, when not nil, makes the error a failure of it
// returns (the errno given), else "<step>: <call>: errno" with the call's number.
func (p *Plan) Op(s uint16, errf func(unix.Errno) error, kind Kind, nr uintptr, args ...Arg) *Op {
	if p.err == nil && len(p.St.ops) == cap(p.St.ops) {
		p.err = ErrFull
	}
	if p.err != nil || len(args) > 6 {
		if p.err == nil {
			p.err = errors.New("a raw op with more than six arguments")
		}
		return &Op{} // a placeholder: the plan is not run
	}
	p.St.ops = p.St.ops[:len(p.St.ops)+1]
	o := &p.St.ops[len(p.St.ops)-1]
	*o = Op{nr: nr, kind: kind, step: s}
	for i, a := range args {
		o.a[i] = a.v
		if a.reg {
			o.regIn |= 1 << i
		}
	}
	p.errs = append(p.errs, errf)
	return o
}

// Call is op of kind Call.
func (p *Plan) Call(s uint16, errf func(unix.Errno) error, nr uintptr, args ...Arg) *Op {
	return p.Op(s, errf, Call, nr, args...)
}

// Into stores o's result in r.
func (o *Op) Into(r Reg) *Op { o.out = uint8(r) + 1; return o }

// Tolerate makes errno e no failure of o (at most two per op).
func (o *Op) Tolerate(e unix.Errno) *Op {
	for i := range o.tol {
		if o.tol[i] == 0 {
			o.tol[i] = uint16(e)
			return o
		}
	}
	panic("Op.tolerate: more than two errnos")
}

// Mark is the index the next op gets, for SkipTo.
func (p *Plan) Mark() int { return len(p.St.ops) }

// SkipTo makes the op at index i, when it gets an errno it tolerates, pass over every
// op added after it so far.
func (p *Plan) SkipTo(i int) {
	if p.err == nil {
		p.St.ops[i].skip = uint16(len(p.St.ops) - i - 1)
	}
}

// Reg takes a free register.
func (p *Plan) Reg() Reg {
	for i, u := range p.used {
		if !u {
			p.used[i] = true
			return Reg(i)
		}
	}
	if p.err == nil {
		p.err = fmt.Errorf("%w: out of registers (%d)", ErrFull, Regs)
	}
	return 0
}

// Release gives r back once no later op reads it.
func (p *Plan) Release(r Reg) { p.used[r] = false }

// CloseReg adds the close(2) of r's descriptor and releases r.
func (p *Plan) CloseReg(s uint16, r Reg) {
	p.Op(s, nil, Close, unix.SYS_CLOSE, r.Arg())
	p.Release(r)
}

// RecvFd adds the receipt of one descriptor (recvmsg(2), SCM_RIGHTS, close-on-exec) on
// the socket sock into r.
func (p *Plan) RecvFd(s uint16, errf func(unix.Errno) error, sock Arg, r Reg) *Op {
	return p.Op(s, errf, RecvFd, unix.SYS_RECVMSG, sock, Lit(ptr(&p.St.msg)), Lit(unix.MSG_CMSG_CLOEXEC)).Into(r)
}

// StrArray copies ss into the arena as a NULL-terminated array of C strings (execve(2)'s
// argv, envp) and returns its address. A NUL inside a string is refused (EINVAL).
func (p *Plan) StrArray(ss []string) (uintptr, error) {
	if p.err != nil {
		return 0, p.err
	}
	return p.arena.cstrings(ss)
}

// Bytes copies b into the arena and returns its address (0 after an error).
func (p *Plan) Bytes(b []byte) uintptr {
	if p.err != nil {
		return 0
	}
	off, err := p.arena.alloc(len(b)+1, 1)
	if err != nil {
		p.err = err
		return 0
	}
	copy(p.arena.mem[off:], b)
	return p.arena.addr(off)
}

// ReadlinkIs adds the check that the symlink name in the directory dir leads to
// target (EEXIST otherwise).
func (p *Plan) ReadlinkIs(s uint16, errf func(unix.Errno) error, dir Arg, name, target string) *Op {
	at := p.Bytes([]byte(target))
	return p.Op(s, errf, ReadlinkIs, unix.SYS_READLINKAT, dir, Lit(p.Str(name)), Lit(at-p.arena.addr(0)), Lit(uintptr(len(target))))
}

// Guard makes the op at index i, a Skip* op, pass over every op added after it so far
// (as SkipTo does for a tolerated errno).
func (p *Plan) Guard(i int) { p.SkipTo(i) }

// Str is the arena's copy of s as a C string (0 after an error).
func (p *Plan) Str(s string) uintptr {
	if p.err != nil {
		return 0
	}
	a, err := p.arena.cstring(s)
	if err != nil {
		p.err = err
	}
	return a
}

// Sub is a sub-plan being compiled: the ops added between BeginSub and EndSub run in
// a child of their own (the commands' pid 1, say), with registers of its own (a copy
// of the parent's at the clone), started
// by CloneSub and awaited by AwaitSub. Its ops share the plan's index space, so that a
// failure names the sub-plan's step as any other.
type Sub struct {
	skip, base int
	st         *State
}

// BeginSub starts a sub-plan in step s: the main flow passes over its ops.
func (p *Plan) BeginSub(s uint16) *Sub {
	sub := &Sub{skip: p.Mark()}
	p.Op(s, nil, Skip, 0)
	sub.base = p.Mark()
	return sub
}

// EndSub ends the sub-plan, whose child reports a failure on report (a descriptor in
// its table, close-on-exec so that a program it executes closes it: end of file).
func (p *Plan) EndSub(sub *Sub, report int) {
	p.Guard(sub.skip)
	st := Alloc[State](p)
	if p.err != nil {
		return
	}
	st.ops = p.St.ops[sub.base:len(p.St.ops):len(p.St.ops)]
	for i := range st.regs {
		st.regs[i] = -1
	}
	st.iov = iovec{base: ptr(&st.iobuf[0]), len: 1}
	st.msg.iov, st.msg.iovlen, st.msg.control = ptr(&st.iov), 1, ptr(&st.cmsg)
	st.Report = int64(report)
	sub.st = st
}

// CloneSub adds the clone(2) of sub's child with flags (CLONE_VM and SIGCHLD added) on
// a stack of its own in the arena; its pid goes to r.
func (p *Plan) CloneSub(s uint16, errf func(unix.Errno) error, sub *Sub, flags uintptr, r Reg) {
	top, err := p.Stack(StackSize)
	if err == nil && sub.st == nil {
		err = errors.New("a sub-plan not ended")
	}
	if err != nil {
		p.Refuse(err)
		return
	}
	off := ptr(sub.st) - ptr(p.St)
	p.Op(s, errf, CloneSub, unix.SYS_CLONE, Lit(flags|unix.CLONE_VM|uintptr(unix.SIGCHLD)), Lit(top), Lit(off)).Into(r)
}

// cloneArgs is struct clone_args (clone3(2), CLONE_ARGS_SIZE_VER2).
type cloneArgs struct {
	flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
}

// CloneSubInto is CloneSub with clone3(2) and CLONE_INTO_CGROUP: the child starts in
// the cgroup v2 group whose directory is the descriptor cgroupFd (in the cloning
// child's table), so that it belongs to the group before it runs an instruction.
func (p *Plan) CloneSubInto(s uint16, errf func(unix.Errno) error, sub *Sub, flags uintptr, cgroupFd int, r Reg) {
	top, err := p.Stack(StackSize)
	if err == nil && sub.st == nil {
		err = errors.New("a sub-plan not ended")
	}
	args := Alloc[cloneArgs](p)
	if err != nil || args == nil {
		p.Refuse(err)
		return
	}
	// clone3 takes the stack's lowest address and size: the child's stack pointer is
	// their sum, the same 16-byte aligned top as CloneSub's, within the allocation
	base := top - (StackSize - 64)
	*args = cloneArgs{flags: uint64(flags | unix.CLONE_VM | unix.CLONE_INTO_CGROUP), exitSignal: uint64(unix.SIGCHLD),
		stack: uint64(base), stackSize: uint64(top - base), cgroup: uint64(cgroupFd)}
	off := ptr(sub.st) - ptr(p.St)
	p.Op(s, errf, CloneSub, unix.SYS_CLONE3, Lit(ptr(args)), Lit(unsafe.Sizeof(*args)), Lit(off)).Into(r)
}

// AwaitSub adds the wait for sub's report on the descriptor report (the pipe's read
// end): a failure of the sub-plan fails the plan at the sub-plan's op.
func (p *Plan) AwaitSub(s uint16, errf func(unix.Errno) error, sub *Sub, report Arg) {
	p.Op(s, errf, AwaitSub, unix.SYS_READ, report, Lit(uintptr(sub.base)))
}

// Offset is the arena offset of the address addr (inside the arena), as Or16 takes it.
func (p *Plan) Offset(addr uintptr) uintptr { return addr - ptr(p.St) }

// Refuse records err as the plan's compile error (the first one is kept): the plan is
// then not run.
func (p *Plan) Refuse(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Finish returns the first error of compiling, or nil.
func (p *Plan) Finish() error { return p.err }

// Failure is the step and error of op i failing with errno e, as the Go init's step
// returns them: errf's error when the op has one, else "system call N: errno"; a step
// failed on request (fault injection) gives fault.Check's error.
func (p *Plan) Failure(i int, e unix.Errno) (string, error) {
	if i < 0 || i >= len(p.St.ops) {
		return "raw init", fmt.Errorf("op %d reported of %d", i, len(p.St.ops))
	}
	o := &p.St.ops[i]
	name := p.steps[o.step]
	if o.kind == Fail {
		return name, fault.Check(name)
	}
	if f := p.errs[i]; f != nil {
		return name, f(e)
	}
	return name, fmt.Errorf("system call %d: %w", o.nr, e)
}

// Value is register r's value after a run (a descriptor, or -errno, or -1).
func (p *Plan) Value(r Reg) int64 { return p.St.regs[r] }

// Alloc places a zeroed T in the plan's arena (nil after an error): a structure a call
// points to (struct open_how, struct mount_attr). T must hold no Go pointer.
func Alloc[T any](p *Plan) *T {
	if p.err != nil {
		return new(T)
	}
	v, err := arenaNew[T](p.arena)
	if err != nil {
		p.err = err
		return new(T)
	}
	return v
}

// Ptr is v's address as a system call's argument.
func Ptr[T any](v *T) uintptr { return uintptr(unsafe.Pointer(v)) }

func ptr[T any](v *T) uintptr { return uintptr(unsafe.Pointer(v)) }

// fdMessage is the control message of one descriptor (SCM_RIGHTS, unix(7)): its
// unix.CmsgSpace(4) bytes.
type fdMessage struct {
	hdr unix.Cmsghdr
	fd  int32
	_   int32
}

// Caller is the raw child's system-call seam: the kernel (Kernel), or a recording
// double in the unit tests. An implementation run by the child must be nosplit and must
// neither allocate nor store a pointer.
type Caller interface {
	raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno)
	// clone starts a child running sub (CloneSub): clone(2) with flags a1 and stack
	// top a2, or clone3(2) with its struct clone_args at a1, of size a2 (nr says which).
	clone(nr, a1, a2 uintptr, sub *State) (uintptr, unix.Errno)
}

type Kernel struct{}

var TheKernel Kernel

//go:nosplit
//go:norace
func (*Kernel) raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno) {
	r, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return r, unix.Errno(e)
}

//go:nosplit
//go:norace
func (*Kernel) clone(nr, a1, a2 uintptr, sub *State) (uintptr, unix.Errno) {
	pid, e := cloneRaw(nr, a1, a2, sub)
	return pid, unix.Errno(e)
}

// maxRetries bounds the retries of one op that the kernel asks to restart (EINTR; and
// EAGAIN of openat2(2), a rename race under RESOLVE_BENEATH/IN_ROOT).
const maxRetries = 1 << 16

// Run runs st's ops in order through k and returns the index of the op that failed
// and its errno, or -1 once all ran. It runs in the raw child: nosplit, no allocation,
// no pointer stored.
//
//go:nosplit
//go:norace
func Run(st *State, k Caller) (int, unix.Errno) {
	retries := 0
	for i := 0; i < len(st.ops); i++ {
		o := &st.ops[i]
		a := &st.args
		*a = o.a
		for j := 0; j < 6; j++ {
			if o.regIn&(1<<j) != 0 {
				a[j] = uintptr(st.regs[o.a[j]%Regs])
			}
		}
		var r uintptr
		var e unix.Errno
		switch o.kind {
		case Fail:
			return i, unix.EPERM
		case Close:
			if int64(a[0]) >= 0 {
				k.raw(unix.SYS_CLOSE, a)
			}
			st.regs[o.a[0]%Regs] = -1
			continue
		case Skip:
			i += int(o.skip)
			continue
		case SkipIfSet:
			if int64(a[0]) >= 0 {
				i += int(o.skip)
			}
			continue
		case SkipUnlessDir:
			a[1] = uintptr(unsafe.Pointer(&st.stat[0]))
			if _, e = k.raw(unix.SYS_FSTAT, a); e == 0 {
				if st.stat[0].Mode&unix.S_IFMT != unix.S_IFDIR {
					i += int(o.skip)
				}
				continue
			}
		case SameFile:
			e = sameFile(st, k)
		case ReadlinkIs:
			e = readlinkIs(st, k)
		case WriteAll:
			e = writeAll(st, k)
		case SendFd:
			st.cmsg.hdr.Len = uint64(unsafe.Sizeof(st.cmsg.hdr)) + 4
			st.cmsg.hdr.Level, st.cmsg.hdr.Type = unix.SOL_SOCKET, unix.SCM_RIGHTS
			st.cmsg.fd = int32(a[1])
			st.iobuf[0] = 'F'
			st.msg.controllen = uint64(unsafe.Sizeof(st.cmsg))
			a[1], a[2] = uintptr(unsafe.Pointer(&st.msg)), 0
			r, e = k.raw(unix.SYS_SENDMSG, a)
		case Emit:
			st.rec = Record{Kind: uint32(a[1]), A: uint32(a[2]), B: uint64(a[3])}
			a[1], a[2] = uintptr(unsafe.Pointer(&st.rec)), recSize
			r, e = k.raw(unix.SYS_WRITE, a)
		case AbsCwd:
			e = absCwd(st, k)
		case LookPath:
			r, e = lookPath(st, k)
		case Reap:
			reap(st, k)
		case PollIn:
			e = pollIn(st, k)
		case Or16:
			f := (*uint16)(unsafe.Add(unsafe.Pointer(st), a[0]))
			*f |= uint16(a[1])
			continue
		case CloneSub:
			sub := (*State)(unsafe.Add(unsafe.Pointer(st), a[2]))
			sub.regs = st.regs // the sub-plan starts with the registers as they are now
			r, e = k.clone(o.nr, a[0], a[1], sub)
		case AwaitSub:
			var n int
			if n, e = readSubReport(st, k); e == 0 && n == recSize && st.subrep.Kind == RecFailed {
				return int(o.a[1]) + int(st.subrep.A), unix.Errno(st.subrep.B)
			} else if e == 0 && n != 0 {
				e = unix.EPIPE
			}
		case RecvFd:
			st.msg.controllen = uint64(unsafe.Sizeof(st.cmsg))
			st.cmsg.fd = -1
			a[1] = uintptr(unsafe.Pointer(&st.msg)) // this state's buffers: a sub-plan's own, not the plan's
			r, e = k.raw(o.nr, a)
			if e == 0 {
				if r != 1 || st.cmsg.hdr.Level != unix.SOL_SOCKET || st.cmsg.hdr.Type != unix.SCM_RIGHTS || st.cmsg.fd < 0 {
					e = unix.EBADMSG
				} else {
					r = uintptr(st.cmsg.fd)
				}
			}
		case ReadOne:
			a[1], a[2] = uintptr(unsafe.Pointer(&st.iobuf[0])), 1
			if r, e = k.raw(o.nr, a); e == 0 && r != 1 {
				e = unix.EPIPE
			}
			r = uintptr(st.iobuf[0])
		case Try:
			r, e = k.raw(o.nr, a)
			if e != 0 && e != unix.EINTR {
				r, e = uintptr(-int64(e)), 0
			}
		case SkipUnlessSet:
			if int64(a[0]) < 0 {
				i += int(o.skip)
			}
			continue
		default:
			r, e = k.raw(o.nr, a)
		}
		if (e == unix.EINTR || e == unix.EAGAIN && o.nr == unix.SYS_OPENAT2) && retries < maxRetries {
			retries++
			i--
			continue
		}
		retries = 0
		if e != 0 {
			if uint16(e) == o.tol[0] || uint16(e) == o.tol[1] {
				if o.out > 0 {
					st.regs[(o.out-1)%Regs] = -int64(e)
				}
				i += int(o.skip)
				continue
			}
			return i, e
		}
		if o.out > 0 {
			st.regs[(o.out-1)%Regs] = int64(r)
		}
	}
	return -1, 0
}

// sameFile is SameFile on st.args.
//
//go:nosplit
//go:norace
func sameFile(st *State, k Caller) unix.Errno {
	a := &st.args
	other := a[1]
	a[1] = uintptr(unsafe.Pointer(&st.stat[0]))
	if _, e := k.raw(unix.SYS_FSTAT, a); e != 0 {
		return e
	}
	a[0], a[1] = other, uintptr(unsafe.Pointer(&st.stat[1]))
	if _, e := k.raw(unix.SYS_FSTAT, a); e != 0 {
		return e
	}
	if st.stat[0].Dev != st.stat[1].Dev || st.stat[0].Ino != st.stat[1].Ino {
		return unix.ESTALE
	}
	return 0
}

// readlinkIs is ReadlinkIs on st.args.
//
//go:nosplit
//go:norace
func readlinkIs(st *State, k Caller) unix.Errno {
	a := &st.args
	off, n := a[2], a[3]
	a[2], a[3] = uintptr(unsafe.Pointer(&st.link[0])), uintptr(len(st.link))
	r, e := k.raw(unix.SYS_READLINKAT, a)
	if e != 0 {
		return e
	}
	if r != n {
		return unix.EEXIST
	}
	want := unsafe.Add(unsafe.Pointer(st), off)
	for j := uintptr(0); j < n; j++ {
		if *(*byte)(unsafe.Add(want, j)) != st.link[j] {
			return unix.EEXIST
		}
	}
	return 0
}

// readSubReport reads a sub-plan's report (a Record, or end of file) from st.args[0]
// into st.subrep and returns how many bytes came.
//
//go:nosplit
//go:norace
func readSubReport(st *State, k Caller) (int, unix.Errno) {
	a := &st.args
	fd := a[0]
	n := 0
	for n < recSize {
		a[0], a[1], a[2] = fd, uintptr(unsafe.Add(unsafe.Pointer(&st.subrep), n)), uintptr(recSize-n)
		r, e := k.raw(unix.SYS_READ, a)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return n, e
		}
		if r == 0 {
			break
		}
		n += int(r)
	}
	return n, 0
}

// writeAll is WriteAll on st.args.
//
//go:nosplit
//go:norace
func writeAll(st *State, k Caller) unix.Errno {
	a := &st.args
	for a[2] > 0 {
		r, e := k.raw(unix.SYS_WRITE, a)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		if r == 0 {
			return unix.EIO
		}
		a[1] += r
		a[2] -= r
	}
	return 0
}

// AtFdcwd is AT_FDCWD as a system call's argument.
const AtFdcwd = ^uintptr(99) // -100

// Stack takes n bytes of the arena for the child's stack and returns its top, 16-byte
// aligned.
func (p *Plan) Stack(n int) (uintptr, error) {
	if p.err != nil {
		return 0, p.err
	}
	off, err := p.arena.alloc(n, 16)
	if err != nil {
		return 0, err
	}
	return p.arena.addr(off+n-16) &^ 15, nil
}

// Len is the number of ops compiled so far.
func (p *Plan) Len() int { return len(p.St.ops) }

// Record is what a raw child reports on a pipe, 16 bytes: a failure (RecFailed: the
// op's index, its errno) or what an Emit op says (its kind and two values).
type Record struct {
	Kind uint32
	A    uint32
	B    uint64
}

const recSize = 16

// RecFailed is the kind of a failure's Record.
const RecFailed = 0xFA11ED

// StepOrder is the names of the steps the plan's ops belong to, in op order, a run of
// ops of one step named once.
func (p *Plan) StepOrder() []string {
	var out []string
	for i := range p.St.ops {
		name := p.steps[p.St.ops[i].step]
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name)
		}
	}
	return out
}
