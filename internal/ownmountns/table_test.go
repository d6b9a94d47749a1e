package ownmountns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Changes reports a new mount and one unmounted under a mount point that still exists,
// and passes over one whose mount point was removed (detached by the kernel).
func TestChanges(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "a dir")
	if err := os.Mkdir(kept, 0o755); err != nil {
		t.Fatal(err)
	}
	line := func(id, mp string) string {
		return id + " 1 0:99 / " + strings.ReplaceAll(mp, " ", `\040`) + " rw - tmpfs x rw"
	}
	root := line("20", "/")
	unmounted := line("21", kept)
	detached := line("22", filepath.Join(dir, "removed"))
	added := line("23", filepath.Join(dir, "new"))
	a, r := Changes([]string{root, unmounted, detached}, []string{root, added})
	if len(a) != 1 || a[0] != added {
		t.Errorf("added %q, want only %q", a, added)
	}
	if len(r) != 1 || r[0] != unmounted {
		t.Errorf("removed %q, want only %q (its mount point %q exists)", r, unmounted, kept)
	}
	if mp := MountPoint(unmounted); mp != kept {
		t.Errorf("MountPoint: %q, want %q", mp, kept)
	}
	if a, r := Changes([]string{root, root}, []string{root}); len(a) != 0 || len(r) != 1 {
		t.Errorf("one of two equal lines gone: added %q removed %q", a, r)
	}
}
