package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Repository metadata under the git modes of a policy (filesystem.git: readonly,
// the default, or commit), linked worktrees, submodules and planted .git files.
// Host git makes the repositories, as the caller; every check reads the host.

const gitID = "-c user.name=it -c user.email=it@example.com"

// commitPolicy is a policy file that lets the command commit.
func (s *sandbox) commitPolicy() string {
	return s.writePolicy("git-commit.yaml", "extends: agent\nfilesystem: {git: commit}\n")
}

// newSuperWithSubmodule makes the workspace a repository with one submodule, "sub", and
// returns the submodule's git dir (.git/modules/sub).
func (s *sandbox) newSuperWithSubmodule() string {
	s.t.Helper()
	src := filepath.Join(s.base, "subsrc")
	s.newRepo(src, "sub-commit")
	s.newRepo(s.ws, "super-commit")
	s.hostGit(s.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
	return filepath.Join(s.ws, ".git/modules/sub")
}

// newRepo makes a repository with one commit (tracked.txt) at dir, as the caller.
func (s *sandbox) newRepo(dir, msg string) {
	s.t.Helper()
	if _, err := os.Stat(dir); err != nil {
		must(s.t, os.MkdirAll(dir, 0o755))
		s.chown(dir)
	}
	s.hostGit(dir, "init", "-q", "-b", "main")
	must(s.t, os.WriteFile(filepath.Join(dir, "tracked.txt"), []byte("v1\n"), 0o644))
	s.chown(filepath.Join(dir, "tracked.txt"))
	s.hostGit(dir, "add", "tracked.txt")
	s.hostGit(dir, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", msg)
}

// treeDigest maps every path under root (relative) to its type, mode and
// content hash or link target: two equal digests mean an unchanged tree.
func treeDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	d := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			d[rel] = "link " + l
		case info.IsDir():
			d[rel] = "dir " + info.Mode().String()
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			d[rel] = info.Mode().String() + " " + hex.EncodeToString(h[:])
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("digest of %s: %v", root, err)
	}
	return d
}

// digestDiff lists the paths that differ between two digests.
func digestDiff(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, "removed "+k)
		} else if w != v {
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	sort.Strings(out)
	return out
}

// guardedDigest is the digest of what commit mode must keep: config, hooks,
// info, objects/info and commondir of a git dir.
func guardedDigest(t *testing.T, gitDir string) map[string]string {
	t.Helper()
	all := map[string]string{}
	for _, sub := range []string{"config", "hooks", "info", "objects/info", "commondir"} {
		for k, v := range treeDigest(t, filepath.Join(gitDir, sub)) {
			all[filepath.Join(sub, k)] = v
		}
	}
	return all
}

// Readonly mode (the default): status, log and diff work on an existing
// repository; commit, and writes to config and hooks, fail; the host's .git is
// byte-for-byte unchanged.
func TestGitModeReadonly(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit-"+s.id)
		s.writeWS("tracked.txt", "v2\n", 0o644)
		before := treeDigest(t, filepath.Join(s.ws, ".git"))
		r := s.sh(nil, `git status --porcelain && echo STATUS-OK
git log --oneline && echo LOG-OK
git diff && echo DIFF-OK
git `+gitID+` commit -q -am inside 2>&1 && echo COMMITTED
(echo '[core] fsmonitor = true' >> .git/config) 2>/dev/null && echo WROTE-config
(echo '#!/bin/sh' > .git/hooks/pre-commit) 2>/dev/null && echo WROTE-hook
exit 0`)
		mustSucceed(t, r, "readonly git probes")
		for _, want := range []string{"STATUS-OK", "M tracked.txt", "LOG-OK", "host-commit-" + s.id, "DIFF-OK", "+v2"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("git status/log/diff inside: %q missing\n%v", want, r)
			}
		}
		for _, bad := range []string{"COMMITTED", "WROTE-config", "WROTE-hook"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("readonly mode allowed it (%s):\n%s", bad, r.stdout)
			}
		}
		if d := digestDiff(before, treeDigest(t, filepath.Join(s.ws, ".git"))); len(d) > 0 {
			t.Errorf("the host's .git changed in readonly mode: %v", d)
		}
	})
}

// Commit mode: git add and git commit inside succeed and the commit is on the
// host; config, hooks, info/exclude and objects/info/alternates cannot be written
// and are unchanged on the host.
func TestGitModeCommit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		guarded := guardedDigest(t, gitDir)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `echo new > added.txt
git add added.txt && git `+gitID+` commit -q -m "inside-`+s.id+`" && echo COMMITTED
(echo '[core] fsmonitor = true' >> .git/config) 2>/dev/null && echo WROTE-config
(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo WROTE-hook
(echo '*' > .git/info/exclude) 2>/dev/null && echo WROTE-exclude
(echo /tmp > .git/objects/info/alternates) 2>/dev/null && echo WROTE-alternates
(rm -f .git/hooks/pre-commit.sample) 2>/dev/null && ! test -e .git/hooks/pre-commit.sample && echo REMOVED-sample
git status --porcelain
exit 0`)
		mustSucceed(t, r, "commit-mode probes")
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("git add + commit failed in commit mode:\n%v", r)
		}
		for _, bad := range []string{"WROTE-config", "WROTE-hook", "WROTE-exclude", "WROTE-alternates", "REMOVED-sample"} {
			if strings.Contains(r.stdout, bad) {
				t.Errorf("commit mode allowed it (%s):\n%s", bad, r.stdout)
			}
		}
		out, err := s.hostGitOut(s.ws, "log", "--format=%s")
		if err != nil || !strings.Contains(out, "inside-"+s.id) {
			t.Errorf("the commit made inside is not in the host's git log: %q %v", out, err)
		}
		if out, err := s.hostGitOut(s.ws, "status", "--porcelain"); err != nil || strings.Contains(out, "added.txt") {
			t.Errorf("host git status after the inside commit: %q %v", out, err)
		}
		if d := digestDiff(guarded, guardedDigest(t, gitDir)); len(d) > 0 {
			t.Errorf("config/hooks/info/objects/info changed on the host in commit mode: %v", d)
		}
	})
}

// Commit mode on a repository whose .git/hooks (and info) were removed before
// launch: the command still cannot create them.
func TestGitModeCommitNoHooksDir(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		must(t, os.RemoveAll(filepath.Join(gitDir, "hooks")))
		must(t, os.RemoveAll(filepath.Join(gitDir, "info")))
		r := s.sh([]string{"--policy", s.commitPolicy()}, `mkdir -p .git/hooks 2>/dev/null
(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo WROTE-hook
mkdir -p .git/info 2>/dev/null
(echo '*' > .git/info/exclude) 2>/dev/null && echo WROTE-exclude
echo x > f && git add f && git `+gitID+` commit -q -m inside && echo COMMITTED
exit 0`)
		mustSucceed(t, r, "no-hooks probes")
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("a missing protected directory could be created and written:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("commit failed in commit mode:\n%v", r)
		}
		for _, d := range []string{"hooks", "info"} {
			ents, _ := os.ReadDir(filepath.Join(gitDir, d))
			if len(ents) > 0 {
				t.Errorf(".git/%s on the host has entries after the run: %v", d, ents)
			}
		}
	})
}

// Commit mode: a commondir file, which would redirect git's config and hooks to
// a directory the command controls, cannot be created in a git dir: a plain
// repository's, the main repository's of a linked worktree, a submodule's.
func TestGitModeCommitCommondir(t *testing.T) {
	layouts := []struct {
		name  string
		setup func(s *sandbox) (gitDir string)
	}{
		{"repository", func(s *sandbox) string {
			s.newRepo(s.ws, "host-commit")
			return filepath.Join(s.ws, ".git")
		}},
		{"worktree", func(s *sandbox) string {
			mainRepo := filepath.Join(s.base, "mainrepo")
			s.newRepo(mainRepo, "main-commit")
			s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtbranch", s.ws)
			return filepath.Join(mainRepo, ".git")
		}},
		{"submodule", func(s *sandbox) string { return s.newSuperWithSubmodule() }},
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, l := range layouts {
			s := newSandbox(t, c)
			gitDir := l.setup(s)
			r := s.sh([]string{"--policy", s.commitPolicy()}, `(echo "$2" > "$1/commondir") 2>/dev/null && echo WROTE-commondir
exit 0`, gitDir, filepath.Join(s.ws, "evil"))
			mustSucceed(t, r, l.name+": commondir probe")
			// A writable git dir cannot be kept from a new file by a mount: gosbx removes
			// a planted commondir when the sandbox ends, and says so.
			if strings.Contains(r.stdout, "WROTE") && !strings.Contains(r.stderr, filepath.Join(gitDir, "commondir")) {
				t.Errorf("%s: the command created %s/commondir and gosbx did not report its removal:\n%v", l.name, gitDir, r)
			}
			if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
				t.Errorf("%s: %s/commondir exists on the host after the run: the host's next git command there reads config and hooks from where the command chose", l.name, gitDir)
			}
		}
	})
}

// Commit mode: renaming an unprotected parent of a protected path (the git dir
// itself, or objects/) and putting a new one in its place must not let the
// command plant config, hooks or alternates that host git then uses.
func TestGitModeCommitRename(t *testing.T) {
	probes := []struct{ name, script string }{
		{"git-dir", `mv .git .git-moved 2>/dev/null && echo MOVED
cp -a .git-moved .git 2>/dev/null
(echo "[gosbx] planted = $1" >> .git/config) 2>/dev/null && echo WROTE-config
(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo WROTE-hook
exit 0`},
		{"objects", `mv .git/objects .git/objects-moved 2>/dev/null && echo MOVED
mkdir -p .git/objects/info 2>/dev/null
(echo /tmp > .git/objects/info/alternates) 2>/dev/null && echo WROTE-alternates
exit 0`},
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, p := range probes {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			gitDir := filepath.Join(s.ws, ".git")
			guarded := guardedDigest(t, gitDir)
			r := s.sh([]string{"--policy", s.commitPolicy()}, p.script, s.id)
			mustSucceed(t, r, p.name+" rename probe")
			if strings.Contains(r.stdout, "WROTE") {
				t.Errorf("%s: after a rename the command wrote protected metadata:\n%s", p.name, r.stdout)
			}
			// Read the host's files directly: running host git on a tampered
			// repository is what the protection is for.
			if d := digestDiff(guarded, guardedDigest(t, gitDir)); len(d) > 0 {
				t.Errorf("%s: the host's config/hooks/info/objects/info changed: %v (inside: %q)", p.name, d, r.stdout)
			}
		}
	})
}

// A linked worktree as the workspace: readonly mode reads it (the main
// repository's git dir bound read-only), commit mode commits to it; the main
// repository's config and hooks never change, and its working tree stays hidden.
func TestGitWorktree(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mainRepo := filepath.Join(s.base, "mainrepo")
		s.newRepo(mainRepo, "main-commit-"+s.id)
		must(t, os.WriteFile(filepath.Join(mainRepo, "main-only.txt"), []byte("main-"+s.id), 0o644))
		s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtbranch", s.ws)
		mainGit := filepath.Join(mainRepo, ".git")
		all := treeDigest(t, mainGit)
		guarded := guardedDigest(t, mainGit)

		r := s.sh(nil, `git status --porcelain && echo STATUS-OK
git log --oneline && echo LOG-OK
cat "$1/main-only.txt" 2>/dev/null && echo READ-MAIN-TREE
echo x > f; git add f 2>/dev/null && echo ADDED
exit 0`, mainRepo)
		mustSucceed(t, r, "worktree, readonly")
		if !strings.Contains(r.stdout, "STATUS-OK") || !strings.Contains(r.stdout, "LOG-OK") || !strings.Contains(r.stdout, "main-commit-"+s.id) {
			t.Errorf("git status/log in a linked worktree, readonly mode:\n%v", r)
		}
		if strings.Contains(r.stdout, "ADDED") {
			t.Errorf("git add worked in readonly mode:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "READ-MAIN-TREE") || strings.Contains(r.stdout, "main-"+s.id) {
			t.Errorf("the main repository's working tree is visible inside:\n%s", r.stdout)
		}
		if d := digestDiff(all, treeDigest(t, mainGit)); len(d) > 0 {
			t.Errorf("the main repository's .git changed in readonly mode: %v", d)
		}

		r = s.sh([]string{"--policy", s.commitPolicy()}, `git add f && git `+gitID+` commit -q -m "wt-inside-$2" && echo COMMITTED
(echo '[core] fsmonitor = true' >> "$1/.git/config") 2>/dev/null && echo WROTE-main-config
(echo '#!/bin/sh' > "$1/.git/hooks/post-commit") 2>/dev/null && echo WROTE-main-hook
exit 0`, mainRepo, s.id)
		mustSucceed(t, r, "worktree, commit mode")
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("commit in a linked worktree failed in commit mode:\n%v", r)
		}
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("the main repository's metadata was writable:\n%s", r.stdout)
		}
		if out, err := s.hostGitOut(mainRepo, "log", "--format=%s", "wtbranch"); err != nil || !strings.Contains(out, "wt-inside-"+s.id) {
			t.Errorf("the worktree commit is not on the host: %q %v", out, err)
		}
		if d := digestDiff(guarded, guardedDigest(t, mainGit)); len(d) > 0 {
			t.Errorf("the main repository's config/hooks/info changed: %v", d)
		}
	})
}

// A submodule (git dir in the superproject's .git/modules): in commit mode it
// can commit, but its hooks and config are protected like the superproject's.
func TestGitSubmoduleCommitMode(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		subGit := s.newSuperWithSubmodule()
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "add sub")
		if _, err := os.Stat(filepath.Join(subGit, "config")); err != nil {
			t.Fatalf("submodule git dir not where expected: %v", err)
		}
		guarded := guardedDigest(t, subGit)
		r := s.sh([]string{"--policy", s.commitPolicy()}, `cd sub
echo t > t && git add t && git `+gitID+` commit -q -m "sub-inside-$1" && echo COMMITTED
(echo '[core] fsmonitor = true' >> ../.git/modules/sub/config) 2>/dev/null && echo WROTE-config
(echo '#!/bin/sh' > ../.git/modules/sub/hooks/post-commit) 2>/dev/null && echo WROTE-hook
(echo 'gitdir: /tmp' > .git) 2>/dev/null && echo WROTE-dotgit-file
exit 0`, s.id)
		mustSucceed(t, r, "submodule probes")
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("commit in the submodule failed in commit mode:\n%v", r)
		}
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("the submodule's metadata was writable:\n%s", r.stdout)
		}
		if d := digestDiff(guarded, guardedDigest(t, subGit)); len(d) > 0 {
			t.Errorf("the submodule's config/hooks/info changed on the host: %v", d)
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "sub/.git")); !strings.Contains(string(b), "modules/sub") {
			t.Errorf("the submodule's .git file changed on the host: %q", b)
		}
	})
}

// A .git FILE planted in the workspace naming another repository on the host
// (with no back-pointer) does not expose that repository, in either mode.
func TestGitPlantedGitFile(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		other := filepath.Join(s.base, "other")
		s.newRepo(other, "other-commit-"+s.id)
		canary := filepath.Join(other, ".git/canary")
		must(t, os.WriteFile(canary, []byte("canary-"+s.id), 0o644))
		s.writeWS(".git", "gitdir: "+filepath.Join(other, ".git")+"\n", 0o644)
		before := treeDigest(t, filepath.Join(other, ".git"))
		for _, flags := range [][]string{nil, {"--policy", s.commitPolicy()}} {
			r := s.sh(flags, `cat "$1/.git/HEAD" 2>/dev/null && echo READ-HEAD
cat "$1/.git/canary" 2>/dev/null && echo READ-CANARY
ls -A "$1" 2>/dev/null | sed 's/^/LS /'
git status >/dev/null 2>&1 && echo STATUS-OK
git log 2>/dev/null | grep -q other-commit && echo LOG-OK
exit 0`, other)
			mustSucceed(t, r, "planted .git file probes")
			for _, bad := range []string{"READ-HEAD", "READ-CANARY", "canary-", "LS ", "STATUS-OK", "LOG-OK", "refs/heads"} {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("%v: the repository named by a planted .git file is exposed (%s):\n%s", flags, bad, r.stdout)
				}
			}
		}
		if d := digestDiff(before, treeDigest(t, filepath.Join(other, ".git"))); len(d) > 0 {
			t.Errorf("the other repository changed on the host: %v", d)
		}
	})
}

// A repository whose .git/hooks is a symlink to a shared hooks directory outside
// the workspace: in either mode the command can neither write through it nor
// replace it with a hooks directory of its own.
func TestGitHooksSymlink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			shared := filepath.Join(s.base, "shared-hooks")
			must(t, os.Mkdir(shared, 0o755))
			s.chown(shared)
			hooks := filepath.Join(s.ws, ".git/hooks")
			must(t, os.RemoveAll(hooks))
			must(t, os.Symlink(shared, hooks))
			must(t, os.Lchown(hooks, c.uid, c.gid))
			pol := s.writePolicy("git-"+mode+".yaml", "extends: agent\nfilesystem: {git: "+mode+"}\n")
			r := s.sh([]string{"--policy", pol}, `(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo WROTE-through-link
rm -f .git/hooks 2>/dev/null && mkdir .git/hooks 2>/dev/null && echo REPLACED-link
(echo '#!/bin/sh' > .git/hooks/post-commit) 2>/dev/null && echo WROTE-hook
exit 0`)
			// A symlinked hooks dir cannot be pinned: commit mode refuses to start
			// (125, nothing ran); readonly mode protects the whole git dir.
			if mode == "commit" {
				if r.code != 125 || !strings.Contains(r.stderr, "symlink") || r.stdout != "" {
					t.Errorf("commit mode with a symlinked .git/hooks: want 125 naming the symlink and nothing run\n%v", r)
				}
			} else {
				mustSucceed(t, r, mode+": hooks symlink probes")
			}
			if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "REPLACED") {
				t.Errorf("%s mode: .git/hooks (a symlink to %s) could be written or replaced:\n%s", mode, shared, r.stdout)
			}
			if l, err := os.Readlink(hooks); err != nil || l != shared {
				t.Errorf("%s mode: the host's .git/hooks is no longer the symlink to %s: %q %v", mode, shared, l, err)
			}
			if ents, _ := os.ReadDir(shared); len(ents) > 0 {
				t.Errorf("%s mode: a file appeared in the shared hooks directory: %v", mode, ents)
			}
		}
	})
}

// Commit mode: a command that plants a commondir and then makes the git dir (or a
// directory it made there) unwritable or unsearchable to its owner does not keep it:
// the launcher gives the owner's access back and removes it, and says so.
func TestGitModeCommitCleanupDespiteChmod(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		before, err := os.Stat(gitDir)
		if err != nil {
			t.Fatal(err)
		}
		r := s.sh([]string{"--policy", s.commitPolicy()}, `echo ../evil > .git/commondir
mkdir -p .git/rebase-merge/deep && echo 'exec touch /tmp/x' > .git/rebase-merge/git-rebase-todo
chmod 000 .git/rebase-merge/deep; chmod 0500 .git/rebase-merge; chmod 0500 .git
exit 0`)
		// the git dir has the mode it had at launch again (review 29 F18: was left 0700)
		if after, err := os.Stat(gitDir); err != nil || after.Mode() != before.Mode() {
			t.Errorf(".git's mode after the run: %v (%v), want %v as at launch", after.Mode(), err, before.Mode())
		}
		os.Chmod(gitDir, 0o755)
		mustSucceed(t, r, "plant and chmod")
		for _, p := range []string{"commondir", "rebase-merge"} {
			if _, err := os.Lstat(filepath.Join(gitDir, p)); err == nil {
				t.Errorf(".git/%s is still on the host after the run\n%v", p, r)
			}
		}
		if strings.Contains(r.stderr, "could not remove") {
			t.Errorf("gosbx could not remove what the command planted:\n%v", r)
		}
	})
}

// Commit mode: a part of the git dir the command made unreadable to its owner (where a
// worktree, a module or a commondir could hide from the next launch's guard) gets its
// owner's access back after the run; left so (a launcher killed before its cleanup), it
// makes the next launch refuse, naming it, rather than guard what it can see.
func TestGitDirUnreadablePartRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		if c.uid == 0 {
			t.Skip("root reads every directory")
		}
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `chmod 000 .git/refs`)
		mustSucceed(t, r, "run 1")
		// the cleanup after the run walked the git dir and gave the owner its access back
		if st, err := os.Stat(filepath.Join(s.ws, ".git/refs")); err != nil || st.Mode().Perm()&0o700 != 0o700 {
			t.Errorf(".git/refs after the run: %v %v; want the owner's rwx back", st.Mode(), err)
		}
		// as a launcher killed before its cleanup would have left it
		must(t, os.Chmod(filepath.Join(s.ws, ".git/refs"), 0))
		marker := filepath.Join(s.ws, "ran")
		r = s.sh([]string{"--policy", s.commitPolicy()}, `touch "$1"`, marker)
		os.Chmod(filepath.Join(s.ws, ".git/refs"), 0o755)
		if r.code != 125 || !strings.Contains(r.stderr, ".git/refs") {
			t.Errorf("want 125 naming .git/refs\n%v", r)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Error("the command ran")
		}
	})
}

// Commit mode: a submodule's git dir whose HEAD (or objects) the command moved aside in
// one launch is still guarded in the next: its hooks stay read-only, so no hook can be
// planted there for the user's next git in the submodule.
func TestGitModeCommitSubmoduleHeadMoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mod := s.newSuperWithSubmodule()
		for _, moved := range []string{"HEAD", "objects"} {
			r := s.sh([]string{"--policy", s.commitPolicy()}, `mv "$1/$2" "$1/$2.away"`, mod, moved)
			if r.code != 0 {
				continue // cannot be moved at all (objects/ is a pinned mount point)
			}
			r = s.sh([]string{"--policy", s.commitPolicy()}, `echo 'touch /tmp/pwned' > "$1/hooks/post-checkout" 2>/dev/null && echo PLANTED
mv "$1/$2.away" "$1/$2"; exit 0`, mod, moved)
			os.Rename(filepath.Join(mod, moved+".away"), filepath.Join(mod, moved))
			if strings.Contains(r.stdout, "PLANTED") {
				t.Errorf("%s moved aside: the next launch left the submodule's hooks writable\n%v", moved, r)
			}
			os.Remove(filepath.Join(mod, "hooks/post-checkout"))
		}
	})
}

// Commit mode: a symlink the command leaves in the git dir (where the host's git writes
// COMMIT_EDITMSG, logs/HEAD, refs, following it) is removed after the run and reported;
// one left by a sandbox whose launcher was killed makes the next launch refuse. And an
// unfinished rebase that is the user's own, there at launch, is read-only inside: the
// command cannot add an exec line that the user's git rebase --continue would run.
func TestGitModeCommitSymlinksAndRebase(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		victim := filepath.Join(s.base, "victim")
		must(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
		r := s.sh([]string{"--policy", s.commitPolicy()}, `ln -sf "$1" .git/COMMIT_EDITMSG && mkdir -p .git/logs/refs && ln -sf "$1" .git/logs/HEAD &&
mkfifo .git/MERGE_MSG && mkdir .git/remotes && echo 'URL: ../evil' > .git/remotes/origin && echo PLANTED`, victim)
		mustSucceed(t, r, "plant symlinks, a FIFO, a legacy remote")
		for _, p := range []string{"COMMIT_EDITMSG", "logs/HEAD"} {
			if st, err := os.Lstat(filepath.Join(gitDir, p)); err == nil && st.Mode()&os.ModeSymlink != 0 {
				t.Errorf(".git/%s is still a symlink on the host after the run\n%v", p, r)
			}
		}
		for _, p := range []string{"MERGE_MSG", "remotes"} {
			if _, err := os.Lstat(filepath.Join(gitDir, p)); err == nil {
				t.Errorf(".git/%s is still on the host after the run\n%v", p, r)
			}
		}
		// as a killed launcher would have left it
		must(t, os.Symlink(victim, filepath.Join(gitDir, "COMMIT_EDITMSG")))
		r = s.sh([]string{"--policy", s.commitPolicy()}, `true`)
		if r.code != 125 || !strings.Contains(r.stderr, "COMMIT_EDITMSG") {
			t.Errorf("a symlink left in the git dir: want 125 naming it\n%v", r)
		}
		os.Remove(filepath.Join(gitDir, "COMMIT_EDITMSG"))
		// the user's own paused rebase
		todo := filepath.Join(gitDir, "rebase-merge", "git-rebase-todo")
		must(t, os.MkdirAll(filepath.Dir(todo), 0o755))
		must(t, os.WriteFile(todo, []byte("pick 0000000 x\n"), 0o644))
		filepath.Walk(gitDir, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		r = s.sh([]string{"--policy", s.commitPolicy()}, `echo 'exec touch /tmp/pwned' >> .git/rebase-merge/git-rebase-todo 2>/dev/null && echo ADDED; exit 0`)
		if b, _ := os.ReadFile(todo); strings.Contains(string(b), "exec") || strings.Contains(r.stdout, "ADDED") {
			t.Errorf("the command added to the user's paused rebase:\n%v\ntodo: %q", r, b)
		}
		if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
			t.Errorf("the victim changed: %q", b)
		}
	})
}

// Commit mode: when gosbx itself is killed (SIGKILL, as an agent framework's timeout
// does) while the command runs, the sandbox's init ends the command and does the
// cleanup after the run in the launcher's place: what the command planted in the git
// dir does not wait there for the user's next git.
func TestGitModeCommitCleanupAfterLauncherKilled(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		// a stray file in modules/, replaced by a directory (review12 F1: the init's
		// cleanup keeps an entry by identity too)
		must(t, os.MkdirAll(filepath.Join(gitDir, "modules"), 0o755))
		s.chown(filepath.Join(gitDir, "modules"))
		must(t, os.WriteFile(filepath.Join(gitDir, "modules", "README"), []byte("stray\n"), 0o644))
		s.chown(filepath.Join(gitDir, "modules", "README"))
		ready := filepath.Join(s.ws, "ready")
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", `trap '' TERM
rm .git/modules/README && mkdir -p .git/modules/README/hooks
echo ../evil > .git/commondir; mkdir .git/rebase-merge && echo 'exec touch /tmp/x' > .git/rebase-merge/git-rebase-todo
ln -s /etc/passwd .git/COMMIT_EDITMSG 2>/dev/null || ln -sf /etc/passwd .git/COMMIT_EDITMSG
touch "$1"; sleep 30`, "_", ready)
		must(t, cmd.Start())
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(ready); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		// gosbx itself (setpriv execs it for nobody)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		var left []string
		for deadline = time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			left = nil
			for _, p := range []string{"commondir", "rebase-merge", "COMMIT_EDITMSG", "modules/README"} {
				if st, err := os.Lstat(filepath.Join(gitDir, p)); err == nil && (p != "COMMIT_EDITMSG" || st.Mode()&os.ModeSymlink != 0) &&
					(p != "modules/README" || st.IsDir()) {
					left = append(left, p)
				}
			}
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(left) > 0 {
			t.Errorf("after gosbx was killed, .git still holds what the command planted: %v", left)
		}
	})
}

// A git commit refused by the default git: readonly says so: gosbx's note names the
// read-only metadata and the git: commit setting (the trial saw only git's "Read-only
// file system"); following it, the commit lands on the host. No note under commit mode,
// and none for a failed command that ran no git.
func TestGitReadonlyCommitNote(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		script := `echo new > added.txt && git add added.txt && git ` + gitID + ` commit -q -m "inside-` + s.id + `"`
		r := s.sh(nil, script)
		if r.code == 0 || !strings.Contains(r.stderr, "gosbx: note: the command ran git") || !strings.Contains(r.stderr, "git: commit") {
			t.Errorf("git commit under readonly: %v; want a failure with gosbx's note naming git: commit", r)
		}
		if out, _ := s.hostGitOut(s.ws, "log", "--format=%s"); strings.Contains(out, "inside-"+s.id) {
			t.Fatalf("the commit landed under git: readonly: %q", out)
		}
		r = s.sh(nil, `ls .git >/dev/null; exit 3`)
		if r.code != 3 || strings.Contains(r.stderr, "ran git") {
			t.Errorf("a failure that ran no git: %v; want exit 3 and no git note", r)
		}
		r = s.sh([]string{"--policy", s.commitPolicy()}, script)
		mustSucceed(t, r, "the commit with the note's git: commit")
		if strings.Contains(r.stderr, "ran git") {
			t.Errorf("a note under git: commit: %v", r)
		}
		if out, _ := s.hostGitOut(s.ws, "log", "--format=%s"); !strings.Contains(out, "inside-"+s.id) {
			t.Errorf("the commit made under git: commit is not in the host's log: %q", out)
		}
	})
}
