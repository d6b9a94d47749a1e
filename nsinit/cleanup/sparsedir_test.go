package cleanup

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSparseDirMovedAside: an index made sparse during the run (git sparse-checkout
// --sparse-index in a scratch clone, copied in) is moved aside, not kept with its
// sparse-directory entry, also when that entry's skip-worktree bit is cleared by hand;
// a sparse index at launch, written again with the same sparse directory, is kept
// (attack review 33 F7: the host's git expanded the entry with every file under it
// hidden).
func TestSparseDirMovedAside(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "up")
	os.MkdirAll(filepath.Join(up, "src"), 0o755)
	gitIn(t, dir, "init", "-q", up)
	os.WriteFile(filepath.Join(up, "top.txt"), []byte("top\n"), 0o644)
	os.WriteFile(filepath.Join(up, "src", "run.sh"), []byte("echo good\n"), 0o644)
	gitIn(t, up, "add", ".")
	gitIn(t, up, "commit", "-qm", "x")
	p := filepath.Join(up, ".git", "index")
	keep, err := IndexHidden(p, 20)
	if err != nil || len(keep) != 0 {
		t.Fatalf("IndexHidden of a full index: %q %v", keep, err)
	}
	scratch := filepath.Join(dir, "scratch")
	gitIn(t, dir, "clone", "-q", up, scratch)
	gitIn(t, scratch, "sparse-checkout", "set", "--cone", "--sparse-index")
	sparse, err := os.ReadFile(filepath.Join(scratch, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	for _, clearBit := range []bool{false, true} {
		b := append([]byte(nil), sparse...)
		if clearBit {
			clearDirSkip(t, b)
		}
		os.WriteFile(p, b, 0o644)
		removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, Keep: keep, HashLen: 20}})
		if len(failed) != 0 || len(removed) != 1 || !strings.Contains(removed[0], "moved aside") || !strings.Contains(removed[0], `"src/"`) {
			t.Fatalf("bit cleared by hand %v: removed %q, failed %q", clearBit, removed, failed)
		}
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("the sparse index is still where git reads it: %v", err)
		}
		os.Remove(p + asideSuffix)
	}
	// sparse at launch: the same sparse directory written again is no new one
	sp := filepath.Join(scratch, ".git", "index")
	keep, err = IndexHidden(sp, 20)
	if err != nil || len(keep) != 1 || keep[0] != "src/\x00skip" {
		t.Fatalf("IndexHidden of a sparse index: %q %v", keep, err)
	}
	gitIn(t, scratch, "update-index", "--force-write-index", "--index-version", "3")
	removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: sp, Keep: keep, HashLen: 20}})
	if len(failed) != 0 || len(removed) != 0 {
		t.Errorf("a sparse index at launch: removed %q, failed %q", removed, failed)
	}
	if _, err := os.Lstat(sp); err != nil {
		t.Errorf("the launch's sparse index is gone: %v", err)
	}
}

// clearDirSkip clears the skip-worktree bit of each sparse-directory entry of the
// version 3 index b (SHA-1) and makes its checksum again.
func clearDirSkip(t *testing.T, b []byte) {
	t.Helper()
	if binary.BigEndian.Uint32(b[4:8]) != 3 {
		t.Fatalf("index version %d, want 3", binary.BigEndian.Uint32(b[4:8]))
	}
	off := 12
	for i := uint32(0); i < binary.BigEndian.Uint32(b[8:12]); i++ {
		flags := binary.BigEndian.Uint16(b[off+60:])
		fixed := 62
		if flags&flagExtended != 0 {
			fixed = 64
		}
		end := off + fixed
		for b[end] != 0 {
			end++
		}
		name := string(b[off+fixed : end])
		if strings.HasSuffix(name, "/") && fixed == 64 {
			binary.BigEndian.PutUint16(b[off+62:], binary.BigEndian.Uint16(b[off+62:])&^extSkipWorktree)
		}
		off += (fixed + len(name) + 8) &^ 7
	}
	h := newDigest(20)
	h.Write(b[:len(b)-20])
	copy(b[len(b)-20:], h.Sum())
}
