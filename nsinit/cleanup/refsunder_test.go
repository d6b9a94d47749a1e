package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RemoveChangedRefs keeps the refs as they were at launch (a symref included), puts a
// moved one back as it was (attack review 32 F2: not deleted), and removes a new one,
// a new directory and a symlink.
func TestRemoveChangedRefs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "remotes")
	w := func(rel, content string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("origin/HEAD", "ref: refs/remotes/origin/main\n")
	w("origin/main", "1111\n")
	w("origin/deep/x", "2222\n")
	keep, err := LooseRefs(dir, 100)
	if err != nil || len(keep) != 3 {
		t.Fatalf("LooseRefs: %q %v", keep, err)
	}
	w("origin/main", "9999\n")
	w("origin/new", "9999\n")
	w("evil/main", "9999\n")
	os.Symlink("/etc/passwd", filepath.Join(dir, "origin", "link"))
	r, f := Run([]Entry{{Kind: RemoveChangedRefs, Path: dir, Keep: keep}})
	if len(f) != 0 || len(r) != 4 {
		t.Fatalf("removed %q, failed %q", r, f)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "origin/main")); err != nil || string(b) != "1111\n" {
		t.Errorf("origin/main is not put back as at launch: %q %v", b, err)
	}
	for _, gone := range []string{"origin/new", "evil", "origin/link"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); err == nil {
			t.Errorf("%s is left", gone)
		}
	}
	for _, kept := range []string{"origin/HEAD", "origin/deep/x"} {
		if _, err := os.Lstat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s is gone: %v", kept, err)
		}
	}
	if _, err := LooseRefs(filepath.Join(dir, "none"), 100); err != nil {
		t.Errorf("a missing refs/remotes: %v", err)
	}
	if _, err := LooseRefs(dir, 1); err == nil || !strings.Contains(err.Error(), "more refs") {
		t.Errorf("over the bound: %v", err)
	}
}
