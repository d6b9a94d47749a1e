package policy

import (
	"path/filepath"
	"testing"
)

// TestGitRecordedCheckouts: a .git file deeper than the protected-path scan that a
// record of the repository names as a checkout's is read-only in both modes (review
// 25 F4): a linked worktree's (worktrees/<name>/gitdir) and a submodule git dir's
// core.worktree (here one no longer in the index or .gitmodules, which the submodule
// guard would not find).
func TestGitRecordedCheckouts(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	newRepo(t, ws)
	gitCmd(t, ws, "worktree", "add", "-q", ".wt/team/a/agent9")
	old := filepath.Join(ws, "d1", "d2", "d3", "old")
	mkdirs(t, old)
	mkdirs(t, filepath.Join(ws, ".git", "modules"))
	gitCmd(t, old, "init", "-q", "--separate-git-dir", filepath.Join(ws, ".git", "modules", "old"))
	gitCmd(t, ws, "--git-dir=.git/modules/old", "config", "core.worktree", old)
	for _, mode := range []string{GitReadOnly, GitCommit} {
		s := compileGit(t, mode, ws)
		checkPaths(t, mode+" ReadonlyPaths", s.Linux.ReadonlyPaths,
			[]string{filepath.Join(ws, ".wt/team/a/agent9/.git"), filepath.Join(old, ".git")}, nil)
	}
}
