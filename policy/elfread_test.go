package policy

import (
	"bytes"
	"debug/elf"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// elfRef is what debug/elf reads of the file b: the reference readELFDeps is checked
// against (the test may import it; gosbx does not).
func elfRef(b []byte) (interp string, needed []string, ok bool) {
	ef, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return "", nil, false
	}
	for _, pr := range ef.Progs {
		if pr.Type == elf.PT_INTERP && pr.Filesz > 0 && pr.Filesz < 4096 {
			d := make([]byte, pr.Filesz)
			if _, err := pr.ReadAt(d, 0); err == nil {
				interp = strings.TrimRight(string(d), "\x00")
			}
		}
	}
	needed, _ = ef.ImportedLibraries()
	return interp, needed, true
}

// TestReadELFDeps: for the host's programs and libraries (dynamic, static, PIE,
// shared objects) and this test's own Go binary, readELFDeps gives what debug/elf
// gives; a file that is not ELF is not ok.
func TestReadELFDeps(t *testing.T) {
	var files []string
	for _, g := range []string{"/usr/bin/*", "/usr/sbin/*", "/usr/lib/x86_64-linux-gnu/*.so*", "/usr/lib/aarch64-linux-gnu/*.so*", "/usr/lib64/ld-*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if exe, err := os.Executable(); err == nil {
		files = append(files, exe)
	}
	var dynamic, checked int
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		wi, wn, wok := elfRef(b)
		gi, gn, gok := readELFDeps(bytes.NewReader(b), int64(len(b)))
		if !wok {
			if gok && len(b) >= 4 && string(b[:4]) != "\x7fELF" {
				t.Errorf("%s: not ELF, but readELFDeps read it", f)
			}
			continue
		}
		checked++
		if len(wn) > 0 {
			dynamic++
		}
		if !gok || gi != wi || !slices.Equal(gn, wn) {
			t.Errorf("%s: readELFDeps = %q %q %v; debug/elf reads %q %q", f, gi, gn, gok, wi, wn)
		}
	}
	if checked < 20 || dynamic < 10 {
		t.Skipf("only %d ELF files (%d dynamic) on this host", checked, dynamic)
	}
	t.Logf("%d ELF files, %d with libraries", checked, dynamic)
}

// TestReadELFDepsDamaged: a damaged or truncated ELF file (the command may put any in
// its workspace) neither panics nor reads out of bounds; one that is not ELF is not ok.
func TestReadELFDepsDamaged(t *testing.T) {
	b, err := os.ReadFile("/usr/bin/ls")
	if err != nil {
		t.Skip(err)
	}
	if _, n, ok := readELFDeps(bytes.NewReader(b), int64(len(b))); !ok || len(n) == 0 {
		t.Skipf("/usr/bin/ls is not a dynamic ELF executable")
	}
	for _, s := range []string{"", "\x7fEL", "#!/bin/sh\n", "\x7fELF", "\x7fELF\x03\x01"} {
		if _, _, ok := readELFDeps(strings.NewReader(s), int64(len(s))); ok {
			t.Errorf("%q read as ELF", s)
		}
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		d := slices.Clone(b[:min(len(b), 1+rng.Intn(16<<10))])
		if i%2 == 0 {
			d = slices.Clone(b)
		}
		for range 1 + rng.Intn(8) {
			p := rng.Intn(min(len(d), 4096)) // the headers and early segments
			d[p] = byte(rng.Intn(256))
		}
		readELFDeps(bytes.NewReader(d), int64(len(d)))
	}
}
