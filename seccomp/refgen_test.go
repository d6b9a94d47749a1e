package seccomp

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The generator as it was before the filter was made shorter (docs/decisions.md,
// "Speed, eighth attempt: the filter's length"), kept unchanged as the reference that
// TestShortFilterSameDecisions compares the new programs with: a binary search on the
// system call number to a block per call, then each rule's conditions as two 32-bit
// word tests, in rule order.

// refDispatch is the old dispatch.
func refDispatch(rules []specs.LinuxSyscall, def uint32) (*asm, error) {
	byNr := map[uint32][]entry{}
	for i, sc := range rules {
		act, err := action(sc.Action, sc.ErrnoRet)
		if err != nil {
			return nil, fmt.Errorf("syscalls[%d]: %w", i, err)
		}
		if len(sc.Names) == 0 {
			return nil, fmt.Errorf("syscalls[%d]: no names", i)
		}
		for _, n := range sc.Names {
			nr, ok := syscallNumbers()[n]
			if !ok {
				return nil, fmt.Errorf("syscalls[%d]: unknown system call %q (x86_64)", i, n)
			}
			byNr[uint32(nr)] = append(byNr[uint32(nr)], entry{args: sc.Args, act: act})
		}
	}
	nrs := make([]uint32, 0, len(byNr))
	for n := range byNr {
		nrs = append(nrs, n)
	}
	slices.Sort(nrs)
	a := &asm{labels: map[int]int{}}
	refPrologue(a)
	blocks := make([]int, len(nrs))
	for i := range blocks {
		blocks[i] = a.label()
	}
	dflt := a.label()
	var search func(lo, hi int)
	search = func(lo, hi int) {
		if hi-lo <= 4 {
			for i := lo; i < hi; i++ {
				a.jump(bpf.JumpEqual, nrs[i], fall, a.skipOne())
				a.ja(blocks[i])
			}
			a.ja(dflt)
			return
		}
		mid := (lo + hi) / 2
		right := a.label()
		a.jump(bpf.JumpGreaterOrEqual, nrs[mid], right, fall)
		search(lo, mid)
		a.mark(right)
		search(mid, hi)
	}
	search(0, len(nrs))
	for i, n := range nrs {
		a.mark(blocks[i])
		for _, e := range byNr[n] {
			if len(e.args) == 0 {
				a.emit(bpf.RetConstant{Val: e.act})
				break // nothing after it is reached
			}
			next := a.label()
			for _, c := range e.args {
				if err := refCondition(a, c, next); err != nil {
					return nil, err
				}
			}
			a.emit(bpf.RetConstant{Val: e.act})
			a.mark(next)
		}
		a.emit(bpf.RetConstant{Val: def})
	}
	a.mark(dflt)
	a.emit(bpf.RetConstant{Val: def})
	return a, a.resolve()
}

// refPrologue is the old prologue.
func refPrologue(a *asm) {
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AUDIT_ARCH_X86_64, SkipTrue: 1})
	a.emit(bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS})
	a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	a.emit(bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1})
	a.emit(bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS})
}

// refCondition is the old condition.
func refCondition(a *asm, c specs.LinuxSeccompArg, fail int) error {
	if c.Index > 5 {
		return fmt.Errorf("argument index %d: want 0 to 5", c.Index)
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
