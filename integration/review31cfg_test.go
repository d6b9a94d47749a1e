package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Attack review 31's config-guard findings, proved from the host as review 27's are:
// each plant would create a marker outside the workspace on the host's next git command.

// linkedWorkspace makes s.ws a linked worktree of a repository outside it (the agent
// worktree layout), after setup has configured the main repository; it returns the
// main repository's working tree.
func linkedWorkspace(s *sandbox, setup func(mainRepo string)) string {
	s.t.Helper()
	mainRepo := filepath.Join(s.base, "mainrepo")
	s.newRepo(mainRepo, "base")
	setup(mainRepo)
	must(s.t, os.RemoveAll(s.ws))
	s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "agent", s.ws)
	return mainRepo
}

// F13: a relative core.hooksPath is taken from $GIT_DIR by push hooks; in a linked
// worktree under git: commit, $GIT_DIR of a push into the main repository is the common
// dir, bound read-write: the command must not plant <common>/.githooks/pre-receive.
func TestGitReview31CommonDirHooksPath(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	mainRepo := linkedWorkspace(s, func(m string) {
		s.hostGit(m, "config", "core.hooksPath", ".githooks")
		must(t, os.MkdirAll(filepath.Join(m, ".githooks"), 0o755))
	})
	other := filepath.Join(s.base, "other")
	s.hostGit(s.base, "clone", "-q", mainRepo, other)
	pwned := filepath.Join(s.base, "PWNED")
	r := s.sh([]string{"--policy", s.commitPolicy()}, plantScript+`gd=$(git rev-parse --git-common-dir) || exit 1
mkdir -p "$gd/.githooks" 2>/dev/null
for h in pre-receive update post-receive; do plant "$gd/.githooks/$h" "$1"; chmod +x "$gd/.githooks/$h" 2>/dev/null; done
git `+gitID+` commit -q --allow-empty -m inside && echo COMMITTED`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	wantOut(t, r, "COMMITTED")
	s.hostCommit(other)
	s.hostGit(other, "push", "-q", "origin", "HEAD:feature")
	noMarker(t, pwned, "the host's git push into the main repository")
}

// F13: a config file the main repository includes by a relative path (.git/extra.cfg)
// lies in the common dir: the command must not add core.fsmonitor to it.
func TestGitReview31CommonDirInclude(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	mainRepo := linkedWorkspace(s, func(m string) {
		must(t, os.WriteFile(filepath.Join(m, ".git/extra.cfg"), []byte("[color]\n\tui = auto\n"), 0o644))
		s.hostGit(m, "config", "include.path", "extra.cfg")
	})
	pwned := filepath.Join(s.base, "PWNED")
	r := s.sh([]string{"--policy", s.commitPolicy()}, `gd=$(git rev-parse --git-common-dir) || exit 1
(printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$1" >> "$gd/extra.cfg") 2>/dev/null && echo WROTE-extra.cfg
git `+gitID+` commit -q --allow-empty -m inside && echo COMMITTED`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	wantOut(t, r, "COMMITTED")
	s.hostGit(mainRepo, "status", "--short")
	noMarker(t, pwned, "the host's git status in the main repository")
}

// wantOut fails the test when the command's stdout lacks want (the run did not do
// what the test needs of it).
func wantOut(t *testing.T, r result, want string) {
	t.Helper()
	if !strings.Contains(r.stdout, want) {
		t.Errorf("want %q in the command's output:\n%v", want, r)
	}
}

// F9: tar.<format>.command (git-archive(1)) naming a workspace script, by path and as
// an interpreter's script word: the host's git archive --format=tgz runs it.
func TestGitReview31TarCommand(t *testing.T) {
	for _, c := range []struct{ name, value string }{
		{"path", "./compress.sh"},
		{"word", "sh compress.sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireBinary(t)
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "base")
			ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
			s.writeWS("compress.sh", "#!/bin/sh\ntouch "+ran+"\nexec gzip -cn\n", 0o755)
			s.hostGit(s.ws, "config", "tar.tgz.command", c.value)
			r := s.sh(nil, plantScript+`plant compress.sh "$1"`, pwned)
			mustSucceed(t, r, "the command")
			noWrote(t, r)
			s.hostGit(s.ws, "archive", "--format=tgz", "-o", filepath.Join(s.base, "out.tgz"), "HEAD")
			wantRan(t, ran)
			noMarker(t, pwned, "the host's git archive --format=tgz")
		})
	}
}

// F10: format.signatureFile is copied into every patch git format-patch writes: a
// signature the command relinks to a host file must not bring that file's text in.
func TestGitReview31SignatureFile(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	secret := filepath.Join(s.base, "secret.txt")
	must(t, os.WriteFile(secret, []byte("HOST-SECRET-"+s.id+"\n"), 0o600))
	s.writeWS(".signature", "a signature\n", 0o644)
	s.hostGit(s.ws, "config", "format.signatureFile", ".signature")
	r := s.sh(nil, `(rm -f .signature && ln -s "$1" .signature) 2>/dev/null && echo WROTE-.signature; true`, secret)
	if r.code != 0 && r.code != 125 {
		t.Fatalf("the command: want 0, or 125 refusing the setting\n%v", r)
	}
	noWrote(t, r)
	out, err := s.hostGitOut(s.ws, "format-patch", "-1", "--stdout")
	if err != nil {
		t.Fatalf("host git format-patch: %v\n%s", err, out)
	}
	if strings.Contains(out, "HOST-SECRET") || !strings.Contains(out, "a signature") {
		t.Errorf("the host's patch does not carry the workspace's signature (or carries the host file):\n%s", out)
	}
}

// F5: an interpreter's script word naming a directory (python3 tool runs
// tool/__main__.py, python3 . the top's): the launch is refused (125) before the
// command runs, so it cannot rewrite what the host's git alias runs.
func TestGitReview31ScriptDirectoryRefused(t *testing.T) {
	for _, c := range []struct{ name, alias, main string }{
		{"dir", "!python3 tool", "tool/__main__.py"},
		{"dot", "!python3 .", "__main__.py"},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireBinary(t)
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "base")
			s.writeWS(c.main, "print('ok')\n", 0o644)
			s.hostGit(s.ws, "config", "alias.l", c.alias)
			r := s.sh(nil, `(echo 'open("/x","w")' > `+c.main+`) 2>/dev/null && echo WROTE-main; echo RAN`)
			if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "as its script") {
				t.Errorf("a script directory: want 125 naming it\n%v", r)
			}
		})
	}
}

// The credential-store helper's --file names data it creates on the first store: a
// missing one is no reason to refuse the launch (review 31's false 125).
func TestGitReview31CredentialStoreFileMissing(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "credential.helper", "store --file .creds")
	r := s.sh(nil, `echo RAN`)
	mustSucceed(t, r, "a launch with credential.helper store --file .creds missing")
	wantOut(t, r, "RAN")
}

// F12: husky v9's layout (core.hooksPath = .husky/_, made by npm install's prepare
// step, missing in a fresh checkout): the directory stays read-only inside (the
// command cannot plant a hook there), and the launch says so, naming it and what to
// run on the host, rather than leaving the host's hooks silently off.
func TestGitReview31HuskyHooksNote(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.writeWS(".husky/pre-commit", "touch never\n", 0o755)
	s.hostGit(s.ws, "config", "core.hooksPath", ".husky/_")
	pwned := filepath.Join(s.base, "PWNED")
	r := s.sh(nil, plantScript+`mkdir -p .husky/_ 2>/dev/null; plant .husky/_/pre-commit "$1"; chmod +x .husky/_/pre-commit 2>/dev/null; true`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	if !strings.Contains(r.stderr, ".husky/_") || !strings.Contains(r.stderr, "npx husky") {
		t.Errorf("no note naming the hooks directory created empty and the installer to run:\n%v", r)
	}
	s.hostCommit(s.ws)
	noMarker(t, pwned, "the host's git commit")
}
