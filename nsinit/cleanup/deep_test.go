package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mkDeep makes levels nested directories "d" under base, by descriptor (the path would
// pass PATH_MAX), and returns a descriptor of the deepest.
func mkDeep(t *testing.T, base string, levels int) int {
	t.Helper()
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < levels; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	return fd
}

// A symlink deeper than MaxWalkDepth (attack review 27 F7: a deep branch's reflog) does
// not survive RemoveSpecialUnder: the directory below the depth is removed whole, its
// target untouched; a symlink above the depth is removed and its directory kept.
func TestRemoveSpecialDeep(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep"), 0o644)
	gd := filepath.Join(base, "gd")
	os.Mkdir(gd, 0o755)
	fd := mkDeep(t, gd, 40)
	if err := unix.Symlinkat(victim, fd, "feature"); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	shallow := filepath.Join(gd, "d", "d")
	os.Symlink(victim, filepath.Join(shallow, "HEAD"))
	removed, failed := Run([]Entry{{Kind: RemoveSpecialUnder, Path: gd}})
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	links := 0
	filepath.Walk(gd, func(p string, i os.FileInfo, err error) error {
		if err == nil && i.Mode()&os.ModeSymlink != 0 {
			links++
		}
		return nil
	})
	if links != 0 {
		t.Errorf("%d symlinks left under %s; removed %v", links, gd, removed)
	}
	want := filepath.Join(gd, strings.Repeat("d/", MaxWalkDepth+1))
	if len(removed) != 2 || removed[1] != filepath.Clean(want) {
		t.Errorf("removed %q, want the shallow symlink and %s", removed, want)
	}
	if _, err := os.Stat(filepath.Join(gd, strings.Repeat("d/", MaxWalkDepth))); err != nil {
		t.Errorf("the directory at the depth limit is gone: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the target changed: %q", b)
	}
}

// A tree far deeper than the recursive removal's 64 levels, with unwritable levels and
// a symlink at the bottom, is removed whole without following the symlink.
func TestRemoveVeryDeepTree(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.Mkdir(victim, 0o755)
	os.WriteFile(filepath.Join(victim, "f"), nil, 0o644)
	fd := mkDeep(t, base, 3000)
	unix.Symlinkat(victim, fd, "l")
	unix.Mkdirat(fd, "x", 0o755)
	unix.Fchmod(fd, 0o555)
	unix.Close(fd)
	if gone, err := removeNoFollow(filepath.Join(base, "d")); !gone || err != nil {
		t.Fatalf("removeNoFollow: %v, %v", gone, err)
	}
	ents, _ := os.ReadDir(base)
	if len(ents) != 1 {
		t.Errorf("left in %s: %v", base, ents)
	}
	if _, err := os.Stat(filepath.Join(victim, "f")); err != nil {
		t.Errorf("the symlink's target was touched: %v", err)
	}
}
