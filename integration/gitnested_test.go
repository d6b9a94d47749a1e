package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trial's nested-worktree finding, proved from the host: a linked worktree inside
// the main checkout (.worktrees/agent1, a common agent layout) no longer keeps the
// main checkout from committing under git: commit, whether it was made on the host or
// by the command; the nested worktree commits too (README: a linked worktree's own git
// dir is guarded as the workspace's, its commondir and gitdir read-only), and a
// sibling worktree's git dir, whose checkout is outside the sandbox, stays read-only.
func TestGitNestedWorktreeCommit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "main-commit")
		s.hostGit(s.ws, "worktree", "add", "-q", "-b", "agent1", ".worktrees/agent1")
		side := filepath.Join(s.base, "side")
		must(t, os.Mkdir(side, 0o755))
		s.chown(side)
		s.hostGit(s.ws, "worktree", "add", "-q", "-b", "side", side)
		s.writeWS("b.txt", "b\n", 0o644)
		mainGit := filepath.Join(s.ws, ".git")
		guarded := guardedDigest(t, mainGit)
		agentDir := filepath.Join(mainGit, "worktrees", "agent1")
		pointers := treeDigest(t, agentDir)
		sideDir := filepath.Join(mainGit, "worktrees", "side")
		sideAll := treeDigest(t, sideDir)

		// The trial's exact command, under git: readonly first: it fails and the note
		// names git: commit, which (below) then works.
		commit := `git add b.txt && git ` + gitID + ` commit -qm "main-inside-$1"`
		r := s.sh(nil, commit, s.id)
		if r.code == 0 || !strings.Contains(r.stderr, "`extends: agent` and `filesystem: {git: commit}`") {
			t.Fatalf("commit under git: readonly: %v; want a failure and the note naming git: commit", r)
		}
		r = s.sh([]string{"--policy", s.commitPolicy()}, commit+`
cd .worktrees/agent1 && echo c > c.txt && git add c.txt && git `+gitID+` commit -qm "agent1-inside-$1" || exit 1
cd ../..
for f in .git/worktrees/agent1/commondir .git/worktrees/agent1/gitdir .worktrees/agent1/.git .git/worktrees/side/HEAD .git/config; do
	(echo >> "$f") 2>/dev/null && echo "WROTE $f"
done
(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo "WROTE hook"
git worktree add -q -b a2 .worktrees/a2`, s.id)
		mustSucceed(t, r, "commits from the main checkout and its nested worktree under git: commit")
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("guarded git files were writable: %q", r.stdout)
		}
		for branch, msg := range map[string]string{"main": "main-inside-", "agent1": "agent1-inside-"} {
			if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s", branch); err != nil || strings.TrimSpace(out) != msg+s.id {
				t.Errorf("the host's last commit on %s: %q %v; want %s%s", branch, out, err, msg, s.id)
			}
		}
		if d := digestDiff(guarded, guardedDigest(t, mainGit)); len(d) > 0 {
			t.Errorf("the repository's config/hooks/info changed: %v", d)
		}
		after := treeDigest(t, agentDir)
		for _, f := range []string{"commondir", "gitdir"} {
			if pointers[f] == "" || after[f] != pointers[f] {
				t.Errorf("the nested worktree's %s changed: %q -> %q", f, pointers[f], after[f])
			}
		}
		if d := digestDiff(sideAll, treeDigest(t, sideDir)); len(d) > 0 {
			t.Errorf("the sibling worktree's git dir changed: %v", d)
		}

		// A worktree the command made (.worktrees/a2): the next launch finds it, and
		// the main checkout and a2 both commit.
		s.writeWS("d.txt", "d\n", 0o644)
		r = s.sh([]string{"--policy", s.commitPolicy()}, `git add d.txt && git `+gitID+` commit -qm "main-again-$1" || exit 1
cd .worktrees/a2 && echo e > e.txt && git add e.txt && git `+gitID+` commit -qm "a2-inside-$1"`, s.id)
		mustSucceed(t, r, "commits after the command made a nested worktree")
		for branch, msg := range map[string]string{"main": "main-again-", "a2": "a2-inside-"} {
			if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s", branch); err != nil || strings.TrimSpace(out) != msg+s.id {
				t.Errorf("the host's last commit on %s: %q %v; want %s%s", branch, out, err, msg, s.id)
			}
		}
		if _, err := os.Stat(filepath.Join(mainGit, "worktrees", "a2", "gitdir")); err != nil {
			t.Errorf("the command's worktree: %v", err)
		}
	})
}

// A linked worktree of another repository nested in the workspace: under git: commit
// that repository's git dir, named only by a .git file found below the workspace, is
// bound read-only (review 25: a stale worktree record the command revives must not make
// another repository writable), so the workspace commits and that worktree does not;
// with --rw of that repository its worktree commits too, its hooks and config still
// read-only.
func TestGitNestedWorktreeOfOtherRepo(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		other := filepath.Join(s.base, "other")
		s.newRepo(other, "other-commit")
		s.newRepo(s.ws, "ws-commit")
		s.hostGit(other, "worktree", "add", "-q", "-b", "owt", filepath.Join(s.ws, "otherwt"))
		s.writeWS("b.txt", "b\n", 0o644)
		otherGit := filepath.Join(other, ".git")
		all := treeDigest(t, otherGit)
		guarded := guardedDigest(t, otherGit)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `git add b.txt && git `+gitID+` commit -qm "ws-inside-$1" || exit 1
(cd otherwt && echo c > c.txt && git add c.txt && git `+gitID+` commit -qm "owt-inside-$1") 2>/dev/null && echo OWT-COMMITTED
for f in "$2/.git/HEAD" "$2/.git/index" "$2/.git/config" "$2/.git/refs/heads/owt"; do (echo >> "$f") 2>/dev/null && echo "WROTE $f"; done
exit 0`, s.id, other)
		mustSucceed(t, r, "commits in the workspace")
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "OWT-COMMITTED") {
			t.Errorf("the other repository's git dir was writable: %q", r.stdout)
		}
		if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "ws-inside-"+s.id {
			t.Errorf("the workspace's last commit on the host: %q %v", out, err)
		}
		if d := digestDiff(all, treeDigest(t, otherGit)); len(d) > 0 {
			t.Errorf("the other repository's git dir changed: %v", d)
		}
		r = s.sh([]string{"--policy", s.commitPolicy(), "--rw", other}, `cd otherwt && git add c.txt && git `+gitID+` commit -qm "owt-inside-$1" || exit 1
for f in "$2/.git/config" "$2/.git/hooks/post-commit"; do (echo >> "$f") 2>/dev/null && echo "WROTE $f"; done
exit 0`, s.id, other)
		mustSucceed(t, r, "commits in the nested worktree with --rw of its repository")
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("the other repository's config or hooks were writable: %q", r.stdout)
		}
		if out, err := s.hostGitOut(other, "log", "-1", "--format=%s", "owt"); err != nil || strings.TrimSpace(out) != "owt-inside-"+s.id {
			t.Errorf("the nested worktree's last commit on the host: %q %v", out, err)
		}
		if d := digestDiff(guarded, guardedDigest(t, otherGit)); len(d) > 0 {
			t.Errorf("the other repository's config/hooks/info changed: %v", d)
		}
	})
}
