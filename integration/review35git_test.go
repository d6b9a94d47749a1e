package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestSessionStopChecksMappedLFS: a process a session request leaves maps a Git LFS
// object shared and writable, and writes other bytes through the mapping after the
// request's pass checked it (no new ctime or mtime: the page was made writable before);
// session stop, once no process of the session lives, checks every LFS object written
// since the session started and moves the forged one aside (attack review 35 F6:
// before, the stop checked only what was written since the last pass, and the file
// kept the forged bytes under the name of the user's).
func TestSessionStopChecksMappedLFS(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("/usr/bin/python3: %v", err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		sum := sha256.Sum256([]byte("real-content-0001"))
		h := hex.EncodeToString(sum[:])
		obj := filepath.Join(e.ws, ".git", "lfs", "objects", h[:2], h[2:4], h)
		must(t, os.MkdirAll(filepath.Dir(obj), 0o755))
		must(t, os.WriteFile(obj, []byte("real-content-0001"), 0o644))
		for p := obj; p != filepath.Join(e.ws, ".git"); p = filepath.Dir(p) {
			e.chown(p)
		}
		e.start("m", "--policy", e.commitPolicy())
		mapper := `import mmap, os, sys, time
f = open(sys.argv[1], "r+b"); m = mmap.mmap(f.fileno(), 0)
m[0:1] = m[0:1]
open("mapped", "w").close()
while not os.path.exists("go"): time.sleep(0.02)
m[:] = b"FORGED-content-01"
open("forged", "w").close()
while True: time.sleep(1)
`
		must(t, os.WriteFile(filepath.Join(e.ws, "mapper.py"), []byte(mapper), 0o644))
		e.chown(filepath.Join(e.ws, "mapper.py"))
		mustSucceed(t, e.in("m", nil, `(/usr/bin/python3 mapper.py `+obj+` >/dev/null 2>&1 </dev/null &); while [ ! -e mapped ]; do sleep 0.02; done`), "the mapper")
		must(t, os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644))
		if !waitPath(filepath.Join(e.ws, "forged"), false, 20*time.Second) {
			t.Fatal("the mapper did not write")
		}
		r := e.gosbx("session", "stop", "m")
		mustSucceed(t, r, "stop")
		if b, err := os.ReadFile(obj); err == nil && string(b) != "real-content-0001" {
			t.Errorf("the LFS object holds %q after session stop, not its name's content\n%v", b, r)
		}
	})
}

// TestSessionKeepsHostGitWork: what the user's own git does on the host between two
// requests of a commit-mode session while none of its processes lives (a conflicted
// merge in progress, a tag moved, a fetch moving a remote-tracking ref, a ref of a
// tool, a tool's directory in .git, a git pack-refs --all) is all there after the next
// request, with no note blaming the session; a stray ref that request makes is still
// removed (attack review 35 F3: before, the next request undid each as the session's,
// MERGE_HEAD included, so the user's next commit was no merge).
func TestSessionKeepsHostGitWork(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "c1")
		id := []string{"-c", "user.name=h", "-c", "user.email=h@h"}
		e.hostGit(e.ws, "update-ref", "refs/pull/7/head", "HEAD")
		e.hostGit(e.ws, "tag", "v1")
		up := filepath.Join(e.base, "up.git")
		must(t, os.Mkdir(up, 0o755))
		e.chown(up)
		e.hostGit(e.base, "clone", "-q", "--bare", e.ws, up)
		e.hostGit(e.ws, "remote", "add", "origin", up)
		e.hostGit(e.ws, "fetch", "-q", "origin")
		e.hostGit(e.ws, "checkout", "-q", "-b", "side")
		must(t, os.WriteFile(filepath.Join(e.ws, "tracked.txt"), []byte("side\n"), 0o644))
		e.hostGit(e.ws, append(id, "commit", "-qam", "side")...)
		e.hostGit(e.ws, "checkout", "-q", "main")
		e.start("k", "--policy", e.commitPolicy())
		mustSucceed(t, e.in("k", nil, "true"), "request 1")

		must(t, os.WriteFile(filepath.Join(e.ws, "tracked.txt"), []byte("main\n"), 0o644))
		e.hostGit(e.ws, append(id, "commit", "-qam", "main")...)
		e.hostGit(e.ws, "tag", "-f", "v1", "HEAD")
		e.hostGit(e.ws, "push", "-q", up, "HEAD:refs/heads/main")
		e.hostGit(e.ws, "fetch", "-q", "origin")
		e.hostGit(e.ws, "update-ref", "refs/gitbutler/ws", "HEAD")
		e.hostGit(e.ws, "pack-refs", "--all")
		must(t, os.Mkdir(filepath.Join(e.ws, ".git", "mytool"), 0o755))
		must(t, os.WriteFile(filepath.Join(e.ws, ".git", "mytool", "state"), []byte("precious\n"), 0o644))
		if out, err := e.hostGitOut(e.ws, append(id, "merge", "side")...); err == nil {
			t.Fatalf("the merge did not conflict: %s", out)
		}
		refs := func() string {
			out, err := e.hostGitOut(e.ws, "for-each-ref", "--format=%(refname) %(objectname)")
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		was := refs()
		r := e.in("k", nil, "true")
		mustSucceed(t, r, "request 2")
		if now := refs(); now != was {
			t.Errorf("the refs after request 2 are\n%s want as the host left them\n%s%v", now, was, r)
		}
		for _, f := range []string{"MERGE_HEAD", "MERGE_MSG", "mytool/state"} {
			if _, err := os.Lstat(filepath.Join(e.ws, ".git", f)); err != nil {
				t.Errorf(".git/%s the host's git made is gone after request 2: %v\n%v", f, err, r)
			}
		}
		if strings.Contains(r.stderr, "gosbx:") {
			t.Errorf("request 2 said something about the host's work\n%v", r)
		}
		r = e.in("k", nil, `git update-ref refs/evil/x HEAD && echo 0000000000000000000000000000000000000000 > .git/MERGE_HEAD`)
		mustSucceed(t, r, "request 3")
		if out, _ := e.hostGitOut(e.ws, "rev-parse", "--verify", "-q", "refs/evil/x"); strings.TrimSpace(out) != "" {
			t.Errorf("the stray ref request 3 made is there after it\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "MERGE_HEAD")); err == nil {
			t.Errorf("the MERGE_HEAD request 3 rewrote is there after it\n%v", r)
		}
	})
}
