package integration

import (
	"os"
	"path/filepath"
	"strings"
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

// F1, F9, F2: the hidden-local-remote note after a failed git fetch. A remote name with
// terminal escapes and a path with a newline (from a config the command wrote in an
// earlier run) reach the caller's terminal quoted; a remote at a credential path
// (~/.ssh, a repository there) and one where no repository is are never advised; and a
// .git file the command wrote, naming a host repository outside the sandbox, is not
// followed to print that repository's remotes.
func TestGitReview30RemoteNote(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	home := filepath.Join(s.base, "home")
	must(t, os.MkdirAll(home, 0o755))
	src := filepath.Join(s.base, "src")
	s.newRepo(src, "src")
	nl := filepath.Join(s.base, "new\nline.git")
	key := filepath.Join(home, ".ssh")
	s.hostGit(s.base, "clone", "-q", "--bare", src, nl)
	s.hostGit(s.base, "clone", "-q", "--bare", src, key)
	notRepo := filepath.Join(s.base, "notrepo")
	must(t, os.Mkdir(notRepo, 0o755))
	s.writeWS("cfg.txt", "[remote \"\x1b[31mEVIL\x1b]0;pwned\a\"]\n\turl = \""+filepath.Join(s.base, `new\nline.git`)+"\"\n"+
		"[remote \"key\"]\n\turl = "+key+"\n[remote \"none\"]\n\turl = "+notRepo+"\n", 0o644)
	r := s.runHome(home, nil, "git init -q . && cat cfg.txt >> .git/config")
	mustSucceed(t, r, "the command's git init")
	r = s.runHome(home, nil, "git fetch -q --all; exit 1")
	if strings.ContainsAny(r.stderr, "\x1b\a") {
		t.Errorf("a raw control byte reached the caller's stderr: %q", r.stderr)
	}
	for _, w := range []string{`"\x1b[31mEVIL\x1b]0;pwned\a" ("` + s.base + `/new\nline.git")`, `--ro "` + s.base + `/new\nline.git"`} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("the note lacks %s\n%v", w, r)
		}
	}
	for _, bad := range []string{"(" + key + ")", "--ro " + key, "(" + notRepo + ")", "--ro " + notRepo} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("the note advises %s (a credential path, or no repository)\n%v", bad, r)
		}
	}

	// F2: a .git file the command writes, naming a host repository it does not see
	s2 := newSandbox(t, rootCaller)
	secret := filepath.Join(s2.base, "secret")
	s2.newRepo(secret, "secret")
	s2.hostGit(s2.base, "clone", "-q", "--bare", secret, filepath.Join(s2.base, "private-mirror.git"))
	s2.hostGit(secret, "remote", "add", "topsecret-name", filepath.Join(s2.base, "private-mirror.git"))
	r = s2.sh(nil, `echo "gitdir: $1/.git" > .git`, secret)
	mustSucceed(t, r, "the command's .git file")
	r = s2.sh(nil, "git fetch -q; exit 1")
	if strings.Contains(r.stderr, "topsecret-name") || strings.Contains(r.stderr, "private-mirror") {
		t.Errorf("the note read and printed the remotes of a repository a sandbox-written .git file names\n%v", r)
	}
}

// F8: a local remote the host adds to the repository's config while a session runs:
// the session's next request is refused (its guard of local remotes is the start's),
// so the command cannot plant the remote's repository; a session started after the
// change guards it.
func TestGitReview30SessionConfigChange(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		out := marks(e.sandbox)
		e.newRepo(e.ws, "ws")
		e.start("c")
		mustSucceed(t, e.in("c", nil, "true"), "a request before the change")
		e.hostGit(e.ws, "remote", "add", "up", "vend/up.git")
		plant := "set -- " + out + " " + e.ws + "/vend/up.git; " + plantRepos
		r := e.in("c", nil, plant)
		if r.code != 125 || !strings.Contains(r.stderr, "changed after") {
			t.Errorf("a request after the host added a local remote: want refused (125, \"changed after\")\n%v", r)
		}
		hostPushes(t, e.sandbox, out, r, []string{e.ws, "push", "-q", "up", "HEAD:refs/heads/x"})
		e.start("d")
		r = e.in("d", nil, plant)
		mustSucceed(t, r, "a request of a session started after the change")
		hostPushes(t, e.sandbox, out, r, []string{e.ws, "push", "-q", "up", "HEAD:refs/heads/y"})
	})
}
