package main

import (
	"encoding/binary"
	"fmt"
)

// A minimal reader of the BTF type section (Documentation/bpf/btf.rst): enough to
// follow a typedef to the integer, enum or pointer it names.

const (
	btfInt      = 1
	btfPtr      = 2
	btfArray    = 3
	btfStruct   = 4
	btfUnion    = 5
	btfEnum     = 6
	btfFwd      = 7
	btfTypedef  = 8
	btfVolatile = 9
	btfConst    = 10
	btfRestrict = 11
	btfFunc     = 12
	btfProto    = 13
	btfVar      = 14
	btfDatasec  = 15
	btfFloat    = 16
	btfDeclTag  = 17
	btfTypeTag  = 18
	btfEnum64   = 19
)

type btfType struct {
	name       string
	kind       int
	kflag      bool
	sizeOrType uint32
	intBits    int  // btfInt
	intSigned  bool // btfInt
}

type btf struct {
	types  []btfType // index = type id; 0 is void
	byName map[[2]any]int
}

func parseBTF(raw []byte) (*btf, error) {
	le := binary.LittleEndian
	if len(raw) < 24 || le.Uint16(raw) != 0xeb9f {
		return nil, fmt.Errorf("not little-endian BTF")
	}
	hdrLen := le.Uint32(raw[4:])
	typeOff, typeLen := le.Uint32(raw[8:]), le.Uint32(raw[12:])
	strOff, strLen := le.Uint32(raw[16:]), le.Uint32(raw[20:])
	ts, ss := uint64(hdrLen)+uint64(typeOff), uint64(hdrLen)+uint64(strOff)
	if ts+uint64(typeLen) > uint64(len(raw)) || ss+uint64(strLen) > uint64(len(raw)) {
		return nil, fmt.Errorf("sections beyond the file")
	}
	types, strs := raw[ts:ts+uint64(typeLen)], raw[ss:ss+uint64(strLen)]
	str := func(off uint32) string {
		if int(off) >= len(strs) {
			return ""
		}
		s := strs[off:]
		for i, c := range s {
			if c == 0 {
				return string(s[:i])
			}
		}
		return string(s)
	}
	b := &btf{types: []btfType{{}}, byName: map[[2]any]int{}}
	for p := 0; p < len(types); {
		if p+12 > len(types) {
			return nil, fmt.Errorf("truncated type at %d", p)
		}
		info := le.Uint32(types[p+4:])
		t := btfType{name: str(le.Uint32(types[p:])), kind: int(info>>24) & 0x1f, kflag: info>>31 == 1, sizeOrType: le.Uint32(types[p+8:])}
		vlen := int(info & 0xffff)
		p += 12
		extra := 0
		switch t.kind {
		case btfInt:
			if p+4 > len(types) {
				return nil, fmt.Errorf("truncated int")
			}
			enc := le.Uint32(types[p:])
			t.intBits, t.intSigned = int(enc&0xff), enc>>24&1 == 1
			extra = 4
		case btfArray:
			extra = 12
		case btfStruct, btfUnion, btfDatasec, btfEnum64:
			extra = 12 * vlen
		case btfEnum, btfProto:
			extra = 8 * vlen
		case btfVar, btfDeclTag:
			extra = 4
		case btfPtr, btfFwd, btfTypedef, btfVolatile, btfConst, btfRestrict, btfFunc, btfFloat, btfTypeTag:
		default:
			return nil, fmt.Errorf("unknown BTF kind %d", t.kind)
		}
		p += extra
		b.types = append(b.types, t)
		if t.name != "" {
			k := [2]any{t.kind, t.name}
			if _, dup := b.byName[k]; !dup {
				b.byName[k] = len(b.types) - 1
			}
		}
	}
	return b, nil
}

// resolve follows the typedef or enum named name to its width and signedness.
func (b *btf) resolve(name string, kind int) (int, bool, error) {
	id, ok := b.byName[[2]any{kind, name}]
	if !ok {
		return 0, false, fmt.Errorf("no BTF type %q", name)
	}
	for range 32 {
		t := b.types[id]
		switch t.kind {
		case btfTypedef, btfConst, btfVolatile, btfRestrict, btfTypeTag:
			id = int(t.sizeOrType)
			if id <= 0 || id >= len(b.types) {
				return 0, false, fmt.Errorf("%s: bad type id %d", name, id)
			}
		case btfInt:
			return t.intBits, t.intSigned, nil
		case btfEnum, btfEnum64:
			return int(t.sizeOrType) * 8, t.kflag, nil
		case btfPtr:
			return 64, false, nil
		default:
			return 0, false, fmt.Errorf("%s is a BTF kind %d, not an integer", name, t.kind)
		}
	}
	return 0, false, fmt.Errorf("%s: typedef chain too long", name)
}
