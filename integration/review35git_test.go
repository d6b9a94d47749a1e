package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of attack review 35's git findings F3-F6, F8 (git: commit, one-shot and sessions).

// TestSessionWorktreeJunkNames: 50 000 names a request writes into .git/worktrees do
// not hide a linked worktree the user adds before the next request: that request is
// refused (125, naming the new worktree's git dir), so it cannot write the worktree's
// config.worktree (attack review 35 F8: before, only the first 4096 names were compared
// and the request ran; the host's git status in the worktree ran its core.fsmonitor).
func TestSessionWorktreeJunkNames(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		e.hostGit(e.ws, "config", "extensions.worktreeConfig", "true")
		wts := filepath.Join(e.base, "wts")
		must(t, os.Mkdir(wts, 0o755))
		e.chown(wts)
		e.hostGit(e.ws, "worktree", "add", "-q", filepath.Join(wts, "old"), "-b", "old")
		e.start("j", "--policy", e.commitPolicy())
		mustSucceed(t, e.in("j", nil, `cd .git/worktrees && i=0; while [ $i -lt 50000 ]; do : > j$i; i=$((i+1)); done`), "the junk names")
		e.hostGit(e.ws, "worktree", "add", "-q", filepath.Join(wts, "new"), "-b", "nb")
		r := e.in("j", nil, `printf '[core]\n\tfsmonitor = /bin/false\n' > .git/worktrees/new/config.worktree`)
		if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(e.ws, ".git", "worktrees", "new")) {
			t.Errorf("a request after the user added a linked worktree among 50 000 names: want 125 naming its git dir\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "worktrees", "new", "config.worktree")); err == nil {
			t.Errorf("the new worktree's config.worktree was written")
		}
	})
}

// TestGitCommitNewWorktreePointers: a linked worktree a commit-mode command adds has,
// after the run, no config.worktree (its core.fsmonitor would run in the host's git
// there) and no gitdir that does not lead back to its entry (git worktree remove
// deletes the directory it names); one added and left as git made it keeps its gitdir
// (attack review 35 F8: before, only a stray commondir was removed).
func TestGitCommitNewWorktreePointers(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
git worktree add -q wtok -b ok; git worktree add -q wtbad -b bad
printf '[core]\n\tfsmonitor = /bin/false\n' > .git/worktrees/wtbad/config.worktree
echo "$HOME/precious/.git" > .git/worktrees/wtbad/gitdir`)
		mustSucceed(t, r, "the plant")
		bad := filepath.Join(s.ws, ".git", "worktrees", "wtbad")
		for _, f := range []string{"config.worktree", "gitdir"} {
			if _, err := os.Lstat(filepath.Join(bad, f)); err == nil {
				t.Errorf("%s of a worktree the command added is there after the run\n%v", f, r)
			}
		}
		if b, err := os.ReadFile(filepath.Join(s.ws, ".git", "worktrees", "wtok", "gitdir")); err != nil || !strings.Contains(string(b), "wtok") {
			t.Errorf("git's own gitdir of a worktree the command added is %q (%v), want kept\n%v", b, err, r)
		}
	})
}

// TestGitCommitTagsDirGone: a commit-mode command that moves a packed tag and puts a
// file where refs/tags was, or deletes the tags and removes refs/tags, has the user's
// tags put back as at launch (attack review 35 F5: before, with refs/tags no directory
// the tags were taken for unmoved: the moved one stayed moved, the deleted ones gone).
func TestGitCommitTagsDirGone(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, script := range []string{
			`E=$(git rev-parse HEAD); sed -i "s#^[0-9a-f]* refs/tags/v1\$#$E refs/tags/v1#" .git/packed-refs; rmdir .git/refs/tags; echo x > .git/refs/tags`,
			`git tag -d v1 v2 >/dev/null; rmdir .git/refs/tags`,
			`git tag -d v1 v2 >/dev/null; rmdir .git/refs/tags; ln -s /tmp .git/refs/tags`,
		} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "c1")
			s.hostGit(s.ws, "tag", "v1")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "c2")
			s.hostGit(s.ws, "tag", "v2")
			s.hostGit(s.ws, "pack-refs", "--all")
			was, err := s.hostGitOut(s.ws, "show-ref", "--tags")
			if err != nil {
				t.Fatal(err)
			}
			r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e; git -c user.name=m -c user.email=m@m commit -q --allow-empty -m evil; `+script)
			mustSucceed(t, r, "the plant")
			if now, err := s.hostGitOut(s.ws, "show-ref", "--tags"); err != nil || now != was {
				t.Errorf("after %q the tags are\n%s(%v), want as at launch\n%s%v", script, now, err, was, r)
			}
		}
	})
}

// TestGitCommitPackRefsKeepsStrayRefs: loose refs outside git's namespaces there at
// launch (refs/pull/7/head, jj's refs/jj/keep/<id>) are still there, with their values,
// after a commit-mode command runs git pack-refs --all (attack review 35 F4: before,
// the packed lines were taken for the command's and removed: the refs were gone).
func TestGitCommitPackRefsKeepsStrayRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		s.hostGit(s.ws, "update-ref", "refs/pull/7/head", "HEAD")
		s.hostGit(s.ws, "update-ref", "refs/jj/keep/abc", "HEAD")
		was, err := s.hostGitOut(s.ws, "for-each-ref", "refs/pull", "refs/jj")
		if err != nil || strings.Count(was, "\n") != 2 {
			t.Fatalf("for-each-ref: %q %v", was, err)
		}
		r := s.sh([]string{"--policy", s.commitPolicy()}, `git pack-refs --all`)
		mustSucceed(t, r, "git pack-refs --all")
		if now, err := s.hostGitOut(s.ws, "for-each-ref", "refs/pull", "refs/jj"); err != nil || now != was {
			t.Errorf("after git pack-refs --all the refs are\n%q (%v), want as at launch\n%q\n%v", now, err, was, r)
		}
	})
}
