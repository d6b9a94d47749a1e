package cleanup

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// removeNoFollow never follows a symlink: not in the parent (a directory the command
// replaced by a link to another repository), not at the end; it removes a real tree.
func TestRemoveNoFollow(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.MkdirAll(filepath.Join(victim, ".git", "objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	if err := os.Symlink(victim, filepath.Join(ws, "sub")); err != nil {
		t.Fatal(err)
	}
	if gone, err := removeNoFollow(filepath.Join(ws, "sub", ".git")); gone || err != nil {
		t.Error("removed through a symlinked parent")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "objects")); err != nil {
		t.Fatalf("the repository behind the symlink was touched: %v", err)
	}
	os.Symlink(victim, filepath.Join(ws, "link"))
	if gone, err := removeNoFollow(filepath.Join(ws, "link")); !gone || err != nil {
		t.Error("a final symlink was not removed")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git")); err != nil {
		t.Fatalf("removing a final symlink touched its target: %v", err)
	}
	tree := filepath.Join(ws, "tree")
	os.MkdirAll(filepath.Join(tree, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(tree, "a", "b", "f"), nil, 0o644)
	os.Symlink(victim, filepath.Join(tree, "a", "into-victim"))
	if gone, err := removeNoFollow(tree); !gone || err != nil {
		t.Error("a real tree was not removed")
	}
	if _, err := os.Lstat(tree); err == nil {
		t.Error("the tree is still there")
	}
	if _, err := os.Stat(filepath.Join(victim, ".git", "objects")); err != nil {
		t.Fatalf("removing a tree followed a symlink in it: %v", err)
	}
}

// ownerRWX never follows a symlink at the name it is given (a directory swapped for
// one between the cleanup's stat and its chmod): the target outside keeps its mode.
func TestOwnerRWXNoFollow(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.WriteFile(victim, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "d"), 0o055)
	os.Symlink(victim, filepath.Join(ws, "link"))
	dir, err := unix.Open(ws, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dir)
	if err := ownerRWX(dir, "link"); err == nil {
		t.Error("ownerRWX went through a symlink")
	}
	if st, _ := os.Stat(victim); st.Mode().Perm() != 0o644 {
		t.Errorf("the symlink's target changed mode: %v", st.Mode())
	}
	if err := ownerRWX(dir, "d"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(ws, "d")); st.Mode().Perm()&0o700 != 0o700 {
		t.Errorf("the directory did not get u+rwx: %v", st.Mode())
	}
}

// openComponents (the init's cleanup, where openat2 is filtered) refuses a symlink at
// any component, like openat2 RESOLVE_NO_SYMLINKS, and opens a real directory.
func TestOpenComponents(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "a", "b")
	os.MkdirAll(real, 0o755)
	os.Symlink(filepath.Join(base, "a"), filepath.Join(base, "link"))
	if fd, err := openComponents(filepath.Join(base, "link", "b")); err == nil {
		unix.Close(fd)
		t.Error("opened a path through a symlink")
	}
	fd, err := openComponents(real)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st, want unix.Stat_t
	unix.Fstat(fd, &st)
	unix.Stat(real, &want)
	if st.Ino != want.Ino {
		t.Error("opened another directory")
	}
}

// MakeDirs makes a missing directory and its missing parents, owned like their parent,
// keeps one that exists, and never goes through a symlink.
func TestMakeDirs(t *testing.T) {
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	os.Mkdir(victim, 0o755)
	os.Symlink(victim, filepath.Join(base, "link"))
	deep := filepath.Join(base, "a", "b", "c")
	if err := MakeDirs([]string{deep, filepath.Join(base, "a")}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(deep); err != nil || !st.IsDir() {
		t.Fatalf("%s not made: %v", deep, err)
	}
	if err := MakeDirs([]string{filepath.Join(base, "link", "x")}); err == nil {
		t.Error("made a directory through a symlink")
	}
	if _, err := os.Lstat(filepath.Join(victim, "x")); err == nil {
		t.Error("a directory appeared behind the symlink")
	}
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	if err := MakeDirs([]string{filepath.Join(base, "file")}); err == nil {
		t.Error("a file was taken for the directory")
	}
}

// TestRemoveNewEntriesByIdentity: a kept name whose entry is no longer the object it was
// (a file replaced by a directory, a file replaced by another file) is removed; a kept
// name that is still the same object stays, and so does every name with no identity.
func TestRemoveNewEntriesByIdentity(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"same", "todir", "tofile", "noid"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	id := func(n string) ID {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, n), &st); err != nil {
			t.Fatal(err)
		}
		return IDOf(&st)
	}
	keep := []string{"same", "todir", "tofile"}
	ids := []ID{id("same"), id("todir"), id("tofile")}
	// replaced while the first still exists, so the inode cannot be reused
	if err := os.Rename(filepath.Join(dir, "tofile"), filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tofile"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "todir")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "todir", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, failed := Run([]Entry{{Kind: RemoveNewEntries, Path: dir, Keep: keep, KeepIDs: ids}})
	if len(failed) != 0 {
		t.Fatalf("failed: %v", failed)
	}
	for _, n := range []string{"todir", "tofile", "old", "noid"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s outlived the cleanup (removed %v)", n, removed)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "same")); err != nil {
		t.Errorf("the unchanged kept entry was removed: %v", err)
	}
	// without identities, names alone are kept (the old form of the entry)
	if err := os.Mkdir(filepath.Join(dir, "n"), 0o755); err != nil {
		t.Fatal(err)
	}
	Run([]Entry{{Kind: RemoveNewEntries, Path: dir, Keep: []string{"same", "n"}}})
	if _, err := os.Lstat(filepath.Join(dir, "n")); err != nil {
		t.Errorf("a kept name with no identity was removed: %v", err)
	}
	if (Entry{Kind: RemoveNewEntries, Path: dir, Keep: keep, KeepIDs: ids[:1]}).Check() == nil {
		t.Error("an entry with fewer identities than kept names passed Check")
	}
}
