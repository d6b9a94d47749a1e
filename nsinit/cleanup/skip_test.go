package cleanup

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveSpecialSkipAnchored: a Skip pattern matches a directory's path from the
// walk's root, not its last two components (attack review 28 F4): a reflog symlink
// under logs/refs/heads/objects/ab is removed, a loose-object directory is still not
// descended into.
func TestRemoveSpecialSkipAnchored(t *testing.T) {
	gd := t.TempDir()
	deep := filepath.Join(gd, "logs", "refs", "heads", "objects", "ab")
	fan := filepath.Join(gd, "objects", "ab")
	for _, d := range []string{deep, fan} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(deep, "x")
	if err := os.Symlink("/nonexistent/victim", link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/other", filepath.Join(fan, "cd")); err != nil {
		t.Fatal(err)
	}
	removed, failed := removeSpecial(gd, []string{"objects/[0-9a-f][0-9a-f]"})
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Errorf("the symlink under a branch named objects/ab is left (removed %v)", removed)
	}
	if _, err := os.Lstat(filepath.Join(fan, "cd")); err != nil {
		t.Errorf("objects/ab was descended into, its entry is gone: %v", err)
	}
}
