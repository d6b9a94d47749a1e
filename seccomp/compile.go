package seccomp

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Program is a compiled filter: classic BPF instructions for seccomp(2).
type Program []unix.SockFilter

// x32SyscallBit marks x32 ABI system call numbers on x86_64.
const x32SyscallBit = 0x40000000

// Offsets in struct seccomp_data (linux/seccomp.h): nr, arch, instruction_pointer, args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// The program is generated here rather than by go-seccomp-bpf: its assembler leaves an
// argument in the accumulator when a condition fails, so every later rule compared that
// argument against system call numbers and fell through to the default action (a
// namespace-creating clone was allowed). This generator dispatches by system call
// number (dispatch: a binary search, then only that call's rules, in order, lowered by
// lower.go; jumps too long for BPF get a ja, relax). The straight chain, one block a
// rule and name (each name's argument types: argtype.go), each starting by loading the
// system call number again, is what the tests compare it with (and Compile's fallback
// should dispatch ever fail):
//
//	ld  [nr]
//	jeq #n, 0, next
//	for each condition, load the argument's words and jump to next when it fails
//	ret ACTION
//	next: …
//
// Every conditional jump stays within its block (BPF jumps are forward and at most 255
// apart).

// asm is a tiny assembler with forward labels.
type asm struct {
	ins    []bpf.Instruction
	fix    []fixup
	labels map[int]int
	next   int
	skips  []skip // labels placed by position (skipOne)
}

type skip struct{ label, at int }

type fixup struct {
	at     int
	tl, fl int // labels for jt and jf; -1: fall through
	ja     bool
}

const fall = -1

func (a *asm) label() int             { a.next++; return a.next }
func (a *asm) mark(l int)             { a.labels[l] = len(a.ins) }
func (a *asm) emit(i bpf.Instruction) { a.ins = append(a.ins, i) }
func (a *asm) jump(cond bpf.JumpTest, val uint32, tl, fl int) {
	a.fix = append(a.fix, fixup{at: len(a.ins), tl: tl, fl: fl})
	a.ins = append(a.ins, bpf.JumpIf{Cond: cond, Val: val})
}

// skipOne is a label for the instruction after the next one (jump over one).
func (a *asm) skipOne() int {
	l := a.label()
	a.skips = append(a.skips, skip{label: l, at: len(a.ins) + 2})
	return l
}
func (a *asm) ja(l int) {
	a.fix = append(a.fix, fixup{at: len(a.ins), tl: l, ja: true})
	a.ins = append(a.ins, bpf.Jump{})
}

// relax gives every conditional jump whose target is more than 255 instructions
// ahead a ja (32-bit reach) right after it, until every one fits. Labels only
// (not skipOne).
func (a *asm) relax() {
	for {
		grown := false
		for fi := 0; fi < len(a.fix); fi++ {
			f := a.fix[fi]
			if f.ja {
				continue
			}
			far := func(l int) bool { return l != fall && a.labels[l]-f.at-1 > 255 }
			if !far(f.tl) && !far(f.fl) {
				continue
			}
			// make fall-through explicit, then open a slot after the jump for each far side
			after := a.label()
			a.labels[after] = f.at + 1
			sides := [2]int{f.tl, f.fl}
			for i, l := range sides {
				if l == fall {
					sides[i] = after
					continue
				}
				if !far(l) {
					continue
				}
				a.insert(f.at + 1)
				tramp := a.label()
				a.labels[tramp] = f.at + 1
				a.fix = append(a.fix, fixup{at: f.at + 1, tl: l, ja: true})
				sides[i] = tramp
			}
			a.fix[fi].tl, a.fix[fi].fl = sides[0], sides[1]
			grown = true
		}
		if !grown {
			return
		}
	}
}

// insert opens an empty slot at position p: everything at p and after moves one on.
func (a *asm) insert(p int) {
	a.ins = slices.Insert(a.ins, p, bpf.Instruction(bpf.Jump{}))
	for l, pos := range a.labels {
		if pos >= p {
			a.labels[l] = pos + 1
		}
	}
	for i := range a.fix {
		if a.fix[i].at >= p {
			a.fix[i].at++
		}
	}
}

func (a *asm) resolve() error {
	for _, k := range a.skips {
		a.labels[k.label] = k.at
	}
	for _, f := range a.fix {
		skip := func(l int) (uint32, error) {
			if l == fall {
				return 0, nil
			}
			pos, ok := a.labels[l]
			if !ok || pos <= f.at {
				return 0, fmt.Errorf("internal: bad label")
			}
			return uint32(pos - f.at - 1), nil
		}
		if f.ja {
			s, err := skip(f.tl)
			if err != nil {
				return err
			}
			a.ins[f.at] = bpf.Jump{Skip: s}
			continue
		}
		t, err := skip(f.tl)
		if err != nil {
			return err
		}
		e, err := skip(f.fl)
		if err != nil {
			return err
		}
		if t > 255 || e > 255 {
			return fmt.Errorf("a rule is too long for a BPF jump (more than 255 instructions)")
		}
		j := a.ins[f.at].(bpf.JumpIf)
		j.SkipTrue, j.SkipFalse = uint8(t), uint8(e)
		a.ins[f.at] = j
	}
	return nil
}

// Compile turns the runtime-spec filter into a program: a check that kills any call
// through another ABI than x86_64 (i386 int 0x80, x32), then the entries of s.Syscalls
// that name the call, in order (the first match decides), then s.DefaultAction. The
// output depends on s alone, byte for byte.
func Compile(s *specs.LinuxSeccomp) (Program, error) {
	if s == nil {
		return nil, nil
	}
	for _, ar := range s.Architectures {
		if ar != specs.ArchX86_64 {
			return nil, fmt.Errorf("architecture %s: only the native SCMP_ARCH_X86_64 is allowed", ar)
		}
	}
	def, err := action(s.DefaultAction, s.DefaultErrnoRet)
	if err != nil {
		return nil, fmt.Errorf("default action: %w", err)
	}
	for i, sc := range s.Syscalls {
		if _, err := action(sc.Action, sc.ErrnoRet); err != nil {
			return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
		}
	}
	// By system call number (a binary search, then only that call's rules); the
	// straight chain on an internal error of dispatch (the tests require dispatch's).
	a, err := dispatch(s.Syscalls, def)
	if err != nil {
		if a, err = chain(s.Syscalls, def); err != nil {
			return nil, err
		}
	}
	raw, err := bpf.Assemble(a.ins)
	if err != nil {
		return nil, err
	}
	if len(raw) > 4096 {
		return nil, fmt.Errorf("the filter has %d instructions, more than the kernel's 4096", len(raw))
	}
	prog := make(Program, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog, nil
}

// prologue kills any call through another ABI than x86_64 (the arch check first, then
// the x32 bit), leaving nr in the accumulator.
func prologue(a *asm) {
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1})
	a.emit(bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS})
	a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	a.emit(bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1})
	a.emit(bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS})
}

// chain is the straight program: one block per rule, in order (see the top of the file).
func chain(rules []specs.LinuxSyscall, def uint32) (*asm, error) {
	a := &asm{labels: map[int]int{}}
	prologue(a)
	for i, sc := range rules {
		if err := rule(a, sc); err != nil {
			return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
		}
	}
	a.emit(bpf.RetConstant{Val: def})
	return a, a.resolve()
}

// entry is one rule as it applies to one system call.
type entry struct {
	name string
	args []specs.LinuxSeccompArg
	act  uint32
}

// dispatch is the program by system call number: after the prologue, a search over
// the numbers the rules name (nr stays in the accumulator: jge splits, then up to
// leafSize tests of a number or a range of numbers with one target, which jump
// straight to the calls' block) sends each call to the
// block of the rules that name it, in their order (the first that matches decides, as
// in the chain, since rules for other calls never match it); a call no rule names goes
// straight to the default action. The rules of a call are lowered first (lower.go:
// runs of rules with one action merged, tests of one argument joined, no-op words
// skipped); calls with the same lowered rules share one block, a block without
// conditions is its action's return, and the returns are shared at the end of the
// program. A call with argument rules (openat, ioctl) then costs a few comparisons
// instead of the whole chain, and the calls without any keep the kernel's
// constant-action cache. Jumps longer than a BPF jump's 255 get a ja (relax).
func dispatch(rules []specs.LinuxSyscall, def uint32) (*asm, error) {
	byNr := map[uint32][]lowered{}
	for i, sc := range rules {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
		}
		if len(sc.Names) == 0 {
			return nil, fmt.Errorf("syscalls[%d]: no names", i)
		}
		for _, c := range sc.Args {
			if c.Index > 5 {
				return nil, fmt.Errorf("syscalls[%d]: argument index %d: want 0 to 5", i, c.Index)
			}
		}
		for _, n := range sc.Names {
			nr, ok := syscallNumbers()[n]
			if !ok {
				return nil, fmt.Errorf("syscalls[%d]: unknown system call %q (x86_64)", i, n)
			}
			conds, err := lowerArgs(n, sc.Args)
			if err != nil {
				return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
			}
			byNr[uint32(nr)] = append(byNr[uint32(nr)], lowered{conds: conds, act: act})
		}
	}
	a := &asm{labels: make(map[int]int, 64), ins: make([]bpf.Instruction, 0, 256), fix: make([]fixup, 0, 128)}
	rets := map[uint32]int{} // action → the label of its shared return
	ret := func(act uint32) int {
		if l, ok := rets[act]; ok {
			return l
		}
		rets[act] = a.label()
		return rets[act]
	}
	dflt := ret(def)
	// each call's target: the shared return of an unconditional action, or a block
	type block struct {
		label int
		rules []lowered
	}
	var blocks []*block
	byKey := map[string]*block{}
	blockOf := map[uint32]*block{}
	target := map[uint32]int{}
	nrs := make([]uint32, 0, len(byNr))
	for n := range byNr {
		nrs = append(nrs, n)
	}
	slices.Sort(nrs)
	for _, n := range nrs {
		rs := mergeRules(byNr[n])
		if len(rs[0].conds) == 0 {
			target[n] = ret(rs[0].act)
			continue
		}
		k := blockKey(rs)
		b := byKey[k]
		if b == nil {
			b = &block{rules: rs}
			byKey[k] = b
			blocks = append(blocks, b)
		}
		blockOf[n] = b
	}
	// The code from a rule on depends only on the rules from it on (their blockKey):
	// one node of code per distinct such tail, so that blocks that end alike
	// (socketpair's rules are socket's after its first) share their end. A node's
	// failure goes to the node of the tail after it, emitted later (a shorter tail):
	// BPF jumps only forward.
	type node struct {
		label, fail, length int
		rule                lowered
	}
	var nodes []*node
	byTail := map[string]*node{}
	slices.SortStableFunc(blocks, func(x, y *block) int { return len(y.rules) - len(x.rules) })
	for _, b := range blocks {
		// the rules; when every one fails, the default action, or the action of a
		// last rule without conditions (mergeRules: nothing follows one)
		rs, next := b.rules, dflt
		if last := rs[len(rs)-1]; len(last.conds) == 0 {
			rs, next = rs[:len(rs)-1], ret(last.act)
		}
		for i := len(rs) - 1; i >= 0; i-- {
			k := blockKey(b.rules[i:])
			nd := byTail[k]
			if nd == nil {
				nd = &node{label: a.label(), fail: next, length: len(b.rules) - i, rule: rs[i]}
				byTail[k] = nd
				nodes = append(nodes, nd)
			}
			next = nd.label
		}
		b.label = next
	}
	for n, b := range blockOf {
		target[n] = b.label
	}
	slices.SortStableFunc(nodes, func(x, y *node) int { return y.length - x.length })
	// calls that end at the default action need no test; consecutive numbers with one
	// target are one segment (mount … reboot, 163-169; io_uring_setup … fspick, 425-433)
	type segment struct {
		first, last uint32
		target      int
	}
	var segs []segment
	for _, n := range nrs {
		t := target[n]
		if t == dflt {
			continue
		}
		if k := len(segs) - 1; k >= 0 && segs[k].last+1 == n && segs[k].target == t {
			segs[k].last = n
			continue
		}
		segs = append(segs, segment{n, n, t})
	}
	prologue(a)
	// above: x >= segs[lo].first is known (the right side of a split)
	var search func(lo, hi int, above bool)
	search = func(lo, hi int, above bool) {
		if hi-lo <= leafSize {
			if hi == lo {
				a.ja(dflt)
			}
			for i := lo; i < hi; i++ {
				sg, next := segs[i], fall
				if i == hi-1 {
					next = dflt
				}
				if sg.first == sg.last {
					a.jump(bpf.JumpEqual, sg.first, sg.target, next)
					continue
				}
				// below first: not in this segment nor a later one, and the earlier
				// ones have jumped away
				if i > lo || !above {
					a.jump(bpf.JumpGreaterOrEqual, sg.first, fall, dflt)
				}
				a.jump(bpf.JumpGreaterThan, sg.last, next, sg.target)
			}
			return
		}
		mid := (lo + hi) / 2
		right := a.label()
		a.jump(bpf.JumpGreaterOrEqual, segs[mid].first, right, fall)
		search(lo, mid, above)
		a.mark(right)
		search(mid, hi, true)
	}
	search(0, len(segs), false)
	for _, nd := range nodes {
		a.mark(nd.label)
		for j, c := range nd.rule.conds {
			pass := fall
			if j == len(nd.rule.conds)-1 {
				pass = ret(nd.rule.act)
			}
			if err := emitCond(a, c, pass, nd.fail); err != nil {
				return nil, err
			}
		}
	}
	acts := make([]uint32, 0, len(rets))
	for act := range rets {
		acts = append(acts, act)
	}
	slices.Sort(acts)
	for _, act := range acts {
		a.mark(rets[act])
		a.emit(bpf.RetConstant{Val: act})
	}
	a.relax()
	return a, a.resolve()
}

// leafSize is the most segments dispatch's search tests in a row (a jeq each, a jge
// and a jgt for a range).
const leafSize = 4

// rule emits one block per name of the rule (each name's argument types).
func rule(a *asm, sc specs.LinuxSyscall) error {
	act, err := action(sc.Action, sc.ErrnoRet)
	if err != nil {
		return err
	}
	if len(sc.Names) == 0 {
		return fmt.Errorf("no names")
	}
	for _, n := range sc.Names {
		nr, ok := syscallNumbers()[n]
		if !ok {
			return fmt.Errorf("unknown system call %q (x86_64)", n)
		}
		next := a.label()
		a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
		a.jump(bpf.JumpEqual, uint32(nr), fall, next)
		for _, c := range sc.Args {
			t, err := argTypeOf(n, c)
			if err != nil {
				return err
			}
			if err := condition(a, c, t, next); err != nil {
				return err
			}
		}
		a.emit(bpf.RetConstant{Val: act})
		a.mark(next)
	}
	return nil
}

// condition emits the test of one argument comparison of type t, jumping to fail when
// it does not hold: a 64-bit argument as two 32-bit words (masked equality masks
// both), a narrow one (narrowCondition) on the bits the kernel reads.
func condition(a *asm, c specs.LinuxSeccompArg, t argType, fail int) error {
	if c.Index > 5 {
		return fmt.Errorf("argument index %d: want 0 to 5", c.Index)
	}
	if t.narrow() {
		return narrowCondition(a, c, t, fail)
	}
	lo := uint32(offArgs + 8*c.Index) // little endian: the low word first
	hi := lo + 4
	vh, vl := uint32(c.Value>>32), uint32(c.Value)
	pass := a.label()
	switch c.Op {
	case specs.OpEqualTo:
		a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
		a.jump(bpf.JumpEqual, vh, fall, fail)
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		a.jump(bpf.JumpEqual, vl, fall, fail)
	case specs.OpNotEqual:
		a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
		a.jump(bpf.JumpEqual, vh, fall, pass)
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		a.jump(bpf.JumpEqual, vl, fail, fall)
	case specs.OpGreaterThan, specs.OpGreaterEqual:
		a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
		a.jump(bpf.JumpGreaterThan, vh, pass, fall)
		a.jump(bpf.JumpEqual, vh, fall, fail)
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		if c.Op == specs.OpGreaterThan {
			a.jump(bpf.JumpGreaterThan, vl, fall, fail)
		} else {
			a.jump(bpf.JumpGreaterOrEqual, vl, fall, fail)
		}
	case specs.OpLessThan, specs.OpLessEqual:
		a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
		a.jump(bpf.JumpGreaterOrEqual, vh, fall, pass)
		a.jump(bpf.JumpEqual, vh, fall, fail)
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		if c.Op == specs.OpLessThan {
			a.jump(bpf.JumpGreaterOrEqual, vl, fail, fall)
		} else {
			a.jump(bpf.JumpGreaterThan, vl, fail, fall)
		}
	case specs.OpMaskedEqual:
		// runtime-spec: (arg & Value) == ValueTwo
		mask, want := c.Value, c.ValueTwo
		if want&^mask != 0 {
			return fmt.Errorf("masked equality %#x & %#x == %#x can never hold", mask, mask, want)
		}
		a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: uint32(mask >> 32)})
		a.jump(bpf.JumpEqual, uint32(want>>32), fall, fail)
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: uint32(mask)})
		a.jump(bpf.JumpEqual, uint32(want), fall, fail)
	default:
		return fmt.Errorf("operator %s is not supported", c.Op)
	}
	a.mark(pass)
	return nil
}

func action(a specs.LinuxSeccompAction, errno *uint) (uint32, error) {
	switch a {
	case specs.ActAllow:
		return unix.SECCOMP_RET_ALLOW, nil
	case specs.ActKillProcess:
		return unix.SECCOMP_RET_KILL_PROCESS, nil
	case specs.ActLog:
		return unix.SECCOMP_RET_LOG, nil
	case specs.ActNotify:
		return unix.SECCOMP_RET_USER_NOTIF, nil
	case specs.ActErrno:
		e := uint(unix.EPERM)
		if errno != nil {
			e = *errno
		}
		// errno 0 (given, not defaulted) is success without the call (SCMP_ACT_ERRNO(0))
		if e > 4095 {
			return 0, fmt.Errorf("errno %d out of range", e)
		}
		return unix.SECCOMP_RET_ERRNO | uint32(e), nil
	}
	return 0, fmt.Errorf("action %s is not supported (SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_KILL_PROCESS, SCMP_ACT_LOG, SCMP_ACT_NOTIFY)", a)
}

// Notifies reports whether p can return SECCOMP_RET_USER_NOTIF: it must then be loaded
// with SECCOMP_FILTER_FLAG_NEW_LISTENER and someone must answer (seccomp_unotify(2));
// without a listener the kernel fails those calls with ENOSYS.
func (p Program) Notifies() bool {
	for _, f := range p {
		if f.Code == unix.BPF_RET|unix.BPF_K && f.K&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_USER_NOTIF {
			return true
		}
	}
	return false
}

// Bytes is the program as the kernel's struct sock_filter array, native endian: what
// bwrap's --seccomp reads.
func (p Program) Bytes() []byte {
	b := make([]byte, 0, 8*len(p))
	for _, f := range p {
		b = binary.LittleEndian.AppendUint16(b, f.Code)
		b = append(b, f.Jt, f.Jf)
		b = binary.LittleEndian.AppendUint32(b, f.K)
	}
	return b
}

// Text is a readable listing, one instruction a line.
func (p Program) Text() string {
	var sb strings.Builder
	for i, f := range p {
		ins := bpf.RawInstruction{Op: f.Code, Jt: f.Jt, Jf: f.Jf, K: f.K}.Disassemble()
		fmt.Fprintf(&sb, "%4d  %v\n", i, ins)
	}
	return sb.String()
}

// Load installs the program on every thread of the calling process (seccomp(2)
// SECCOMP_SET_MODE_FILTER with SECCOMP_FILTER_FLAG_TSYNC); every process forked after
// inherits it. no_new_privs must be set first (caps.DropAll). An error means no filter.
func Load(p Program) error {
	if len(p) == 0 {
		return nil
	}
	fprog := unix.SockFprog{Len: uint16(len(p)), Filter: &p[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(p)
	if errno != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
	}
	if r != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER): thread %d could not be synchronized", r)
	}
	return nil
}

// ParseProgram is the program whose Bytes are b. It fails on a length that is not a
// whole number of 8-byte instructions, or beyond BPF_MAXINSNS (4096), which seccomp(2)
// refuses.
func ParseProgram(b []byte) (Program, error) {
	if len(b)%8 != 0 || len(b)/8 > 4096 {
		return nil, fmt.Errorf("a seccomp program of %d bytes is not 1-4096 instructions of 8 bytes", len(b))
	}
	if len(b) == 0 {
		return nil, nil
	}
	p := make(Program, 0, len(b)/8)
	for ; len(b) > 0; b = b[8:] {
		p = append(p, unix.SockFilter{Code: binary.LittleEndian.Uint16(b), Jt: b[2], Jf: b[3], K: binary.LittleEndian.Uint32(b[4:])})
	}
	return p, nil
}
