package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An index a process of the session writes between a pass's run and its Advance (one
// left in the background, timing it by the cleanup's rename of the index) is not taken
// as the next baseline: the next pass clears its hiding bit. Taken, the index counted
// as unchanged at every later pass and its skip-worktree bit stayed for good.
func TestAdvanceIndexWrittenAfterRun(t *testing.T) {
	dir, index, _, entries := indexBitsRepo(t)
	time.Sleep(20 * time.Millisecond)                     // past the coarse clock's tick
	gitIn(t, dir, "update-index", "--skip-worktree", "f") // the command
	pass := Begin(entries)
	removed, failed := Run(entries)
	if len(failed) != 0 || len(removed) != 1 || !strings.Contains(removed[0], "f (skip-worktree)") {
		t.Fatalf("first pass: removed %q failed %q, want the command's bit cleared", removed, failed)
	}
	gitIn(t, dir, "update-index", "--skip-worktree", "f") // behind the run, before Advance
	pass.Advance(entries)
	pass = Begin(entries)
	removed, failed = Run(entries)
	pass.Advance(entries)
	if len(failed) != 0 || len(removed) != 1 || !strings.Contains(removed[0], "f (skip-worktree)") {
		t.Errorf("next pass: removed %q failed %q, want the bit set after the run cleared", removed, failed)
	}
	if out := gitIn(t, dir, "ls-files", "-v"); !strings.HasPrefix(out, "H f") {
		t.Errorf("git ls-files -v: %q, want f tracked without a hiding bit", out)
	}
	// what the pass itself left is the next baseline: not written anew
	st1 := stamp(t, index)
	pass = Begin(entries)
	if removed, failed = Run(entries); len(removed)+len(failed) != 0 {
		t.Errorf("third pass: removed %q failed %q, want nothing", removed, failed)
	}
	pass.Advance(entries)
	if st2 := stamp(t, index); st1 != st2 {
		t.Errorf("the index the pass left was written again: %v → %v", st1, st2)
	}
}

// A pass FromHost (no process of the session ran since the last) takes the index as
// the host's git wrote it, cached stat data and all, so that the next pass does not
// write the user's own index anew (attack review 33 F3).
func TestAdvanceFromHostTakesIndex(t *testing.T) {
	dir, index, was, entries := indexBitsRepo(t)
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "g"), []byte("y\n"), 0o644)
	gitIn(t, dir, "add", "g") // the user's own git, between requests
	pass := Begin(entries)
	pass.FromHost()
	pass.Advance(entries) // a host-only pass runs no index check
	st1 := stamp(t, index)
	pass = Begin(entries)
	if removed, failed := Run(entries); len(removed)+len(failed) != 0 {
		t.Errorf("removed %q failed %q, want the host's index left", removed, failed)
	}
	if st2 := stamp(t, index); st1 != st2 {
		t.Errorf("the host's index was written anew: %v → %v", st1, st2)
	}
	// the same index after a pass that is not FromHost is not taken: its stat data
	// is not what the cleanup leaves
	entries[0].Was = was
	pass = Begin(entries)
	pass.Advance(entries)
	if entries[0].Was[0] != was[0] {
		t.Errorf("an index with cached stat data taken after a session's pass: %v", entries[0].Was)
	}
}

// indexBitsRepo makes a repository with one commit (the file f) and returns it, its
// index, the index's stamps and a RemoveIndexBits entry baselined on them.
func indexBitsRepo(t *testing.T) (dir, index string, was []Stamp, entries []Entry) {
	t.Helper()
	dir = t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "f"), []byte("x\n"), 0o644)
	gitIn(t, dir, "add", "f")
	gitIn(t, dir, "commit", "-qm", "x")
	index = filepath.Join(dir, ".git", "index")
	was, err := IndexStamps(index, 20)
	if err != nil {
		t.Fatal(err)
	}
	return dir, index, was, []Entry{{Kind: RemoveIndexBits, Path: index, HashLen: 20, Was: was}}
}
