package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A submodule path of a protected repository (a gitlink of its index, or a .gitmodules
// entry) that was never checked out is bound read-only onto itself: the command cannot
// make a repository there whose config the user's git status in the parent would run
// (git recurses into populated submodules), neither during the run nor after, and
// cannot swap the directory for a symlink. The user's git status runs nothing of the
// command's, and no host file outside is touched.
func TestGitPlantedSubmoduleRepo(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "base")
				sha := strings.TrimSpace(mustGitOut(s, s.ws, "rev-parse", "HEAD"))
				// a gitlink with no .gitmodules entry, and one that has an entry
				s.hostGit(s.ws, "update-index", "--add", "--cacheinfo", "160000,"+sha+",vendor/lib")
				s.hostGit(s.ws, "update-index", "--add", "--cacheinfo", "160000,"+sha+",vendor/other")
				must(t, os.WriteFile(filepath.Join(s.ws, ".gitmodules"), []byte("[submodule \"o\"]\n\tPath = vendor/other ; commented\n"), 0o644))
				s.chown(filepath.Join(s.ws, ".gitmodules"))
				lib := filepath.Join(s.ws, "vendor", "lib")
				must(t, os.MkdirAll(lib, 0o755))
				s.chown(filepath.Join(s.ws, "vendor"))
				s.chown(lib)
				victim := filepath.Join(s.base, "victim")
				must(t, os.MkdirAll(filepath.Join(victim, ".git"), 0o755))
				must(t, os.WriteFile(filepath.Join(victim, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
				pwned := filepath.Join(s.base, "PWNED-"+mode)
				var flags []string
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				script := `for d in vendor/lib vendor/other; do
  if (cd $d && git init -q . && git config core.fsmonitor "touch $1; false") 2>/dev/null; then echo PLANTED $d; fi
  if mv $d $d.old 2>/dev/null; then echo MOVED $d; fi
done
if (rm -rf vendor/lib && ln -s "$2" vendor/lib) 2>/dev/null; then echo SWAPPED; fi
echo done`
				r := s.run(append(flags, "--", shellPath, "-c", script, "_", pwned, victim)...)
				mustSucceed(t, r, "the command")
				for _, bad := range []string{"PLANTED", "MOVED", "SWAPPED"} {
					if strings.Contains(r.stdout, bad) {
						t.Errorf("inside: %s\n%v", bad, r)
					}
				}
				for _, d := range []string{lib, filepath.Join(s.ws, "vendor", "other")} {
					if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
						t.Errorf("a .git appeared in the submodule path %s", d)
					}
				}
				if _, err := os.Stat(filepath.Join(victim, ".git", "HEAD")); err != nil {
					t.Errorf("a repository outside the workspace was touched: %v", err)
				}
				out, _ := s.hostGitOut(s.ws, "status", "--short")
				if _, err := os.Lstat(pwned); err == nil {
					t.Errorf("the user's git status ran the command's fsmonitor\n%s", out)
				}
			})
		}
	})
}

// In commit mode a .git/config.worktree the command makes (read by git with
// extensions.worktreeConfig) is removed when the sandbox ends; a symlink the command
// puts in its place is removed, not followed.
func TestGitConfigWorktreeRemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "base")
		target := filepath.Join(s.base, "keep")
		must(t, os.WriteFile(target, []byte("keep\n"), 0o644))
		r := s.runStatusToStderr("--policy", s.commitPolicy(), "--", shellPath, "-c",
			`printf '[core]\n\tfsmonitor = "touch x; false"\n' > .git/config.worktree && echo WT`)
		mustSucceed(t, r, "the command")
		if !strings.Contains(r.stdout, "WT") {
			t.Fatalf("the command could not write .git/config.worktree: the test exercises nothing\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(s.ws, ".git", "config.worktree")); err == nil {
			t.Error("the command's .git/config.worktree outlived the sandbox")
		}
		if !strings.Contains(r.stderr, `"removed"`) {
			t.Errorf("the status does not say what was removed:\n%s", r.stderr)
		}
		r = s.run("--policy", s.commitPolicy(), "--", shellPath, "-c", `ln -s "$1" .git/config.worktree && echo LINK`, "_", target)
		mustSucceed(t, r, "the command")
		wantContent(t, target, "keep\n")
		if _, err := os.Lstat(filepath.Join(s.ws, ".git", "config.worktree")); err == nil {
			t.Error("the command's symlink at .git/config.worktree outlived the sandbox")
		}
	})
}

func mustGitOut(s *sandbox, dir string, args ...string) string {
	s.t.Helper()
	out, err := s.hostGitOut(dir, args...)
	if err != nil {
		s.t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
	return out
}

// Nested submodules are guarded however deep they lie (deeper than the protected-path
// scan reaches): a populated submodule's own unpopulated submodule path is read-only.
func TestGitNestedSubmoduleGuarded(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	git := func(dir string, args ...string) {
		t.Helper()
		s.hostGit(dir, append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=h", "-c", "user.email=h@h"}, args...)...)
	}
	inner, mid := filepath.Join(s.base, "inner"), filepath.Join(s.base, "mid")
	s.newRepo(inner, "inner")
	s.newRepo(mid, "mid")
	git(mid, "submodule", "add", "-q", inner, "inner")
	git(mid, "commit", "-q", "-m", "with inner")
	s.newRepo(s.ws, "top")
	git(s.ws, "submodule", "add", "-q", mid, "x/y/z/deep")
	git(s.ws, "commit", "-q", "-m", "with deep")
	deepInner := filepath.Join(s.ws, "x", "y", "z", "deep", "inner")
	if _, err := os.Lstat(filepath.Join(deepInner, ".git")); err == nil {
		t.Fatal("the nested submodule is populated: the test exercises nothing")
	}
	pwned := filepath.Join(s.base, "PWNED-nested")
	r := s.run("--", shellPath, "-c", `if (cd x/y/z/deep/inner && git init -q . && git config core.fsmonitor "touch $1; false") 2>/dev/null; then echo PLANTED; fi; echo done`, "_", pwned)
	mustSucceed(t, r, "the command")
	if strings.Contains(r.stdout, "PLANTED") {
		t.Errorf("a repository was made at a nested submodule path\n%v", r)
	}
	s.hostGitOut(s.ws, "status")
	if _, err := os.Lstat(pwned); err == nil {
		t.Error("the user's git status ran the command's fsmonitor")
	}
}

// In commit mode a repository without submodule git dirs gets none of the command's
// making (the user's later git submodule update --init would adopt it, hooks and all).
func TestGitCommitModeNoNewModules(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "base")
		r := s.run("--policy", s.commitPolicy(), "--", shellPath, "-c",
			`if mkdir -p .git/modules/sub 2>/dev/null; then echo MADE; fi; echo x > new.txt && git add new.txt && git -c user.name=i -c user.email=i@i commit -q -m inside && echo COMMITTED`)
		mustSucceed(t, r, "the command")
		if strings.Contains(r.stdout, "MADE") {
			t.Errorf("the command made a submodule git dir\n%v", r)
		}
		if !strings.Contains(r.stdout, "COMMITTED") {
			t.Errorf("commit mode no longer commits\n%v", r)
		}
		if ents, _ := os.ReadDir(filepath.Join(s.ws, ".git", "modules")); len(ents) != 0 {
			t.Errorf(".git/modules holds %d entries after the run", len(ents))
		}
	})
}

// What the repository's own config sends git to inside the workspace (husky's
// core.hooksPath, an include.path) is read-only inside: hooks or config written there
// would run with the user's next git command.
func TestGitConfigTargetsReadOnly(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "base")
				must(t, os.Mkdir(filepath.Join(s.ws, ".husky"), 0o755))
				s.chown(filepath.Join(s.ws, ".husky"))
				must(t, os.WriteFile(filepath.Join(s.ws, ".gitconfig"), []byte("[user]\n\tname = x\n"), 0o644))
				s.chown(filepath.Join(s.ws, ".gitconfig"))
				s.hostGit(s.ws, "config", "core.hooksPath", ".husky")
				s.hostGit(s.ws, "config", "include.path", "../.gitconfig")
				var flags []string
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				r := s.run(append(flags, "--", shellPath, "-c", `if (printf '#!/bin/sh\ntouch "$1"\n' > .husky/post-checkout) 2>/dev/null; then echo HOOK; fi
if (printf '[core]\n\tfsmonitor = "touch x; false"\n' >> .gitconfig) 2>/dev/null; then echo CONFIG; fi
echo done`)...)
				mustSucceed(t, r, "the command")
				if strings.Contains(r.stdout, "HOOK") || strings.Contains(r.stdout, "CONFIG") {
					t.Errorf("the command wrote where the repository's config points\n%v", r)
				}
				wantContent(t, filepath.Join(s.ws, ".gitconfig"), "[user]\n\tname = x\n")
				if _, err := os.Lstat(filepath.Join(s.ws, ".husky", "post-checkout")); err == nil {
					t.Error("a hook appeared in core.hooksPath")
				}
			})
		}
	})
}

// In commit mode, with submodule git dirs already there, one the command adds to
// .git/modules is removed when the sandbox ends (and said so); the existing ones stay.
func TestGitCommitModeNewModuleRemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "base")
		existing := filepath.Join(s.ws, ".git", "modules", "old")
		must(t, os.MkdirAll(existing, 0o755))
		s.chown(filepath.Join(s.ws, ".git", "modules"))
		s.chown(existing)
		r := s.runStatusToStderr("--policy", s.commitPolicy(), "--", shellPath, "-c",
			`mkdir -p .git/modules/sm2/hooks && echo '#!/bin/sh' > .git/modules/sm2/hooks/post-checkout && ln -s / .git/modules/rootlink && echo MADE`)
		mustSucceed(t, r, "the command")
		if !strings.Contains(r.stdout, "MADE") {
			t.Fatalf("the command could not write in .git/modules: the test exercises nothing\n%v", r)
		}
		for _, p := range []string{"sm2", "rootlink"} {
			if _, err := os.Lstat(filepath.Join(s.ws, ".git", "modules", p)); err == nil {
				t.Errorf(".git/modules/%s outlived the sandbox", p)
			}
		}
		if _, err := os.Stat(existing); err != nil {
			t.Errorf("the existing submodule git dir was removed: %v", err)
		}
		if !strings.Contains(r.stderr, "modules/sm2") {
			t.Errorf("the status does not say what was removed:\n%s", r.stderr)
		}
		if _, err := os.Stat("/bin/sh"); err != nil {
			t.Fatal("removing a symlink to / touched /")
		}
	})
}

// In commit mode an unfinished interactive rebase the command leaves (its exec lines
// would run at the user's git rebase --continue) is removed when the sandbox ends.
func TestGitCommitModeRebaseStateRemoved(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "base")
		must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("v2\n"), 0o644))
		s.chown(filepath.Join(s.ws, "tracked.txt"))
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-am", "second")
		pwned := filepath.Join(s.base, "PWNED-rebase")
		r := s.run("--policy", s.commitPolicy(), "--", shellPath, "-c",
			`GIT_SEQUENCE_EDITOR="sed -i '1i break'" git -c user.name=i -c user.email=i@i rebase -q -i --exec "touch $1" HEAD~1 >/dev/null 2>&1; test -d .git/rebase-merge && echo STOPPED`, "_", pwned)
		mustSucceed(t, r, "the command")
		if !strings.Contains(r.stdout, "STOPPED") {
			t.Fatalf("the command could not leave a rebase stopped: the test exercises nothing\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(s.ws, ".git", "rebase-merge")); err == nil {
			t.Error("the command's unfinished rebase outlived the sandbox")
		}
		s.hostGitOut(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "rebase", "--continue")
		if _, err := os.Lstat(pwned); err == nil {
			t.Error("the user's git rebase --continue ran the command's exec line")
		}
	})
}

// In commit mode no launch can leave a submodule git dir of its making anywhere in a git
// dir's modules/ tree, not on the launch after the one that made an empty modules/, not
// in an empty modules/ of the user's, not in a directory between modules/ and a
// submodule git dir with slashes in its name, and not in the main repository's git dir
// of a linked worktree: the user's next git submodule update --init runs no hook of the
// command's (from an attack review: the second launch planted .git/modules/evil).
func TestGitCommitModeModulesTreePlant(t *testing.T) {
	// plant bare-clones a repository into "$1/modules/$2" with a post-checkout hook that
	// touches $3, and commits a .gitmodules entry and a gitlink that name it.
	const plant = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git init -q "$4" && git -C "$4" commit -q --allow-empty -m s || exit 0
mkdir -p "$1/modules/$2" 2>/dev/null && echo MADE
git clone -q --bare "$4" "$1/modules/$2" 2>/dev/null || exit 0
git --git-dir="$1/modules/$2" config core.bare false
printf '#!/bin/sh\ntouch %s\n' "$3" > "$1/modules/$2/hooks/post-checkout" && chmod +x "$1/modules/$2/hooks/post-checkout"
printf '[submodule "%s"]\n\tpath = evil\n\turl = ./evil\n' "$2" > .gitmodules
git add .gitmodules && git update-index --add --cacheinfo 160000,$(git -C "$4" rev-parse HEAD),evil && git commit -qm "add evil" && echo PLANTED`
	layouts := []struct {
		name  string
		setup func(s *sandbox) (gitDir string)
	}{
		{"second-launch", func(s *sandbox) string {
			s.newRepo(s.ws, "base")
			mustSucceed(s.t, s.run("--policy", s.commitPolicy(), "--", "true"), "the first launch")
			return filepath.Join(s.ws, ".git")
		}},
		{"empty-modules", func(s *sandbox) string {
			s.newRepo(s.ws, "base")
			must(s.t, os.Mkdir(filepath.Join(s.ws, ".git", "modules"), 0o755))
			s.chown(filepath.Join(s.ws, ".git", "modules"))
			return filepath.Join(s.ws, ".git")
		}},
		{"worktree", func(s *sandbox) string {
			mainRepo := filepath.Join(s.base, "mainrepo")
			s.newRepo(mainRepo, "main-commit")
			s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtbranch", s.ws)
			mustSucceed(s.t, s.run("--policy", s.commitPolicy(), "--", "true"), "the first launch")
			return filepath.Join(mainRepo, ".git")
		}},
		{"submodule-git-dir", func(s *sandbox) string {
			// a submodule's own modules/ (.git/modules/sub/modules/…), after one launch
			gd := s.newSuperWithSubmodule()
			mustSucceed(s.t, s.run("--policy", s.commitPolicy(), "--", "true"), "the first launch")
			return gd
		}},
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, l := range layouts {
			for _, name := range []string{"evil", "vendor/evil"} {
				s := newSandbox(t, c)
				gitDir := l.setup(s)
				if name == "vendor/evil" { // an existing directory between modules/ and a git dir
					for _, d := range []string{"modules", "modules/vendor"} {
						if _, err := os.Stat(filepath.Join(gitDir, d)); err != nil {
							must(t, os.Mkdir(filepath.Join(gitDir, d), 0o755))
							s.chown(filepath.Join(gitDir, d))
						}
					}
				}
				pwned := filepath.Join(s.base, "PWNED-modules")
				r := s.run("--policy", s.commitPolicy(), "--", shellPath, "-c", plant, "_", gitDir, name, pwned, filepath.Join(s.ws, "src2"))
				mustSucceed(t, r, l.name+" "+name+": the plant")
				if strings.Contains(r.stdout, "MADE") || strings.Contains(r.stdout, "PLANTED") {
					t.Errorf("%s %s: the command made a submodule git dir\n%v", l.name, name, r)
				}
				if _, err := os.Lstat(filepath.Join(gitDir, "modules", name)); err == nil {
					t.Errorf("%s %s: %s/modules/%s outlived the sandbox", l.name, name, gitDir, name)
				}
				out, _ := s.hostGitOut(s.ws, "-c", "protocol.file.allow=always", "submodule", "update", "--init")
				if _, err := os.Lstat(pwned); err == nil {
					t.Errorf("%s %s: the user's git submodule update --init ran the command's hook\n%s", l.name, name, out)
				}
			}
		}
	})
}

// In commit mode an entry of the modules/ tree that is there at launch as a file (a
// stray one, at the top or in a plain directory) and that the command replaces by a
// submodule git dir with a hook is removed when the sandbox ends: an entry is kept by
// what it is (device, inode, type), not by name, and the user's next git submodule
// update --init runs no hook of the command's (from an attack review: review12 F1).
func TestGitCommitModeStrayModulesFileReplaced(t *testing.T) {
	// plant replaces "$1/modules/$2" (a file) by a bare clone with a post-checkout hook
	// that touches $3, and commits a .gitmodules entry and a gitlink that name it.
	const plant = `export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
git init -q "$4" && git -C "$4" commit -q --allow-empty -m s || exit 0
rm -f "$1/modules/$2" && git clone -q --bare "$4" "$1/modules/$2" 2>/dev/null || exit 0
git --git-dir="$1/modules/$2" config core.bare false
printf '#!/bin/sh\ntouch %s\n' "$3" > "$1/modules/$2/hooks/post-checkout" && chmod +x "$1/modules/$2/hooks/post-checkout"
printf '[submodule "%s"]\n\tpath = evil\n\turl = ./evil\n' "$2" > .gitmodules
git add .gitmodules && git update-index --add --cacheinfo 160000,$(git -C "$4" rev-parse HEAD),evil && git commit -qm "add evil" && echo PLANTED`
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, name := range []string{"README", "plain/x"} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "base")
			gitDir := filepath.Join(s.ws, ".git")
			stray := filepath.Join(gitDir, "modules", name)
			for d := filepath.Dir(stray); d != gitDir; d = filepath.Dir(d) {
				must(t, os.MkdirAll(d, 0o755))
				s.chown(d)
			}
			must(t, os.WriteFile(stray, []byte("stray\n"), 0o644))
			s.chown(stray)
			pwned := filepath.Join(s.base, "PWNED-stray")
			r := s.runStatusToStderr("--policy", s.commitPolicy(), "--", shellPath, "-c", plant, "_", gitDir, name, pwned, filepath.Join(s.ws, "src2"))
			mustSucceed(t, r, name+": the plant")
			if !strings.Contains(r.stdout, "PLANTED") {
				t.Fatalf("%s: the command could not replace the stray file: the test exercises nothing\n%v", name, r)
			}
			if fi, err := os.Lstat(stray); err == nil && fi.IsDir() {
				t.Errorf("%s: the command's git dir in place of the stray file outlived the sandbox", name)
			}
			if !strings.Contains(r.stderr, "created (or replaced) "+stray) {
				t.Errorf("%s: the status does not say what was removed:\n%s", name, r.stderr)
			}
			out, _ := s.hostGitOut(s.ws, "-c", "protocol.file.allow=always", "submodule", "update", "--init")
			if _, err := os.Lstat(pwned); err == nil {
				t.Errorf("%s: the user's git submodule update --init ran the command's hook\n%s", name, out)
			}
		}
	})
}
