package seccomp

import (
	"math/bits"
	"slices"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"
)

// The rules of one system call, lowered to fewer and shorter tests before emission
// (docs/decisions.md, "Speed, eighth attempt: the filter's length"). Each step keeps
// the decision of every input exactly (runtime-spec's comparisons, on the bits the
// kernel reads of each argument: argtype.go); TestShortFilterSameDecisions runs the
// old and the new programs side by side.

// condKind is the form of one lowered test.
type condKind uint8

const (
	// condCmp is a runtime-spec comparison as given (cmpCond).
	condCmp condKind = iota
	// condAnyBits holds when the argument's low word has a bit of mask set: a
	// masked equality of one bit with itself (S_ISUID, O_CREAT), or several such
	// rules merged (S_ISUID|S_ISGID).
	condAnyBits
	// condIn holds when the argument is one of vals (in the low word, masked with and
	// when not 0; the high word equal to hi when checkHi); with neg, when it is none
	// of them. From equalities
	// (personality's values), 32-bit masked equalities (ioctl's requests, chown's ids)
	// and a conjunction of inequalities (socket's domains).
	condIn
)

// cond is one lowered test of argument idx.
type cond struct {
	kind    condKind
	idx     uint
	cmp     specs.LinuxSeccompArg // condCmp
	typ     argType               // condCmp
	and     uint32                // condIn: the argument's bits, for one narrower than 32
	mask    uint32                // condAnyBits
	checkHi bool                  // condIn
	neg     bool                  // condIn
	hi      uint32                // condIn
	vals    []uint32              // condIn
}

// lowered is one rule as it applies to one system call: all conds hold → act.
type lowered struct {
	conds []cond
	act   uint32
}

// lowerArg is the test of one runtime-spec comparison on an argument of type t.
func lowerArg(c specs.LinuxSeccompArg, t argType) cond {
	if t.narrow() {
		return lowerNarrow(c, t)
	}
	switch c.Op {
	case specs.OpMaskedEqual:
		mask, want := c.Value, c.ValueTwo
		switch {
		case want&^mask != 0: // never holds: cmpCond's error
		case mask>>32 == 0 && want == mask && bits.OnesCount64(mask) == 1:
			return cond{kind: condAnyBits, idx: c.Index, mask: uint32(mask)}
		case mask == 0xffffffff:
			return cond{kind: condIn, idx: c.Index, vals: []uint32{uint32(want)}}
		}
	case specs.OpEqualTo:
		return cond{kind: condIn, idx: c.Index, checkHi: true, hi: uint32(c.Value >> 32), vals: []uint32{uint32(c.Value)}}
	case specs.OpNotEqual:
		return cond{kind: condIn, idx: c.Index, checkHi: true, neg: true, hi: uint32(c.Value >> 32), vals: []uint32{uint32(c.Value)}}
	}
	return cond{kind: condCmp, idx: c.Index, cmp: c, typ: t}
}

// lowerNarrow is lowerArg for an argument of fewer than 64 bits (argTypeOf checked
// the values fit): no high word; the mask cut to the argument's bits.
func lowerNarrow(c specs.LinuxSeccompArg, t argType) cond {
	m := t.mask()
	and := uint32(0)
	if m != 0xffffffff {
		and = m
	}
	switch c.Op {
	case specs.OpMaskedEqual:
		mask, want := c.Value&uint64(m), c.ValueTwo
		switch {
		case want&^mask != 0: // never holds: narrowCondition's error
		case want == mask && bits.OnesCount64(mask) == 1:
			return cond{kind: condAnyBits, idx: c.Index, mask: uint32(mask)}
		case mask == uint64(m):
			return cond{kind: condIn, idx: c.Index, and: and, vals: []uint32{uint32(want)}}
		}
	case specs.OpEqualTo:
		return cond{kind: condIn, idx: c.Index, and: and, vals: []uint32{uint32(c.Value)}}
	case specs.OpNotEqual:
		return cond{kind: condIn, idx: c.Index, and: and, neg: true, vals: []uint32{uint32(c.Value)}}
	}
	return cond{kind: condCmp, idx: c.Index, cmp: c, typ: t}
}

// lowerArgs lowers a conjunction on call name's arguments, joining consecutive
// inequalities of one argument with the same high word: x != a and x != b is x not in
// {a, b}. It fails as argTypeOf does.
func lowerArgs(name string, args []specs.LinuxSeccompArg) ([]cond, error) {
	var out []cond
	for _, a := range args {
		t, err := argTypeOf(name, a)
		if err != nil {
			return nil, err
		}
		c := lowerArg(a, t)
		if n := len(out); n > 0 && c.kind == condIn && c.neg {
			p := &out[n-1]
			if p.kind == condIn && p.neg && p.idx == c.idx && p.checkHi == c.checkHi && p.hi == c.hi && p.and == c.and {
				p.vals = append(p.vals, c.vals...)
				continue
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// atom reports whether c can be joined with another test of its argument by "or":
// bits (any of two masks is any of their union) and positive sets (union).
func atom(c cond) bool {
	return c.kind == condAnyBits || (c.kind == condIn && !c.neg)
}

// joinable reports whether atoms a and b of one argument have one "or" form.
func joinable(a, b cond) bool {
	if a.kind != b.kind || a.idx != b.idx {
		return false
	}
	return a.kind == condAnyBits || (a.checkHi == b.checkHi && a.hi == b.hi && a.and == b.and)
}

// join is the "or" of joinable atoms.
func join(cs []cond) cond {
	out := cs[0]
	out.vals = nil
	for _, c := range cs {
		out.mask |= c.mask
		for _, v := range c.vals {
			if !slices.Contains(out.vals, v) {
				out.vals = append(out.vals, v)
			}
		}
	}
	return out
}

// sameAtom reports whether atoms a and b are the same test.
func sameAtom(a, b cond) bool {
	return a.kind == b.kind && a.idx == b.idx && a.mask == b.mask && a.checkHi == b.checkHi &&
		a.hi == b.hi && a.and == b.and && slices.Equal(a.vals, b.vals)
}

// mergeRun returns the one rule equal to the "or" of rs (all with one action), or
// false. It holds when every rule is a conjunction of atoms on the same arguments,
// one atom per argument, and the rules are every combination of the atoms seen per
// argument (a product): then (a1 and b1) or (a1 and b2) or (a2 and b1) or (a2 and b2)
// is (a1 or a2) and (b1 or b2), by distributivity, exactly. Examples: chmod's S_ISUID
// rule and its S_ISGID rule (one argument, two atoms); open's O_CREAT|__O_TMPFILE ×
// S_ISUID|S_ISGID (four rules); chown's owner ∈ {uid, -1} × group ∈ {gid, -1}.
func mergeRun(rs []lowered) (lowered, bool) {
	first := rs[0]
	n := len(first.conds)
	if n == 0 || n > 6 {
		return lowered{}, false
	}
	for i, c := range first.conds {
		for _, d := range first.conds[:i] {
			if d.idx == c.idx {
				return lowered{}, false // two atoms on one argument: not a product
			}
		}
	}
	for _, r := range rs {
		if len(r.conds) != n {
			return lowered{}, false
		}
		for i, c := range r.conds {
			if !atom(c) || !joinable(c, first.conds[i]) {
				return lowered{}, false
			}
		}
	}
	var per [6][]cond // distinct atoms per argument, in first.conds order
	seen := make(map[[6]uint8]bool, len(rs))
	for _, r := range rs {
		var tuple [6]uint8 // each atom's index in per
		for i, c := range r.conds {
			k := slices.IndexFunc(per[i], func(p cond) bool { return sameAtom(p, c) })
			if k < 0 {
				k = len(per[i])
				per[i] = append(per[i], c)
			}
			tuple[i] = uint8(k)
		}
		seen[tuple] = true
	}
	size := 1
	for _, p := range per[:n] {
		size *= len(p)
	}
	if size != len(seen) {
		return lowered{}, false
	}
	out := lowered{act: first.act, conds: make([]cond, n)}
	for i, p := range per[:n] {
		out.conds[i] = join(p)
	}
	return out, true
}

// mergeRules joins runs of consecutive rules with one action whose "or" has one
// conjunction form (mergeRun): the first rule that matches decides, so a run of rules
// with the same action decides as their "or". Longest runs first.
func mergeRules(rs []lowered) []lowered {
	if len(rs) == 1 {
		return rs
	}
	var out []lowered
	for i := 0; i < len(rs); {
		end := i + 1
		for end < len(rs) && rs[end].act == rs[i].act {
			end++
		}
		merged := false
		for j := end; j > i+1; j-- {
			if m, ok := mergeRun(rs[i:j]); ok {
				out = append(out, m)
				i, merged = j, true
				break
			}
		}
		if !merged {
			out = append(out, rs[i])
			i++
		}
	}
	// nothing after a rule without conditions is reached
	for i, r := range out {
		if len(r.conds) == 0 {
			return out[:i+1]
		}
	}
	return out
}

// blockKey identifies a call's lowered rules: calls with the same key share one block.
func blockKey(rs []lowered) string {
	var b []byte
	for _, r := range rs {
		b = strconv.AppendUint(b, uint64(r.act), 16)
		for _, c := range r.conds {
			b = append(b, '(')
			if c.kind == condCmp {
				b = append(b, c.cmp.Op...)
				b = strconv.AppendUint(b, uint64(c.idx), 10)
				b = append(b, ',')
				b = strconv.AppendUint(b, c.cmp.Value, 16)
				b = append(b, ',')
				b = strconv.AppendUint(b, c.cmp.ValueTwo, 16)
				b = append(b, ',')
				b = strconv.AppendUint(b, uint64(c.typ.bits), 10)
				b = strconv.AppendBool(b, c.typ.signed)
			} else {
				b = append(b, byte('0'+c.kind))
				b = strconv.AppendUint(b, uint64(c.idx), 10)
				b = append(b, ',')
				b = strconv.AppendUint(b, uint64(c.mask), 16)
				b = strconv.AppendBool(b, c.checkHi)
				b = strconv.AppendBool(b, c.neg)
				b = strconv.AppendUint(b, uint64(c.hi), 16)
				b = append(b, '&')
				b = strconv.AppendUint(b, uint64(c.and), 16)
				for _, v := range c.vals {
					b = append(b, ',')
					b = strconv.AppendUint(b, uint64(v), 16)
				}
			}
			b = append(b, ')')
		}
		b = append(b, ';')
	}
	return string(b)
}

// emitCond emits one lowered test: control reaches pass when it holds, fail when not
// (labels; pass may be fall: the instruction after the test).
func emitCond(a *asm, c cond, pass, fail int) error {
	if c.kind == condCmp {
		return cmpCond(a, c.cmp, c.typ, pass, fail)
	}
	end := -1
	if pass == fall {
		end = a.label()
		pass = end
	}
	lo := uint32(offArgs + 8*c.idx)
	hi := lo + 4
	switch c.kind {
	case condAnyBits:
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		a.jump(bpf.JumpBitsSet, c.mask, pass, fail)
	case condIn:
		in, out := pass, fail
		if c.neg {
			in, out = fail, pass
		}
		if c.checkHi {
			a.emit(bpf.LoadAbsolute{Off: hi, Size: 4})
			a.jump(bpf.JumpEqual, c.hi, fall, out)
		}
		a.emit(bpf.LoadAbsolute{Off: lo, Size: 4})
		if c.and != 0 {
			a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: c.and})
		}
		for i, v := range c.vals {
			other := fall
			if i == len(c.vals)-1 {
				other = out
			}
			a.jump(bpf.JumpEqual, v, in, other)
		}
	}
	if end >= 0 {
		a.mark(end)
	}
	return nil
}

// cmpCond is condition with a pass label (or fall), and the masked equality's words skipped
// where the mask makes them always equal (mask word 0) or the "and" a no-op (mask
// word 0xffffffff).
func cmpCond(a *asm, c specs.LinuxSeccompArg, t argType, pass, fail int) error {
	if c.Op != specs.OpMaskedEqual || t.narrow() {
		if err := condition(a, c, t, fail); err != nil {
			return err
		}
		if pass != fall {
			a.ja(pass)
		}
		return nil
	}
	mask, want := c.Value, c.ValueTwo
	if want&^mask != 0 {
		return condition(a, c, t, fail) // its error
	}
	lo := uint32(offArgs + 8*c.Index)
	type word struct {
		off        uint32
		mask, want uint32
	}
	var ws []word
	for _, w := range []word{{lo + 4, uint32(mask >> 32), uint32(want >> 32)}, {lo, uint32(mask), uint32(want)}} {
		if w.mask != 0 {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		if pass != fall {
			a.ja(pass)
		}
		return nil
	}
	for i, w := range ws {
		a.emit(bpf.LoadAbsolute{Off: w.off, Size: 4})
		if w.mask != 0xffffffff {
			a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: w.mask})
		}
		ok := fall
		if i == len(ws)-1 {
			ok = pass
		}
		a.jump(bpf.JumpEqual, w.want, ok, fail)
	}
	return nil
}
