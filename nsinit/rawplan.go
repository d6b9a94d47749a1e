package nsinit

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
)

// The raw init's plan (issue 20, phase 1): the sandbox init's one-shot job compiled by
// the launcher into a flat list of system calls that a CLONE_VM child of the launcher
// runs without executing a Go program. It extends the init clone's initOp and the
// process stage's procOp with what building a root needs:
//
//   - descriptor registers: a call's result is stored in a numbered slot (rawOp.out),
//     and a later call takes a slot's value as an argument (rawOp.regIn), so that
//     fsopen → fsconfig → fsmount → move_mount, or openat2 of a mount point → move_mount,
//     chain without the child knowing any number in advance;
//   - tolerated errnos (rawOp.tol): EEXIST for mkdirat(2) of a mount point, ENOENT for
//     an optional read-only path; the op then skips the ops that depended on it
//     (rawOp.skip) and its register holds the negated errno;
//   - a descriptor received with recvmsg(2) (SCM_RIGHTS, unix(7)) into a slot.
//
// The plan's memory, ops and registers included, is a rawArena (outside the Go heap);
// the child walks it with runRaw, nosplit, allocating nothing and storing no pointer.
// What an error names (steps, the call) stays on the Go side, in rawPlan, and is looked
// up from the failed op's index that the child reports.

// rawKind says how runRaw runs and judges one op.
type rawKind uint8

const (
	rawCall    rawKind = iota // fails on any errno not tolerated
	rawReadOne                // read(2) of one byte: end of file fails (EPIPE)
	rawRecvFd                 // recvmsg(2) of one byte and one descriptor (rawState's buffers) into out
	rawClose                  // close(2) of the register a[0] if it holds a descriptor, then -1; never fails
	rawFail                   // a step made to fail (internal/fault)
)

// rawRegs is the number of registers of a plan.
const rawRegs = 128

// rawOp is one call of a raw plan. Arguments whose bit is set in regIn are register
// numbers, replaced by the register's value when the op runs. A result (r ≥ 0) goes to
// register out-1 when out > 0. An errno in tol is not a failure: register out-1 then
// holds -errno and the next skip ops are passed over.
type rawOp struct {
	nr    uintptr
	a     [6]uintptr
	kind  rawKind
	regIn uint8
	out   uint8
	_     uint8
	tol   [2]uint16
	skip  uint16
	step  uint16
}

// rawMsghdr is struct msghdr (recvmsg(2)) with its addresses as integers: it lives in
// the arena and the child writes none of its pointers.
type rawMsghdr struct {
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

// rawIovec is struct iovec.
type rawIovec struct {
	base uintptr
	len  uint64
}

// rawState is what the child reads and writes: the ops, the registers, the report of a
// failure and the buffers of a descriptor's receipt. It lives in the arena.
type rawState struct {
	ops    []rawOp // in the arena
	regs   [rawRegs]int64
	rep    [2]int32   // the failed op's index and errno, written by the child
	report int64      // the descriptor the child writes rep on
	args   [6]uintptr // the running op's arguments, registers replaced (here: a local would escape through rawCaller)

	msg   rawMsghdr
	iov   rawIovec
	iobuf [1]byte
	cmsg  fdMessage
}

// rawReg names a register; rawArg is an op's argument, a value or a register.
type rawReg uint8

type rawArg struct {
	v   uintptr
	reg bool
}

func lit(v uintptr) rawArg   { return rawArg{v: v} }
func (r rawReg) arg() rawArg { return rawArg{v: uintptr(r), reg: true} }

// rawPlan compiles a raw plan. Its methods record the first error (arena full, a NUL
// in a path) and return placeholders after it; finish returns it.
type rawPlan struct {
	arena *rawArena
	st    *rawState
	steps []string
	errs  []func(unix.Errno) error // per op: the error the Go init's step returns for errno
	used  [rawRegs]bool
	err   error
}

// newRawPlan maps an arena of size bytes holding room for maxOps ops.
func newRawPlan(size, maxOps int) (*rawPlan, error) {
	a, err := newRawArena(size)
	if err != nil {
		return nil, err
	}
	p := &rawPlan{arena: a}
	if p.st, err = arenaNew[rawState](a); err == nil {
		p.st.ops, err = arenaSlice[rawOp](a, maxOps)
	}
	if err != nil {
		a.free()
		return nil, err
	}
	p.st.ops = p.st.ops[:0]
	for i := range p.st.regs {
		p.st.regs[i] = -1
	}
	// the receipt's buffers: one byte, one descriptor
	p.st.iov = rawIovec{base: ptr(&p.st.iobuf[0]), len: 1}
	p.st.msg.iov = ptr(&p.st.iov)
	p.st.msg.iovlen = 1
	p.st.msg.control = ptr(&p.st.cmsg)
	return p, nil
}

// free unmaps the plan's arena: once its child has exited.
func (p *rawPlan) free() error { return p.arena.free() }

// begin names a new step and returns its number; a fault-injection build fails it here
// on request.
func (p *rawPlan) begin(name string) uint16 {
	p.steps = append(p.steps, name)
	s := uint16(len(p.steps) - 1)
	if fault.Enabled && fault.Check(name) != nil {
		p.op(s, nil, rawFail, 0)
	}
	return s
}

// op appends one call of step s; errf, when not nil, makes the error a failure of it
// returns (the errno given), else "<step>: <call>: errno" with the call's number.
func (p *rawPlan) op(s uint16, errf func(unix.Errno) error, kind rawKind, nr uintptr, args ...rawArg) *rawOp {
	if p.err == nil && len(p.st.ops) == cap(p.st.ops) {
		p.err = errArenaFull
	}
	if p.err != nil || len(args) > 6 {
		if p.err == nil {
			p.err = errors.New("a raw op with more than six arguments")
		}
		return &rawOp{} // a placeholder: the plan is not run
	}
	p.st.ops = p.st.ops[:len(p.st.ops)+1]
	o := &p.st.ops[len(p.st.ops)-1]
	*o = rawOp{nr: nr, kind: kind, step: s}
	for i, a := range args {
		o.a[i] = a.v
		if a.reg {
			o.regIn |= 1 << i
		}
	}
	p.errs = append(p.errs, errf)
	return o
}

// call is op of kind rawCall.
func (p *rawPlan) call(s uint16, errf func(unix.Errno) error, nr uintptr, args ...rawArg) *rawOp {
	return p.op(s, errf, rawCall, nr, args...)
}

// into stores o's result in r.
func (o *rawOp) into(r rawReg) *rawOp { o.out = uint8(r) + 1; return o }

// tolerate makes errno e no failure of o (at most two per op).
func (o *rawOp) tolerate(e unix.Errno) *rawOp {
	for i := range o.tol {
		if o.tol[i] == 0 {
			o.tol[i] = uint16(e)
			return o
		}
	}
	panic("rawOp.tolerate: more than two errnos")
}

// mark is the index the next op gets, for skipTo.
func (p *rawPlan) mark() int { return len(p.st.ops) }

// skipTo makes the op at index i, when it gets an errno it tolerates, pass over every
// op added after it so far.
func (p *rawPlan) skipTo(i int) {
	if p.err == nil {
		p.st.ops[i].skip = uint16(len(p.st.ops) - i - 1)
	}
}

// reg takes a free register.
func (p *rawPlan) reg() rawReg {
	for i, u := range p.used {
		if !u {
			p.used[i] = true
			return rawReg(i)
		}
	}
	if p.err == nil {
		p.err = errors.New("the raw init's plan ran out of registers")
	}
	return 0
}

// release gives r back once no later op reads it.
func (p *rawPlan) release(r rawReg) { p.used[r] = false }

// closeReg adds the close(2) of r's descriptor and releases r.
func (p *rawPlan) closeReg(s uint16, r rawReg) {
	p.op(s, nil, rawClose, unix.SYS_CLOSE, r.arg())
	p.release(r)
}

// recvFd adds the receipt of one descriptor (recvmsg(2), SCM_RIGHTS, close-on-exec) on
// the socket sock into r.
func (p *rawPlan) recvFd(s uint16, errf func(unix.Errno) error, sock rawArg, r rawReg) *rawOp {
	return p.op(s, errf, rawRecvFd, unix.SYS_RECVMSG, sock, lit(ptr(&p.st.msg)), lit(unix.MSG_CMSG_CLOEXEC)).into(r)
}

// str is the arena's copy of s as a C string (0 after an error).
func (p *rawPlan) str(s string) uintptr {
	if p.err != nil {
		return 0
	}
	a, err := p.arena.cstring(s)
	if err != nil {
		p.err = err
	}
	return a
}

// finish returns the first error of compiling, or nil.
func (p *rawPlan) finish() error { return p.err }

// failure is the error of op i failing with errno e, as the Go init's step returns it:
// a *stepError naming the step.
func (p *rawPlan) failure(i int, e unix.Errno) error {
	if i < 0 || i >= len(p.st.ops) {
		return fmt.Errorf("the raw init reported op %d of %d", i, len(p.st.ops))
	}
	o := &p.st.ops[i]
	name := p.steps[o.step]
	if o.kind == rawFail {
		return &stepError{name, fault.Check(name)}
	}
	if f := p.errs[i]; f != nil {
		return &stepError{name, f(e)}
	}
	return &stepError{name, fmt.Errorf("system call %d: %w", o.nr, e)}
}

// rawCaller is the raw child's system-call seam: the kernel (rawKernel), or a recording
// double in the unit tests. An implementation run by the child must be nosplit and must
// neither allocate nor store a pointer.
type rawCaller interface {
	raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno)
}

type rawKernel struct{}

var theRawKernel rawKernel

//go:nosplit
//go:norace
func (*rawKernel) raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno) {
	r, _, e := syscall.RawSyscall6(nr, a[0], a[1], a[2], a[3], a[4], a[5])
	return r, unix.Errno(e)
}

// rawRetries bounds the retries of one op that the kernel asks to restart (EINTR; and
// EAGAIN of openat2(2), a rename race under RESOLVE_BENEATH/IN_ROOT).
const rawRetries = 1 << 16

// runRaw runs st's ops in order through k and returns the index of the op that failed
// and its errno, or -1 once all ran. It runs in the raw child: nosplit, no allocation,
// no pointer stored.
//
//go:nosplit
//go:norace
func runRaw(st *rawState, k rawCaller) (int, unix.Errno) {
	retries := 0
	for i := 0; i < len(st.ops); i++ {
		o := &st.ops[i]
		if o.kind == rawFail {
			return i, unix.EPERM
		}
		a := &st.args
		*a = o.a
		for j := 0; j < 6; j++ {
			if o.regIn&(1<<j) != 0 {
				a[j] = uintptr(st.regs[o.a[j]%rawRegs])
			}
		}
		if o.kind == rawClose {
			if int64(a[0]) >= 0 {
				k.raw(unix.SYS_CLOSE, a)
			}
			st.regs[o.a[0]%rawRegs] = -1
			continue
		}
		if o.kind == rawRecvFd {
			st.msg.controllen = uint64(unsafe.Sizeof(st.cmsg))
			st.cmsg.fd = -1
		}
		r, e := k.raw(o.nr, a)
		if (e == unix.EINTR || e == unix.EAGAIN && o.nr == unix.SYS_OPENAT2) && retries < rawRetries {
			retries++
			i--
			continue
		}
		retries = 0
		if e == 0 && o.kind == rawReadOne && r != 1 {
			e = unix.EPIPE
		}
		if e == 0 && o.kind == rawRecvFd {
			if r != 1 || st.cmsg.hdr.Level != unix.SOL_SOCKET || st.cmsg.hdr.Type != unix.SCM_RIGHTS || st.cmsg.fd < 0 {
				e = unix.EBADMSG
			} else {
				r = uintptr(st.cmsg.fd)
			}
		}
		if e != 0 {
			if uint16(e) == o.tol[0] || uint16(e) == o.tol[1] {
				if o.out > 0 {
					st.regs[(o.out-1)%rawRegs] = -int64(e)
				}
				i += int(o.skip)
				continue
			}
			return i, e
		}
		if o.out > 0 {
			st.regs[(o.out-1)%rawRegs] = int64(r)
		}
	}
	return -1, 0
}

// atFdcwd is AT_FDCWD as a system call's argument.
const atFdcwd = ^uintptr(99) // -100
