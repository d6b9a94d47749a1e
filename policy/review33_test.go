package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

func hasEntry(entries []cleanup.Entry, k cleanup.Kind, p string) bool {
	return slices.ContainsFunc(entries, func(e cleanup.Entry) bool { return e.Kind == k && e.Path == p })
}

// In commit mode, shallow and rr-cache are removed after the run when absent at launch
// and read-only when there; the LFS store is checked, and the worktrees' commondirs
// (attack review 33 F1, F2, F4).
func TestGitCommitHistoryHiders(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	g := filepath.Join(ws, ".git")
	s := compileGit(t, GitCommit, ws)
	for _, f := range []string{"shallow", "rr-cache"} {
		if !hasEntry(s.Cleanup, cleanup.RemoveIfCreated, filepath.Join(g, f)) {
			t.Errorf("no removal of a new %s: %+v", f, s.Cleanup)
		}
	}
	if !hasEntry(s.Cleanup, cleanup.VerifyLFSObjects, filepath.Join(g, "lfs", "objects")) {
		t.Errorf("the LFS store is not checked: %+v", s.Cleanup)
	}
	if !hasEntry(s.Cleanup, cleanup.RemoveStrayCommondirs, filepath.Join(g, "worktrees")) {
		t.Errorf("the worktrees' commondirs are not checked: %+v", s.Cleanup)
	}
	touch(t, filepath.Join(g, "shallow"))
	mkdirs(t, filepath.Join(g, "rr-cache"))
	s = compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{filepath.Join(g, "shallow"), filepath.Join(g, "rr-cache")}, nil)
	if hasEntry(s.Cleanup, cleanup.RemoveIfCreated, filepath.Join(g, "shallow")) {
		t.Errorf("the user's shallow would be removed: %+v", s.Cleanup)
	}
}

// A session refuses a request once a linked worktree was added to a writable git dir
// while none of its commands ran, or the pointer file of one there at its start changed
// (attack review 33 F2); one there at the start is known.
func TestSessionGuardWorktrees(t *testing.T) {
	ws := canonTempDir(t)
	newRepo(t, ws)
	out := canonTempDir(t)
	gitCmd(t, ws, "worktree", "add", "-q", filepath.Join(out, "wt0"), "-b", "b0")
	s := compileGit(t, GitCommit, ws)
	sg, ok := s.Guard.(*SessionGuard)
	if !ok {
		t.Fatalf("guard %T", s.Guard)
	}
	wts := filepath.Join(ws, ".git", "worktrees")
	if !slices.Contains(sg.scan.Worktrees, wts) {
		t.Fatalf("Worktrees %q lack %s", sg.scan.Worktrees, wts)
	}
	g := sg.Session()
	if err := g.Before(""); err != nil {
		t.Fatalf("a request with the start's worktree: %v", err)
	}
	g.Ended("")
	gitCmd(t, ws, "worktree", "add", "-q", filepath.Join(out, "wt1"), "-b", "b1")
	if err := g.Before(""); err == nil || !strings.Contains(err.Error(), filepath.Join(wts, "wt1")) {
		t.Errorf("a request after a worktree was added: %v, want refused naming it", err)
	}

	// a pointer file of a known worktree changed
	s = compileGit(t, GitCommit, ws)
	g = s.Guard.(*SessionGuard).Session()
	if err := g.Before(""); err != nil {
		t.Fatalf("a request with the start's worktrees: %v", err)
	}
	g.Ended("")
	if err := os.WriteFile(filepath.Join(wts, "wt0", "config.worktree"), []byte("[core]\n\tfsmonitor = /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := g.Before(""); err == nil || !strings.Contains(err.Error(), "config.worktree") {
		t.Errorf("a request after a worktree's config.worktree was made: %v, want refused naming it", err)
	}
	// the change undone: as at the start, not refused
	if err := os.Remove(filepath.Join(wts, "wt0", "config.worktree")); err != nil {
		t.Fatal(err)
	}
	if err := g.Before(""); err != nil {
		t.Errorf("a request after the change was undone: %v", err)
	}
}

// With the workspace a linked worktree, the main checkout's in-progress state in the
// common git dir is read-only when there and removed after the run when the command
// makes it; the workspace's own unfinished cherry-pick is removed (attack review 33 F6).
func TestGitCommitCheckoutState(t *testing.T) {
	m := canonTempDir(t)
	newRepo(t, m)
	ws := filepath.Join(canonTempDir(t), "wt")
	gitCmd(t, m, "worktree", "add", "-q", ws, "-b", "agent")
	g := filepath.Join(m, ".git")
	touch(t, filepath.Join(g, "MERGE_HEAD"))
	s := compileGit(t, GitCommit, ws)
	checkPaths(t, "ReadonlyPaths", s.Linux.ReadonlyPaths, []string{filepath.Join(g, "MERGE_HEAD")}, nil)
	for _, p := range []string{filepath.Join(g, "CHERRY_PICK_HEAD"), filepath.Join(g, "ORIG_HEAD"), filepath.Join(g, "worktrees", "wt", "CHERRY_PICK_HEAD")} {
		if !hasEntry(s.Cleanup, cleanup.RemoveIfCreated, p) {
			t.Errorf("no removal of a new %s", p)
		}
	}
	if hasEntry(s.Cleanup, cleanup.RemoveIfCreated, filepath.Join(g, "worktrees", "wt", "ORIG_HEAD")) {
		t.Errorf("the workspace's own ORIG_HEAD would be removed")
	}
}
