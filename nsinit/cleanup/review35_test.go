package cleanup

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestReplayNewEntriesWhole: a directory whose one new name sits among 20 000 names
// its entry lets be added is not "as at launch" for replay (attack review 35 F8: a
// listing of len(Keep)+1024 names, in hash order, missed it most of the time).
func TestReplayNewEntriesWhole(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 20000; i++ {
		if err := os.WriteFile(filepath.Join(dir, "s"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"kept", "new"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := Entry{Kind: RemoveNewEntries, Path: dir, Keep: []string{"kept"}, Skip: []string{"s*"}}
	if asAtLaunch(e) {
		t.Errorf("a directory with a new name among 20 000 skipped ones is taken as at launch")
	}
	if err := os.Remove(filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	if !asAtLaunch(e) {
		t.Errorf("the directory as at launch (its added names all skipped) is not taken so")
	}
}

// TestRestoreRefsTagsNotADir: with refs/tags a file, the launch's tags are compared
// with packed-refs: one moved there and one deleted are written back loose, the file
// moved aside (attack review 35 F5: before, none was taken for moved).
func TestRestoreRefsTagsNotADir(t *testing.T) {
	gd := t.TempDir()
	a, b := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	if err := os.MkdirAll(filepath.Join(gd, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gd, "packed-refs"), []byte(b+" refs/tags/v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tags := filepath.Join(gd, "refs", "tags")
	if err := os.WriteFile(tags, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	removed, failed := restoreRefs(tags, []string{"v1\x00" + a, "v2\x00" + a})
	if len(failed) != 0 || len(removed) != 3 {
		t.Fatalf("restoreRefs: removed %q, failed %q; want the file moved aside and two tags back", removed, failed)
	}
	for _, v := range []string{"v1", "v2"} {
		if got, err := os.ReadFile(filepath.Join(tags, v)); err != nil || string(got) != a+"\n" {
			t.Errorf("refs/tags/%s is %q (%v), want %s", v, got, err, a)
		}
	}
}
