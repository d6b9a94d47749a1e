package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// Attack review 30's local-remote findings (F4-F7), proved from the host: the command
// makes a repository (or a hooks directory) with hooks writing a marker where the
// host's git push or update-ref would run them; after the run the host runs that git
// command and no marker may appear.

// plantRepos is a script that, for each path after the marker directory, makes a bare
// repository there (a path ending in "hooks": that directory) whose pre-receive,
// post-receive and reference-transaction hooks write the marker <out>/<n>.
const plantRepos = `out=$1; shift; n=0
for d in "$@"; do n=$((n+1))
case $d in *hooks) mkdir -p "$d" 2>/dev/null || continue ;; *) git init -q --bare "$d" 2>/dev/null || continue; d=$d/hooks ;; esac
for h in pre-receive post-receive reference-transaction; do printf '#!/bin/sh\necho PWNED > %s/%s\n' "$out" $n > "$d/$h" && chmod +x "$d/$h"; done 2>/dev/null && echo "PLANTED $d"
done; true`

// hostPushes runs each host git command (dir, args) and then fails the test for each
// marker a planted hook wrote; the commands' own failures (a planted repository
// removed after the run) are expected.
func hostPushes(t *testing.T, s *sandbox, out string, r result, cmds ...[]string) {
	t.Helper()
	for _, c := range cmds {
		s.hostGitOut(c[0], c[1:]...) //nolint:errcheck // a removed remote fails the push
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		t.Errorf("the host's git ran a hook the command planted (marker %s)\n%v", e.Name(), r)
	}
}

// F6: the checkouts a repository's records name (linked worktrees under a directory
// the scan skips and deeper than it goes; a submodule deeper than it goes) get the
// local-remote guard: a relative remote resolves from the checkout git runs in.
func TestGitReview30RecordCheckoutRemotes(t *testing.T) {
	gitModes(t, func(t *testing.T, s *sandbox, flags []string) {
		out := marks(s)
		main := filepath.Join(s.ws, "main")
		s.newRepo(main, "main")
		src := filepath.Join(s.base, "subsrc")
		s.newRepo(src, "sub")
		s.hostGit(main, "remote", "add", "up", "vend/up.git")
		s.hostGit(main, "worktree", "add", "-q", "../node_modules/x/wt")
		s.hostGit(main, "worktree", "add", "-q", "../a/b/c/d/wt2")
		s.hostGit(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "a/b/c/d/sm")
		sm := filepath.Join(main, "a/b/c/d/sm")
		s.hostGit(sm, "remote", "add", "up", "vend/up.git")
		wt, wt2 := filepath.Join(s.ws, "node_modules/x/wt"), filepath.Join(s.ws, "a/b/c/d/wt2")
		r := s.sh(flags, plantRepos, out, wt+"/vend/up.git", wt2+"/vend/up.git", sm+"/vend/up.git")
		mustSucceed(t, r, "the command")
		hostPushes(t, s, out, r,
			[]string{wt, "push", "-q", "up", "HEAD:refs/heads/x1"},
			[]string{wt2, "push", "-q", "up", "HEAD:refs/heads/x2"},
			[]string{sm, "push", "-q", "up", "HEAD:refs/heads/x3"})
	})
}

// F7: a bare repository the scan finds: its relative core.hooksPath and its relative
// local remote, both taken from inside it, are guarded.
func TestGitReview30ScannedBareConfig(t *testing.T) {
	gitModes(t, func(t *testing.T, s *sandbox, flags []string) {
		out := marks(s)
		src := filepath.Join(s.base, "src")
		s.newRepo(src, "src")
		s.hostGit(s.ws, "clone", "-q", "--bare", src, "b.git")
		b := filepath.Join(s.ws, "b.git")
		s.hostGit(b, "config", "core.hooksPath", "../myhooks")
		s.hostGit(b, "remote", "add", "up", "../vend/up.git")
		r := s.sh(flags, plantRepos, out, s.ws+"/myhooks", s.ws+"/vend/up.git")
		mustSucceed(t, r, "the command")
		hostPushes(t, s, out, r,
			[]string{b, "update-ref", "refs/heads/y", "main"},
			[]string{b, "-c", "core.hooksPath=hooks", "push", "-q", "up", "main:refs/heads/x"})
	})
}

// F5: the legacy remotes/NAME and branches/NAME files git still reads for a remote its
// config does not name.
func TestGitReview30LegacyRemoteFiles(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		out := marks(s)
		repo := filepath.Join(s.ws, "r")
		s.newRepo(repo, "r")
		for rel, text := range map[string]string{"remotes/up": "URL: vend/up.git\nPull: refs/heads/main:refs/heads/main\n", "branches/br": "vend/br.git#main\n"} {
			p := filepath.Join(repo, ".git", rel)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			s.chown(filepath.Dir(p))
			must(t, os.WriteFile(p, []byte(text), 0o644))
			s.chown(p)
		}
		r := s.sh(nil, plantRepos, out, repo+"/vend/up.git", repo+"/vend/br.git")
		mustSucceed(t, r, "the command")
		hostPushes(t, s, out, r,
			[]string{repo, "push", "-q", "up", "HEAD:refs/heads/x"},
			[]string{repo, "push", "-q", "br", "HEAD:refs/heads/main"})
	})
}

// F4: a plain local remote path with a "[...]" host part: git opens it from the "]"
// (connect.c host_end), and that repository is the one guarded.
func TestGitReview30BracketRemotePath(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		out := marks(s)
		repo := filepath.Join(s.ws, "r")
		s.newRepo(repo, "r")
		s.hostGit(repo, "remote", "add", "up", "[vendor]/up.git")
		s.hostGit(repo, "remote", "add", "up2", "me@[h]/up2.git")
		r := s.sh(nil, plantRepos, out, repo+"/]/up.git", repo+"/]/up2.git")
		mustSucceed(t, r, "the command")
		hostPushes(t, s, out, r,
			[]string{repo, "push", "-q", "up", "HEAD:refs/heads/x"},
			[]string{repo, "push", "-q", "up2", "HEAD:refs/heads/x"})
	})
}
