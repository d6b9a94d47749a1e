package cleanup

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lfsObject writes content under the LFS store dir by its SHA-256 (or by name, when
// given) and returns its path.
func lfsObject(t *testing.T, dir, name, content string) string {
	t.Helper()
	if name == "" {
		sum := sha256.Sum256([]byte(content))
		name = hex.EncodeToString(sum[:])
	}
	p := filepath.Join(dir, name[:2], name[2:4], name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// VerifyLFSObjects moves aside an LFS object rewritten since the launch, a new one
// under another's name, and a hard link of a good one under another name; it keeps new
// good ones and untouched old ones (attack review 33 F4).
func TestVerifyLFSObjects(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lfs", "objects")
	old := lfsObject(t, dir, "", "OLD\n")
	good := lfsObject(t, dir, "", "GOOD\n")
	past := time.Now().Add(-time.Hour)
	for _, p := range []string{old, good, filepath.Dir(old), filepath.Dir(filepath.Dir(old)), filepath.Dir(good), filepath.Dir(filepath.Dir(good))} {
		os.Chtimes(p, past, past)
	}
	since := time.Now().Add(-time.Second).UnixNano()
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(good, []byte("EVIL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("OTHER\n"))
	planted := lfsObject(t, dir, hex.EncodeToString(sum[:]), "EVIL\n")
	fine := lfsObject(t, dir, "", "FINE\n")
	linked := filepath.Join(filepath.Dir(planted), strings.Repeat("0", 4)+filepath.Base(planted)[4:])
	if err := os.Link(fine, linked); err != nil {
		t.Fatal(err)
	}
	removed, failed := Run([]Entry{{Kind: VerifyLFSObjects, Path: dir, Since: since}})
	if len(failed) != 0 {
		t.Errorf("failed: %q", failed)
	}
	for _, p := range []string{good, planted, linked} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: not moved aside (removed %q)", p, removed)
		}
		if b, err := os.ReadFile(p + asideSuffix); err != nil || (string(b) != "EVIL\n" && p != linked) {
			t.Errorf("%s: not moved aside beside it: %q %v", p, b, err)
		}
	}
	for _, p := range []string{old, fine} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if len(removed) != 3 || !strings.Contains(strings.Join(removed, "\n"), "Git LFS object moved aside") {
		t.Errorf("removed %q, want the three", removed)
	}
}

// RemoveStrayCommondirs puts git's ../.. in place of a linked worktree's commondir
// that names anything else (or is not a regular file), and leaves git's own.
func TestRemoveStrayCommondirs(t *testing.T) {
	wts := filepath.Join(t.TempDir(), ".git", "worktrees")
	write := func(name, content string) string {
		d := filepath.Join(wts, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(filepath.Join(d, "commondir"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(d, "commondir")
	}
	own := write("own", "../..\n")
	crlf := write("crlf", "../..\r\n")
	evil := write("evil", "/tmp/evil\n")
	near := write("near", "../../\n")
	none := write("none", "")
	link := filepath.Join(wts, "link", "commondir")
	os.MkdirAll(filepath.Dir(link), 0o755)
	os.Symlink("../../../evil", link)
	removed, failed := Run([]Entry{{Kind: RemoveStrayCommondirs, Path: wts}})
	if len(failed) != 0 {
		t.Errorf("failed: %q", failed)
	}
	for _, p := range []string{evil, near, link} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "../..\n" {
			t.Errorf("%s is %q (%v), want git's ../..", p, b, err)
		}
	}
	if b, _ := os.ReadFile(crlf); string(b) != "../..\r\n" {
		t.Errorf("git's own (CRLF) was rewritten: %q", b)
	}
	if b, _ := os.ReadFile(own); string(b) != "../..\n" {
		t.Errorf("git's own: %q", b)
	}
	if _, err := os.Lstat(none); err == nil {
		t.Errorf("a commondir was made where there was none")
	}
	if len(removed) != 3 {
		t.Errorf("removed %q, want 3", removed)
	}
}

// A session's passes advance their baselines (attack review 33 F3): an object the
// first pass reported unchecked (past the budget) is not looked at by the next, an index
// the first pass left is left by the next, and what is written after a pass began is
// checked by the next.
func TestPassAdvance(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "f"), []byte("x\n"), 0o644)
	gitIn(t, dir, "add", "f")
	gitIn(t, dir, "commit", "-qm", "x")
	objs := filepath.Join(dir, ".git", "objects")
	index := filepath.Join(dir, ".git", "index")
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write([]byte("blob 300000000\x00abc"))
	w.Close()
	big := filepath.Join(objs, "ab", strings.Repeat("c", 38))
	os.MkdirAll(filepath.Dir(big), 0o755)
	if err := os.WriteFile(big, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{
		{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: time.Now().Add(-time.Hour).UnixNano()},
		{Kind: RemoveIndexBits, Path: index, HashLen: 20, Was: []Stamp{{Name: "changed"}}},
		{Kind: VerifyLFSObjects, Path: filepath.Join(dir, ".git", "lfs", "objects"), Since: 1},
	}
	time.Sleep(20 * time.Millisecond) // past the coarse clock's tick: a file of the same tick is checked again
	pass := Begin(entries)
	_, failed := Run(entries)
	pass.Advance(entries)
	if len(failed) != 1 || !strings.Contains(failed[0], big) {
		t.Fatalf("first pass: failed %q, want the big object unchecked", failed)
	}
	if entries[0].Since < time.Now().Add(-time.Second).UnixNano() || entries[2].Since != entries[0].Since {
		t.Errorf("Since not advanced: %d, %d", entries[0].Since, entries[2].Since)
	}
	st1 := stamp(t, index)
	pass = Begin(entries)
	removed, failed := Run(entries)
	pass.Advance(entries)
	if len(removed) != 0 || len(failed) != 0 {
		t.Errorf("second pass: removed %q failed %q, want nothing looked at again", removed, failed)
	}
	if st2 := stamp(t, index); st1 != st2 {
		t.Errorf("the index the first pass left was written again: %v → %v", st1, st2)
	}
	bad := filepath.Join(objs, "ab", strings.Repeat("d", 38))
	if err := os.WriteFile(bad, []byte("not an object"), 0o444); err != nil {
		t.Fatal(err)
	}
	if removed, _ = Run(entries); len(removed) != 1 || !strings.Contains(removed[0], bad) {
		t.Errorf("an object written after the last pass began: removed %q, want it moved aside", removed)
	}
}

func stamp(t *testing.T, p string) Stamp {
	t.Helper()
	s, err := IndexStamps(p, 20)
	if err != nil || len(s) == 0 {
		t.Fatal(err)
	}
	return s[0]
}

// Skip leaves names and packed prefixes alone while other new ones go (attack review 33
// F8: refs git's lookup would find before a remote-tracking one).
func TestRemoveStrayNamesSkip(t *testing.T) {
	gd := t.TempDir()
	os.MkdirAll(filepath.Join(gd, "refs"), 0o755)
	packed := filepath.Join(gd, "packed-refs")
	os.WriteFile(packed, []byte("# pack-refs with: peeled\nw refs/tags/v0\nx refs/heads/main\ny refs/upstream/main\nz refs/notes/commits\nk refs/kept/one\n"), 0o644)
	os.WriteFile(filepath.Join(gd, "ORIG_HEAD"), nil, 0o644)
	os.MkdirAll(filepath.Join(gd, "upstream"), 0o755)
	_, failed := Run([]Entry{
		{Kind: RemovePackedRefs, Path: packed, Prefix: "refs/", Keep: []string{"k refs/kept/one"}, Skip: []string{"refs/heads/", "refs/tags/", "refs/notes/"}},
		{Kind: RemoveNewEntries, Path: gd, Keep: []string{"refs"}, Skip: []string{"*_HEAD", "packed-refs"}},
	})
	if len(failed) != 0 {
		t.Errorf("failed %q", failed)
	}
	b, _ := os.ReadFile(packed)
	for _, want := range []string{"w refs/tags/v0", "x refs/heads/main", "z refs/notes/commits", "k refs/kept/one"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("packed-refs lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "refs/upstream/main") {
		t.Errorf("packed-refs keeps the stray ref:\n%s", b)
	}
	if _, err := os.Lstat(filepath.Join(gd, "ORIG_HEAD")); err != nil {
		t.Errorf("a name Skip matches was removed: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(gd, "upstream")); err == nil {
		t.Errorf("a new name no pattern matches was left")
	}
}
