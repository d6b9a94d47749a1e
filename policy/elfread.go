package policy

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
)

// ELF constants (elf(5)) readELFDeps uses.
const (
	elfClass32   = 1
	elfClass64   = 2
	elfData2LSB  = 1
	elfData2MSB  = 2
	elfPTLoad    = 1
	elfPTDynamic = 2
	elfPTInterp  = 3
	elfDTNull    = 0
	elfDTNeeded  = 1
	elfDTStrtab  = 5
	elfDTStrsz   = 10
)

// Bounds on what readELFDeps reads of a file the command may have chosen: real
// programs have a dozen program headers, a few hundred dynamic entries and a string
// table of some KiB.
const (
	elfMaxPhdrs   = 1024
	elfMaxPhent   = 256 // bytes of one program header (56 in ELF64, 32 in ELF32)
	elfMaxDynamic = 1 << 20
	elfMaxStrtab  = 4 << 20
	elfMaxNeeded  = 1024
)

// elfProg is one program header's fields readELFDeps uses.
type elfProg struct {
	typ                uint32
	off, vaddr, filesz uint64
}

// readELFDeps reads from r, an ELF file of size bytes, the interpreter PT_INTERP names
// ("" when there is none) and the DT_NEEDED entries of the PT_DYNAMIC segment, found
// through DT_STRTAB in the PT_LOAD segment that holds it (elf(5)); both classes, both
// byte orders. ok is false when r is not ELF (magic, class, byte order or program
// header table not readable). A dynamic segment or string table that is not there or
// out of bounds gives no libraries, not an error: the caller only makes a hint of them.
// Written for the hint instead of using debug/elf, whose imports (DWARF, zlib, zstd)
// were package inits and 0.3 MB at every start of gosbx (docs/decisions.md, "Speed,
// sixth attempt: the launcher's start").
func readELFDeps(r io.ReaderAt, size int64) (interp string, needed []string, ok bool) {
	var id [64]byte
	if size < 52 || readFull(r, id[:min(int64(len(id)), size)], 0) != nil || string(id[:4]) != "\x7fELF" {
		return "", nil, false
	}
	var bo binary.ByteOrder
	switch id[5] {
	case elfData2LSB:
		bo = binary.LittleEndian
	case elfData2MSB:
		bo = binary.BigEndian
	default:
		return "", nil, false
	}
	is64 := id[4] == elfClass64
	var phoff uint64
	var phentsize, phnum, want uint64
	switch id[4] {
	case elfClass64:
		if size < 64 {
			return "", nil, false
		}
		phoff, phentsize, phnum, want = bo.Uint64(id[0x20:]), uint64(bo.Uint16(id[0x36:])), uint64(bo.Uint16(id[0x38:])), 56
	case elfClass32:
		phoff, phentsize, phnum, want = uint64(bo.Uint32(id[0x1c:])), uint64(bo.Uint16(id[0x2a:])), uint64(bo.Uint16(id[0x2c:])), 32
	default:
		return "", nil, false
	}
	if phnum == 0 {
		return "", nil, true // no program headers: nothing loaded dynamically
	}
	if phentsize < want || phentsize > elfMaxPhent || phnum > elfMaxPhdrs || phoff > uint64(size) || phentsize*phnum > uint64(size)-phoff {
		return "", nil, false
	}
	buf := make([]byte, phentsize*phnum)
	if readFull(r, buf, int64(phoff)) != nil {
		return "", nil, false
	}
	progs := make([]elfProg, phnum)
	for i := range progs {
		h := buf[uint64(i)*phentsize:]
		if is64 {
			progs[i] = elfProg{typ: bo.Uint32(h), off: bo.Uint64(h[8:]), vaddr: bo.Uint64(h[16:]), filesz: bo.Uint64(h[32:])}
		} else {
			progs[i] = elfProg{typ: bo.Uint32(h), off: uint64(bo.Uint32(h[4:])), vaddr: uint64(bo.Uint32(h[8:])), filesz: uint64(bo.Uint32(h[16:]))}
		}
	}
	// inFile is the segment's bytes when they lie within the file and below max bytes
	inFile := func(off, n, max uint64) []byte {
		if n == 0 || n > max || off > uint64(size) || n > uint64(size)-off {
			return nil
		}
		b := make([]byte, n)
		if readFull(r, b, int64(off)) != nil {
			return nil
		}
		return b
	}
	var dyn []byte
	for _, p := range progs {
		switch p.typ {
		case elfPTInterp:
			if p.filesz > 0 && p.filesz < 4096 {
				if b := inFile(p.off, p.filesz, 4096); b != nil {
					interp = strings.TrimRight(string(b), "\x00")
				}
			}
		case elfPTDynamic:
			if dyn == nil {
				dyn = inFile(p.off, p.filesz, elfMaxDynamic)
			}
		}
	}
	return interp, elfNeeded(r, size, bo, is64, progs, dyn), true
}

// elfNeeded is the DT_NEEDED names of the dynamic entries dyn, read from the string
// table DT_STRTAB and DT_STRSZ give (an address, found in a PT_LOAD segment of progs).
func elfNeeded(r io.ReaderAt, size int64, bo binary.ByteOrder, is64 bool, progs []elfProg, dyn []byte) []string {
	ent := uint64(8)
	if is64 {
		ent = 16
	}
	var strtab, strsz uint64
	var offs []uint64
	for i := uint64(0); i+ent <= uint64(len(dyn)); i += ent {
		var tag, val uint64
		if is64 {
			tag, val = bo.Uint64(dyn[i:]), bo.Uint64(dyn[i+8:])
		} else {
			tag, val = uint64(bo.Uint32(dyn[i:])), uint64(bo.Uint32(dyn[i+4:]))
		}
		if tag == elfDTNull {
			break
		}
		switch tag {
		case elfDTNeeded:
			if len(offs) < elfMaxNeeded {
				offs = append(offs, val)
			}
		case elfDTStrtab:
			strtab = val
		case elfDTStrsz:
			strsz = val
		}
	}
	if len(offs) == 0 || strsz == 0 || strsz > elfMaxStrtab {
		return nil
	}
	var tab []byte
	for _, p := range progs {
		if p.typ != elfPTLoad || strtab < p.vaddr || strtab-p.vaddr >= p.filesz || strsz > p.filesz-(strtab-p.vaddr) {
			continue
		}
		off := p.off + (strtab - p.vaddr)
		if off < p.off || off > uint64(size) || strsz > uint64(size)-off {
			return nil
		}
		tab = make([]byte, strsz)
		if readFull(r, tab, int64(off)) != nil {
			return nil
		}
		break
	}
	var names []string
	for _, o := range offs {
		if o >= uint64(len(tab)) {
			continue
		}
		s := tab[o:]
		if n := bytes.IndexByte(s, 0); n >= 0 {
			s = s[:n]
		}
		if len(s) > 0 {
			names = append(names, string(s))
		}
	}
	return names
}

// readFull reads len(b) bytes of r at off.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	_, err := r.ReadAt(b, off)
	return err
}
