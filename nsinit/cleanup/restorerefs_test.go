package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreRefs: tags there at launch (loose, packed, and one packed with a
// directory made at its name) are put back when moved, deleted or shadowed, a tag the
// command made is left, and a ref path that would leave the directory is refused.
func TestRestoreRefs(t *testing.T) {
	gd := t.TempDir()
	tags := filepath.Join(gd, "refs", "tags")
	os.MkdirAll(filepath.Join(tags, "rel"), 0o755)
	a, b, c := strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)
	keep := []string{"loose\x00" + a, "packed\x00" + a, "rel/gone\x00" + a, "same\x00" + a, "shadowed\x00" + a}
	// after the run: loose moved, packed moved in packed-refs, rel/gone deleted, same
	// unchanged (packed), shadowed a directory of new tags, new made
	os.WriteFile(filepath.Join(tags, "loose"), []byte(b+"\n"), 0o644)
	os.MkdirAll(filepath.Join(tags, "shadowed"), 0o755)
	os.WriteFile(filepath.Join(tags, "shadowed", "x"), []byte(c+"\n"), 0o644)
	os.WriteFile(filepath.Join(tags, "new"), []byte(c+"\n"), 0o644)
	os.WriteFile(filepath.Join(gd, "packed-refs"), []byte("# pack-refs with: peeled fully-peeled sorted \n"+
		b+" refs/tags/packed\n^"+c+"\n"+a+" refs/tags/same\n"), 0o644)
	removed, failed := Run([]Entry{{Kind: RestoreRefs, Path: tags, Keep: keep}})
	if len(failed) != 0 || len(removed) != 4 {
		t.Fatalf("removed %q, failed %q", removed, failed)
	}
	for _, r := range removed {
		if !strings.HasSuffix(r, tagPutBack) {
			t.Errorf("%q does not say a tag was put back", r)
		}
	}
	for _, n := range []string{"loose", "packed", "rel/gone", "shadowed"} {
		if b, err := os.ReadFile(filepath.Join(tags, n)); err != nil || string(b) != a+"\n" {
			t.Errorf("%s: %q %v, want the launch's id", n, b, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(tags, "new")); err != nil || string(b) != c+"\n" {
		t.Errorf("the command's new tag: %q %v", b, err)
	}
	if moved, _, _, err := refsMoved(tags, keep); err != nil || len(moved) != 0 {
		t.Errorf("after the put back, refsMoved = %q %v", moved, err)
	}
	if _, failed := Run([]Entry{{Kind: RestoreRefs, Path: tags, Keep: []string{"../../escape\x00" + a}}}); len(failed) != 1 {
		t.Errorf("a ref path out of the directory: failed %q", failed)
	}
	if _, err := os.Lstat(filepath.Join(gd, "escape")); err == nil {
		t.Error("a ref was written outside refs/tags")
	}
}

// TestRestoreRefsReplay: a killed launcher's journal does not put tags back (the user
// may have moved one since): it reports them not completed, and says nothing when the
// tags are as at launch.
func TestRestoreRefsReplay(t *testing.T) {
	gd := t.TempDir()
	tags := filepath.Join(gd, "refs", "tags")
	os.MkdirAll(tags, 0o755)
	a, b := strings.Repeat("a", 40), strings.Repeat("b", 40)
	os.WriteFile(filepath.Join(tags, "v1"), []byte(a+"\n"), 0o644)
	e := []Entry{{Kind: RestoreRefs, Path: tags, Keep: []string{"v1\x00" + a}}}
	if removed, failed := replay(e); len(removed)+len(failed) != 0 {
		t.Errorf("tags as at launch: removed %q, failed %q", removed, failed)
	}
	os.WriteFile(filepath.Join(tags, "v1"), []byte(b+"\n"), 0o644)
	if removed, failed := replay(e); len(removed) != 0 || len(failed) != 1 || !strings.Contains(failed[0], "not completed") {
		t.Errorf("a moved tag: removed %q, failed %q", removed, failed)
	}
	if got, _ := os.ReadFile(filepath.Join(tags, "v1")); string(got) != b+"\n" {
		t.Errorf("the replay rewrote the tag: %q", got)
	}
}
