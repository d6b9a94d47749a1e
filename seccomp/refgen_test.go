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
// word tests, in rule order. Its argument tests are compile.go's condition, which the
// shorter generator did not change: TestRefGeneratorIsTheOldOne pins the whole to the
// old program, so a later change to condition shows there. Since arguments are compared
// on the bits the kernel reads (argtype.go), a narrow argument's condition is one word
// (narrowCondition); the pin was remade then (docs/decisions.md, "compared as the
// kernel reads them").

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
			byNr[uint32(nr)] = append(byNr[uint32(nr)], entry{name: n, args: sc.Args, act: act})
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
				t, err := argTypeOf(e.name, c)
				if err != nil {
					return nil, err
				}
				if err := condition(a, c, t, next); err != nil {
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
