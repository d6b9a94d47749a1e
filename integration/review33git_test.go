package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of attack review 33's findings F1-F4 (git: commit, one-shot and sessions).

// TestGitCommitShallowRemoved: a commit-mode command that writes .git/shallow naming
// every commit, empties the reflogs, adds 51 packs and backdates the objects leaves no
// shallow file: after the host's own git commit (its gc --auto) and a git gc
// --prune=now, every commit of the user's is still there (attack review 33 F1: before,
// gc took every commit but the tips as parentless and pruned the rest: fsck said
// "missing commit"). A shallow file there at launch (a shallow clone) stays as it was;
// an rr-cache the command made is removed (its resolutions would be what the host's
// next conflicted merge writes).
func TestGitCommitShallowRemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		for i := 2; i <= 5; i++ {
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "c"+strconv.Itoa(i))
		}
		first, err := s.hostGitOut(s.ws, "rev-list", "--max-parents=0", "HEAD")
		if err != nil {
			t.Fatal(err)
		}
		first = strings.TrimSpace(first)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
git rev-list --all > .git/shallow
rm -rf .git/logs/*
for i in $(seq 51); do echo "pad $i" | git hash-object -w --stdin | git pack-objects -q .git/objects/pack/pack >/dev/null; done
find .git/objects -type f ! -path '*/info/*' -exec touch -d '60 days ago' {} +
mkdir .git/rr-cache`)
		mustSucceed(t, r, "the plant")
		for _, f := range []string{"shallow", "rr-cache"} {
			if _, err := os.Lstat(filepath.Join(s.ws, ".git", f)); err == nil {
				t.Errorf(".git/%s the command made is on the host after the run\n%v", f, r)
			}
		}
		if !strings.Contains(r.stderr, "shallow") {
			t.Errorf("the removal of .git/shallow is not said\n%v", r)
		}
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "-c", "gc.autoDetach=false", "commit", "-q", "--allow-empty", "-m", "user")
		s.hostGit(s.ws, "gc", "-q", "--prune=now")
		if out, err := s.hostGitOut(s.ws, "cat-file", "-t", first); err != nil || strings.TrimSpace(out) != "commit" {
			t.Errorf("the user's first commit %s is gone after git gc: %q %v", first, out, err)
		}
		if out, err := s.hostGitOut(s.ws, "rev-list", "--count", "HEAD"); err != nil || strings.TrimSpace(out) != "6" {
			t.Errorf("git rev-list --count HEAD: %q %v, want 6", out, err)
		}

		// a shallow clone's own shallow file: read-only for the run
		sh := filepath.Join(s.base, "shallow-clone")
		must(t, os.Mkdir(sh, 0o755))
		s.chown(sh)
		s.hostGit(s.base, "clone", "-q", "--depth", "2", "file://"+s.ws, sh)
		was, err := os.ReadFile(filepath.Join(sh, ".git", "shallow"))
		if err != nil {
			t.Fatal(err)
		}
		ctx := s.limitCtx(runLimit)
		r = s.runCmd(ctx, s.rawCommand(ctx, "exec", "--policy", s.commitPolicy(), "--workspace", sh, "--", shellPath, "-c", "git rev-list --all >> .git/shallow"))
		if r.code == 0 {
			t.Errorf("the command could write the shallow clone's .git/shallow\n%v", r)
		}
		if now, err := os.ReadFile(filepath.Join(sh, ".git", "shallow")); err != nil || string(now) != string(was) {
			t.Errorf("the shallow clone's .git/shallow is %q (%v), want %q as at launch", now, err, was)
		}
	})
}

// TestSessionLinkedWorktreeAdded: a linked worktree the user adds (git worktree add,
// outside the workspace) between two requests of a commit-mode session has its git dir
// in the session's writable .git: the next request is refused (125, naming it), so it
// cannot write the worktree's commondir. A process a request left in the background
// that writes one there (to a copy of the git dir whose config runs a program) has it
// put back to git's ../.. at session stop: the host's git status in the worktree runs
// nothing (attack review 33 F2: before, the request ran and the host's git in the
// worktree ran the planted core.fsmonitor as the user, after stop too).
func TestSessionLinkedWorktreeAdded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		wts := filepath.Join(e.base, "wts")
		must(t, os.Mkdir(wts, 0o755))
		e.chown(wts)
		marker := filepath.Join(wts, "MARKER")
		plant := func(wt string) string {
			return `cp -r .git "$HOME/e" && rm -rf "$HOME/e/worktrees" && mkdir evilc && cp -r "$HOME/e/." evilc/ &&
printf '#!/bin/sh\necho pwned >` + marker + `\n' > evil.sh && chmod +x evil.sh &&
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = ` + filepath.Join(e.ws, "evil.sh") + `\n' > evilc/config &&
echo ` + filepath.Join(e.ws, "evilc") + ` > .git/worktrees/` + wt + `/commondir`
		}
		e.start("w", "--policy", e.commitPolicy())
		wt := filepath.Join(wts, "wt")
		e.hostGit(e.ws, "worktree", "add", "-q", wt, "-b", "feat")
		r := e.in("w", nil, plant("wt"))
		if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(e.ws, ".git", "worktrees", "wt")) {
			t.Errorf("a request after the user added a linked worktree: want 125 naming its git dir\n%v", r)
		}
		mustSucceed(t, e.gosbx("session", "stop", "w"), "stop")
		checkWorktree := func(wt string) {
			t.Helper()
			if b, err := os.ReadFile(filepath.Join(e.ws, ".git", "worktrees", filepath.Base(wt), "commondir")); err != nil || string(b) != "../..\n" {
				t.Errorf("the worktree's commondir is %q (%v), want git's ../..", b, err)
			}
			if out, err := e.hostGitOut(wt, "status", "--short"); err != nil {
				t.Errorf("host git status in the worktree: %v\n%s", err, out)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("the host's git in the linked worktree ran the planted program (%s)", marker)
			}
		}
		checkWorktree(wt)

		// a background process of a later session writes it once the user adds another
		must(t, os.RemoveAll(filepath.Join(e.ws, "evilc")))
		e.start("w", "--policy", e.commitPolicy())
		mustSucceed(t, e.in("w", nil, `(while [ ! -e .git/worktrees/wt2/commondir ]; do sleep 0.02; done; sleep 0.2; `+strings.ReplaceAll(plant("wt2"), "\n", " ")+`; touch planted) >/dev/null 2>&1 </dev/null &`), "background planter")
		wt2 := filepath.Join(wts, "wt2")
		e.hostGit(e.ws, "worktree", "add", "-q", wt2, "-b", "feat2")
		if !waitPath(filepath.Join(e.ws, "planted"), false, 20*time.Second) {
			t.Fatal("the background process did not plant")
		}
		if b, _ := os.ReadFile(filepath.Join(e.ws, ".git", "worktrees", "wt2", "commondir")); !strings.Contains(string(b), "evilc") {
			t.Fatalf("the plant is not there before stop: %q", b)
		}
		mustSucceed(t, e.gosbx("session", "stop", "w"), "stop")
		checkWorktree(wt2)
	})
}

// TestSessionChecksOncePerPass: a session's cleanup before and after each request
// checks the objects written since its last pass, not since the session started: after
// a request writes a 200 MiB blob (zeros: about a second to inflate and hash here),
// later requests of `true` take well under a second each, and so does session stop.
// What the host's own git writes between requests while no process of the session runs
// (git status refreshing the index, a blob) is not checked or rewritten by the next
// request: the index keeps the stat data the host's git wrote (attack review 33 F3:
// before, every later request re-inflated every object since the start twice, and a
// request that wrote no index wrote the host's anew with its stat data zeroed, so the
// host's git status rehashed every file after every request).
func TestSessionChecksOncePerPass(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		e.start("p", "--policy", e.commitPolicy())
		mustSucceed(t, e.in("p", nil, "head -c 209715200 /dev/zero | git hash-object -w --stdin >/dev/null && touch tracked.txt && git status >/dev/null"), "the blob")
		quick := func(what string) {
			t.Helper()
			for i := 0; i < 2; i++ {
				r := e.in("p", nil, "true")
				mustSucceed(t, r, "true")
				if r.elapsed > time.Second {
					t.Errorf("request %d of true took %v after %s (its objects checked again)\n%v", i, r.elapsed, what, r)
				}
			}
		}
		quick("a request that wrote a 200 MiB blob")
		// the host's git status: the index gets the stat data again
		index := filepath.Join(e.ws, ".git", "index")
		must(t, os.Chtimes(filepath.Join(e.ws, "tracked.txt"), time.Now(), time.Now()))
		e.hostGit(e.ws, "status", "--short")
		var st syscall.Stat_t
		must(t, syscall.Stat(index, &st))
		if out, _ := e.hostGitOut(e.ws, "ls-files", "--debug"); strings.Contains(out, "ctime: 0:0") {
			t.Fatalf("the host's git status left no stat data in the index:\n%s", out)
		}
		blob := filepath.Join(e.base, "blob")
		must(t, os.WriteFile(blob, make([]byte, 209715201), 0o644))
		e.hostGit(e.ws, "hash-object", "-w", blob)
		must(t, os.Remove(blob))
		quick("the host wrote the index and a 200 MiB blob")
		var now syscall.Stat_t
		must(t, syscall.Stat(index, &now))
		if now.Ino != st.Ino || now.Mtim != st.Mtim {
			t.Errorf("requests that wrote no index rewrote the one the host's git status wrote (inode %d → %d)", st.Ino, now.Ino)
		}
		if out, _ := e.hostGitOut(e.ws, "ls-files", "--debug"); strings.Contains(out, "ctime: 0:0") {
			t.Errorf("the index's stat data was zeroed by requests that did not write it:\n%s", out)
		}
		start := time.Now()
		mustSucceed(t, e.gosbx("session", "stop", "p"), "stop")
		// checked again, stop took 13-16 s; once, ~1 s quiet and 3 s at load 20
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("session stop took %v (the session's objects checked again)", d)
		}
	})
}

// TestGitCommitLFSStoreChecked: a commit-mode command that rewrites a Git LFS object
// (.git/lfs/objects/<aa>/<bb>/<sha256>), or adds one whose content is not its name,
// has it moved aside after the run (said on stderr); a new one that hashes to its name
// stays. With git-lfs installed, the host's checkout of the LFS-tracked file then
// writes the user's content, never the command's (attack review 33 F4: before, the
// store was neither read-only nor checked, and git-lfs's smudge copied the command's
// bytes into the working tree).
func TestGitCommitLFSStoreChecked(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		lfsPath := func(content string) string {
			sum := sha256.Sum256([]byte(content))
			h := hex.EncodeToString(sum[:])
			return filepath.Join(s.ws, ".git", "lfs", "objects", h[:2], h[2:4], h)
		}
		good := lfsPath("GOOD-BINARY\n")
		must(t, os.MkdirAll(filepath.Dir(good), 0o755))
		must(t, os.WriteFile(good, []byte("GOOD-BINARY\n"), 0o644))
		for p := good; p != filepath.Join(s.ws, ".git"); p = filepath.Dir(p) {
			s.chown(p)
		}
		planted := lfsPath("ANOTHER\n")
		fine := lfsPath("FINE\n")
		script := `set -e; printf 'EVIL-BINARY\n' > "$1"; mkdir -p "$(dirname "$2")" "$(dirname "$3")"; printf 'EVIL\n' > "$2"; printf 'FINE\n' > "$3"`
		r := s.sh([]string{"--policy", s.commitPolicy()}, script, good, planted, fine)
		mustSucceed(t, r, "the plant")
		for _, p := range []string{good, planted} {
			if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), "EVIL") {
				t.Errorf("%s holds the command's content after the run\n%v", p, r)
			}
		}
		if b, err := os.ReadFile(fine); err != nil || string(b) != "FINE\n" {
			t.Errorf("a new LFS object that hashes to its name is %q (%v), want kept\n%v", b, err, r)
		}
		if !strings.Contains(r.stderr, "Git LFS object") {
			t.Errorf("the move is not said\n%v", r)
		}
	})
}

// TestGitCommitStrayRefNames: a commit-mode command that plants a ref under a name git
// does not make in the git dir (<gitdir>/upstream/main, refs/upstream/main, a packed
// refs/upstream/x line) has it removed after the run: once the user adds the remote
// upstream and fetches, git reset --hard upstream/main checks out the remote's commit,
// not the command's (attack review 33 F8: before, git's lookup took <gitdir>/upstream/main
// first). The user's own git state files (ORIG_HEAD) and refs (a stash) are kept.
func TestGitCommitStrayRefNames(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		up := filepath.Join(s.base, "up")
		must(t, os.Mkdir(up, 0o755))
		s.chown(up)
		s.hostGit(s.base, "clone", "-q", "--bare", s.ws, up)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
export GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@m GIT_COMMITTER_NAME=m GIT_COMMITTER_EMAIL=m@m
git checkout -q -b x; echo EVIL > run.sh; git add run.sh; git commit -qm evil; c=$(git rev-parse HEAD); git checkout -q main; git branch -D x >/dev/null
mkdir -p .git/upstream .git/refs/upstream; echo $c > .git/upstream/main; echo $c > .git/refs/upstream/main
echo "$c refs/upstream/x" >> .git/packed-refs
echo v2 > tracked.txt; git stash -q; git reset -q --hard HEAD`)
		mustSucceed(t, r, "the plant")
		for _, p := range []string{".git/upstream", ".git/refs/upstream"} {
			if _, err := os.Lstat(filepath.Join(s.ws, p)); err == nil {
				t.Errorf("%s is on the host after the run\n%v", p, r)
			}
		}
		for _, ref := range []string{"refs/stash", "ORIG_HEAD"} {
			if _, err := s.hostGitOut(s.ws, "rev-parse", "--verify", "-q", ref); err != nil {
				t.Errorf("git's own %s is gone\n%v", ref, r)
			}
		}
		if out, _ := s.hostGitOut(s.ws, "rev-parse", "--verify", "-q", "refs/upstream/x"); strings.TrimSpace(out) != "" {
			t.Errorf("the packed refs/upstream/x is still there: %q", out)
		}
		s.hostGit(s.ws, "remote", "add", "upstream", up)
		s.hostGit(s.ws, "fetch", "-q", "upstream")
		s.hostGit(s.ws, "reset", "-q", "--hard", "upstream/main")
		if _, err := os.Lstat(filepath.Join(s.ws, "run.sh")); err == nil {
			t.Errorf("git reset --hard upstream/main checked out the command's commit (run.sh)")
		}
	})
}

// TestGitCommitCheckoutState: with the workspace a linked worktree, a commit-mode command
// that writes the main checkout's CHERRY_PICK_HEAD (in the common git dir, outside the
// workspace) naming a commit authored by Mallory has it removed after the run: the
// user's next git commit in the main checkout is authored by the user. A one-commit
// git cherry-pick the command leaves unfinished in its own checkout is removed the same
// way (a conflicted one leaves CHERRY_PICK_HEAD; attack review 33 F6: before, both
// stayed; the user's commit was Mallory's).
func TestGitCommitCheckoutState(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		m := filepath.Join(s.base, "m")
		s.newRepo(m, "main-commit")
		s.hostGit(m, "worktree", "add", "-q", "-b", "agent", s.ws)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
export GIT_AUTHOR_NAME=Mallory GIT_AUTHOR_EMAIL=m@evil GIT_COMMITTER_NAME=Mallory GIT_COMMITTER_EMAIL=m@evil
echo evil > tracked.txt; git commit -qam evil; id=$(git rev-parse HEAD)
echo $id > "$1/.git/CHERRY_PICK_HEAD"
git reset -q --hard HEAD~1; echo mine > tracked.txt; git commit -qam mine
git cherry-pick $id >/dev/null 2>&1 || true
test -e "$(git rev-parse --git-dir)/CHERRY_PICK_HEAD"`, m)
		mustSucceed(t, r, "the plant")
		if _, err := os.Lstat(filepath.Join(m, ".git", "CHERRY_PICK_HEAD")); err == nil {
			t.Errorf("the main checkout's CHERRY_PICK_HEAD the command wrote is there after the run\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(m, ".git", "worktrees", filepath.Base(s.ws), "CHERRY_PICK_HEAD")); err == nil {
			t.Errorf("the cherry-pick the command left in its own checkout is there after the run\n%v", r)
		}
		must(t, os.WriteFile(filepath.Join(m, "tracked.txt"), []byte("user fix\n"), 0o644))
		s.hostGit(m, "-c", "user.name=TheUser", "-c", "user.email=u@u", "commit", "-qam", "user fix")
		if out, err := s.hostGitOut(m, "log", "-1", "--format=%an"); err != nil || strings.TrimSpace(out) != "TheUser" {
			t.Errorf("the user's commit in the main checkout is authored by %q (%v)", out, err)
		}
	})
}
