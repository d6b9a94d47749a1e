package nsinit

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// elfWithPhdrs is a minimal ELF64 little-endian header followed by program headers of
// the types given (elf(5)).
func elfWithPhdrs(types ...uint32) []byte {
	b := make([]byte, 64+56*len(types))
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // ELFCLASS64, ELFDATA2LSB, EV_CURRENT
	le := binary.LittleEndian
	le.PutUint16(b[0x10:], 2) // ET_EXEC
	le.PutUint64(b[0x20:], 64)
	le.PutUint16(b[0x36:], 56)
	le.PutUint16(b[0x38:], uint16(len(types)))
	for i, ty := range types {
		le.PutUint32(b[64+56*i:], ty)
	}
	return b
}

// noELFInterpreter accepts an executable without PT_INTERP and refuses one with it
// (made-up ones, and this test binary as debug/elf reads it), or one it cannot read as
// ELF64 (fail closed: the Go init then).
func TestNoELFInterpreter(t *testing.T) {
	dir := t.TempDir()
	check := func(b []byte) error {
		p := filepath.Join(dir, "elf")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return noELFInterpreter(f)
	}
	if err := check(elfWithPhdrs(6, 1, 1, 4)); err != nil { // PHDR, LOAD, LOAD, NOTE
		t.Errorf("no PT_INTERP: %v", err)
	}
	if err := check(elfWithPhdrs(6, 3, 1)); !errors.Is(err, errELFInterp) {
		t.Errorf("a PT_INTERP: %v, want errELFInterp", err)
	}
	bad := elfWithPhdrs(1)
	bad[4] = 1 // ELFCLASS32
	for name, b := range map[string][]byte{"ELFCLASS32": bad, "no program header": elfWithPhdrs(), "a script": []byte("#!/bin/sh\n" + string(make([]byte, 64))),
		"short": elfWithPhdrs(1)[:40], "headers cut": elfWithPhdrs(1, 3)[:100]} {
		if err := check(b); err == nil || errors.Is(err, errELFInterp) {
			t.Errorf("%s: %v, want a refusal of its own", name, err)
		}
	}
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// this test binary, against debug/elf's reading of it (a cgo build has PT_INTERP)
	ef, err := elf.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	interp := false
	for _, p := range ef.Progs {
		interp = interp || p.Type == elf.PT_INTERP
	}
	if err := noELFInterpreter(f); interp != errors.Is(err, errELFInterp) || !interp && err != nil {
		t.Errorf("this test binary (PT_INTERP %v): %v", interp, err)
	}
}
