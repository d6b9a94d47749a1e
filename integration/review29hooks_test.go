package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Attack review 29's hook and command-config findings, proved from the host as review
// 27's are (plantScript, hostProgram, wantRan, noMarker): each plant would create a
// marker outside the workspace on the host's next git command.

// gitModes runs f under the default policy (git: readonly) and under git: commit, for
// each caller (root, and uid 65534 via setpriv).
func gitModes(t *testing.T, f func(t *testing.T, s *sandbox, flags []string)) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, m := range []string{"readonly", "commit"} {
			t.Run(m, func(t *testing.T) {
				s := newSandbox(t, c)
				var flags []string
				if m == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				f(t, s, flags)
			})
		}
	})
}

// marks is a directory outside the workspace that the caller's host git can write
// markers in (uid 65534 cannot write the test's base).
func marks(s *sandbox) string {
	d := filepath.Join(s.base, "marks")
	must(s.t, os.MkdirAll(d, 0o755))
	s.chown(d)
	return d
}

// F12: .git/hooks/pre-commit -> ../../scripts/pre-commit (the documented pattern): the
// command must not rewrite the script the host's git commit runs.
func TestGitReview29HookSymlink(t *testing.T) {
	gitModes(t, func(t *testing.T, s *sandbox, flags []string) {
		s.newRepo(s.ws, "base")
		ran, pwned := filepath.Join(marks(s), "ran"), filepath.Join(marks(s), "PWNED")
		s.hostProgram(filepath.Join(s.ws, "scripts/pre-commit"), ran)
		s.chown(filepath.Join(s.ws, "scripts"))
		s.chown(filepath.Join(s.ws, "scripts/pre-commit")) // the caller's own: writable inside but for the guard
		must(t, os.Symlink("../../scripts/pre-commit", filepath.Join(s.ws, ".git/hooks/pre-commit")))
		r := s.sh(flags, plantScript+`plant scripts/pre-commit "$1"`, pwned)
		mustSucceed(t, r, "the command")
		noWrote(t, r)
		s.hostCommit(s.ws)
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git commit")
	})
}

// F12: the hooks directory itself a symlink into the tree (readonly mode; commit mode
// refuses a symlink in its writable git dir).
func TestGitReview29HooksDirSymlink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "githooks/pre-commit"), ran)
	must(t, os.RemoveAll(filepath.Join(s.ws, ".git/hooks")))
	must(t, os.Symlink("../githooks", filepath.Join(s.ws, ".git/hooks")))
	r := s.sh(nil, plantScript+`plant githooks/pre-commit "$1"; (echo x > githooks/post-commit) 2>/dev/null && echo WROTE-new; true`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(s.ws)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F12: core.hooksPath in the tree whose entry links to a script elsewhere in the tree.
func TestGitReview29HooksPathEntryLink(t *testing.T) {
	gitModes(t, func(t *testing.T, s *sandbox, flags []string) {
		s.newRepo(s.ws, "base")
		s.hostGit(s.ws, "config", "core.hooksPath", ".githooks")
		ran, pwned := filepath.Join(marks(s), "ran"), filepath.Join(marks(s), "PWNED")
		s.hostProgram(filepath.Join(s.ws, "scripts/lint.sh"), ran)
		s.chown(filepath.Join(s.ws, "scripts"))
		s.chown(filepath.Join(s.ws, "scripts/lint.sh"))
		must(t, os.MkdirAll(filepath.Join(s.ws, ".githooks"), 0o755))
		must(t, os.Symlink("../scripts/lint.sh", filepath.Join(s.ws, ".githooks/pre-commit")))
		r := s.sh(flags, plantScript+`plant scripts/lint.sh "$1"`, pwned)
		mustSucceed(t, r, "the command")
		noWrote(t, r)
		s.hostCommit(s.ws)
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git commit")
	})
}

// F12: a hook hard-linked to a tracked script: a read-only bind of one name does not
// protect the inode, so the launch is refused naming the hook.
func TestGitReview29HookHardLinkRefused(t *testing.T) {
	gitModes(t, func(t *testing.T, s *sandbox, flags []string) {
		s.newRepo(s.ws, "base")
		s.hostProgram(filepath.Join(s.ws, "scripts/pre-commit"), filepath.Join(s.base, "ran"))
		must(t, os.Link(filepath.Join(s.ws, "scripts/pre-commit"), filepath.Join(s.ws, ".git/hooks/pre-commit")))
		r := s.sh(flags, `echo RAN`)
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "hard link") || !strings.Contains(r.stderr, "pre-commit") {
			t.Errorf("a hook with a second name in the workspace: want 125 naming it\n%v", r)
		}
	})
}

// F12: a hooks directory outside the workspace whose entries are per-file links into it
// (GNU stow without folding): ~/.githooks/pre-commit -> ../ws/githooks/pre-commit.
func TestGitReview29StowHookEntry(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	other := filepath.Join(s.base, "other")
	s.newRepo(other, "base")
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[core]\n\thooksPath = ~/.githooks\n"), 0o644))
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "githooks/pre-commit"), ran)
	must(t, os.MkdirAll(filepath.Join(s.base, ".githooks"), 0o755))
	must(t, os.Symlink(filepath.Join("..", filepath.Base(s.ws), "githooks/pre-commit"), filepath.Join(s.base, ".githooks/pre-commit")))
	r := s.runHome(s.base, nil, plantScript+`plant githooks/pre-commit `+pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(other)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F8: ~/.githooks -> ws/sub/../../shared-hooks enters the workspace and leaves it with
// "..": the command could make sub a symlink and move where it lands: refused.
func TestGitReview29DotDotThroughWorkspaceRefused(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	must(t, os.MkdirAll(filepath.Join(s.ws, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(s.base, "shared-hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[core]\n\thooksPath = ~/.githooks\n"), 0o644))
	must(t, os.Symlink(filepath.Base(s.ws)+"/sub/../../shared-hooks", filepath.Join(s.base, ".githooks")))
	r := s.runHome(s.base, nil, `echo RAN`)
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, `".."`) {
		t.Errorf("a hooks path that leaves the workspace with ..: want 125 naming it\n%v", r)
	}
}

// F3: a relative core.hooksPath is taken from $GIT_DIR by push hooks: the command
// (git: commit) must not plant .git/.githooks/pre-receive for the host's git push.
func TestGitReview29HooksPathFromGitDir(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "core.hooksPath", ".githooks")
	must(t, os.MkdirAll(filepath.Join(s.ws, ".githooks"), 0o755))
	other := filepath.Join(s.base, "other")
	s.hostGit(s.base, "clone", "-q", s.ws, other)
	pwned := filepath.Join(s.base, "PWNED")
	r := s.sh([]string{"--policy", s.commitPolicy()}, plantScript+`mkdir -p .git/.githooks 2>/dev/null; plant .git/.githooks/pre-receive "$1"; chmod +x .git/.githooks/pre-receive 2>/dev/null; true`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(other)
	s.hostGit(other, "push", "-q", "origin", "HEAD:feature")
	noMarker(t, pwned, "the host's git push into the workspace")
}

// F1: command words without a slash that name a workspace file: `!sh lint.sh`,
// textconv `python3 conv.py`-style (here sh), make -f, sh < x.
func TestGitReview29BareScriptWords(t *testing.T) {
	for _, c := range []struct{ name, alias, script string }{
		{"interpreter", "!sh lint.sh", "lint.sh"},
		{"redirect", "!sh < lint.sh", "lint.sh"},
		{"make-f", "!make -s -f ci.mk", "ci.mk"},
		{"cd", "!cd tools && sh lint.sh", "tools/lint.sh"},
	} {
		t.Run(c.name, func(t *testing.T) {
			requireBinary(t)
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "base")
			s.hostGit(s.ws, "config", "alias.lint", c.alias)
			ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
			body := "#!/bin/sh\ntouch " + ran + "\n"
			plant := `plant ` + c.script + ` "$1"`
			if c.name == "make-f" {
				if _, err := os.Stat("/usr/bin/make"); err != nil {
					t.Skip("no make")
				}
				body = "all:\n\ttouch " + ran + "\n"
				plant = `(printf 'all:\n\ttouch %s\n' "$1" > ci.mk) 2>/dev/null && echo WROTE-ci.mk; true`
			}
			s.writeWS(c.script, body, 0o644)
			r := s.sh(nil, plantScript+plant, pwned)
			mustSucceed(t, r, "the command")
			noWrote(t, r)
			s.hostGit(s.ws, "lint")
			wantRan(t, ran)
			noMarker(t, pwned, "the host's git lint")
		})
	}
}

// F1: a missing script an interpreter would run, and a glob of scripts, are refused.
func TestGitReview29BareScriptRefused(t *testing.T) {
	for _, alias := range []string{"!sh missing.sh", "!for f in checks/*.sh; do sh $f; done", "!python3 -m tools.lint"} {
		requireBinary(t)
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		must(t, os.MkdirAll(filepath.Join(s.ws, "tools"), 0o755))
		s.hostGit(s.ws, "config", "alias.lint", alias)
		r := s.sh(nil, `echo RAN`)
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "alias.lint") {
			t.Errorf("alias %q: want 125 naming the setting\n%v", alias, r)
		}
	}
}

// F10: an alias without "!" carrying -c diff.external=tools/difftool.sh, and a shell
// alias's git -c core.hooksPath=tools/hooks.
func TestGitReview29AliasConfigOption(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "alias.dx", "-c diff.external=tools/difftool.sh diff")
	s.hostGit(s.ws, "config", "alias.ci", "!git -c core.hooksPath=tools/hooks commit")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	ran2 := filepath.Join(s.base, "ran2")
	s.hostProgram(filepath.Join(s.ws, "tools/difftool.sh"), ran)
	s.hostProgram(filepath.Join(s.ws, "tools/hooks/pre-commit"), ran2)
	r := s.sh(nil, plantScript+`plant tools/difftool.sh "$1"; plant tools/hooks/pre-commit "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("v2\n"), 0o644))
	s.hostGitOut(s.ws, "dx")
	s.hostGitOut(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "ci", "-q", "--allow-empty", "-m", "x")
	wantRan(t, ran)
	wantRan(t, ran2)
	noMarker(t, pwned, "the host's git dx / ci")
}

// F11: core.sshCommand = ssh -o ProxyCommand=./tools/proxy: the value part is guarded
// (on main the word was taken as one path "ProxyCommand=./tools/proxy": unguarded; and a
// ".sh" value refused as a missing file).
func TestGitReview29KeyValueWord(t *testing.T) {
	requireBinary(t)
	if _, err := os.Stat("/usr/bin/ssh"); err != nil {
		t.Skip("no ssh")
	}
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "core.sshCommand", "ssh -o ProxyCommand=./tools/proxy -o LocalCommand=./tools/local.sh")
	s.hostGit(s.ws, "remote", "add", "origin", "ssh://git@example.invalid/x.git")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "tools/proxy"), ran)
	s.hostProgram(filepath.Join(s.ws, "tools/local.sh"), filepath.Join(s.base, "ran2"))
	r := s.sh(nil, plantScript+`plant tools/proxy "$1"; plant tools/local.sh "$1"`, pwned)
	mustSucceed(t, r, "the command (a valid ssh command is not refused)")
	noWrote(t, r)
	s.hostGitOut(s.ws, "fetch", "-q", "origin")
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git fetch")
}

// F5: commit.template that is a symlink in the workspace is refused (the command could
// point it at any host file, which git commit copies into .git/COMMIT_EDITMSG); a
// regular one is kept read-only.
func TestGitReview29CommitTemplate(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.writeWS("tools/gitmessage.txt", "subject\n", 0o644)
	must(t, os.Symlink("tools/gitmessage.txt", filepath.Join(s.ws, ".gitmessage")))
	s.hostGit(s.ws, "config", "commit.template", ".gitmessage")
	r := s.sh(nil, `echo RAN`)
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "commit.template") {
		t.Errorf("a commit.template symlink in the workspace: want 125 naming it\n%v", r)
	}
	s.hostGit(s.ws, "config", "commit.template", "tools/gitmessage.txt")
	r = s.sh(nil, `(echo evil > tools/gitmessage.txt) 2>/dev/null && echo WROTE; (ln -sf /etc/shadow tools/gitmessage.txt) 2>/dev/null && echo WROTE-link; true`)
	mustSucceed(t, r, "a regular template")
	noWrote(t, r)
}

// F18: core.attributesFile that is a FIFO in the workspace: refused (the host's git
// status would block on it).
func TestGitReview29AttributesFifoRefused(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "core.attributesFile", ".attrs-local")
	must(t, syscall.Mkfifo(filepath.Join(s.ws, ".attrs-local"), 0o644))
	r := s.sh(nil, `echo RAN`)
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "FIFO") {
		t.Errorf("a FIFO attributes file: want 125 naming it\n%v", r)
	}
}

// F18: a relative include in a global config reached through a link is taken from the
// link's directory, as git does (~/.gitconfig -> ws/x/gitconfig, path =
// .gitconfig.local: ~/.gitconfig.local, here a link to ws/local.inc): that file is kept
// read-only (on main the guard looked for ws/x/.gitconfig.local and refused it missing).
func TestGitReview29GlobalIncludeThroughLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	other := filepath.Join(s.base, "other")
	s.newRepo(other, "base")
	s.writeWS("x/gitconfig", "[include]\n\tpath = .gitconfig.local\n", 0o644)
	s.writeWS("local.inc", "[user]\n\tname = d\n", 0o644)
	must(t, os.Symlink(filepath.Base(s.ws)+"/x/gitconfig", filepath.Join(s.base, ".gitconfig")))
	must(t, os.Symlink(filepath.Base(s.ws)+"/local.inc", filepath.Join(s.base, ".gitconfig.local")))
	pwned := filepath.Join(s.base, "PWNED")
	r := s.runHome(s.base, nil, `(printf '[core]\n\tfsmonitor = "touch `+pwned+`; false"\n' >> local.inc) 2>/dev/null && echo WROTE-local; true`)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGitOut(other, "status")
	noMarker(t, pwned, "the host's git status")
}

// F12: an enclosing repository's hook that links into the workspace (workspace
// enc/ws, enc/.git/hooks/pre-commit -> ../../ws/scripts/pre-commit).
func TestGitReview29EnclosingHookLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	enc := filepath.Join(s.ws, "enc")
	s.newRepo(enc, "enc")
	ws := filepath.Join(enc, "ws")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(ws, "scripts/pre-commit"), ran)
	must(t, os.Symlink("../../ws/scripts/pre-commit", filepath.Join(enc, ".git/hooks/pre-commit")))
	ctx := s.limitCtx(runLimit)
	cmd := s.rawCommand(ctx, "exec", "--workspace", ws, "--", shellPath, "-c", plantScript+`cd "$1" && plant scripts/pre-commit "$2"`, "_", ws, pwned)
	r := s.runCmd(ctx, cmd)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(enc)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit in the enclosing repository")
}

// F12: init.templateDir outside the workspace whose hooks are per-file links into it:
// git clone copies the link, and the clone's post-checkout runs the workspace file.
func TestGitReview29TemplateHookLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[init]\n\ttemplateDir = ~/tpl\n"), 0o644))
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "githooks/post-checkout"), ran)
	must(t, os.MkdirAll(filepath.Join(s.base, "tpl/hooks"), 0o755))
	must(t, os.Symlink(filepath.Join(s.ws, "githooks/post-checkout"), filepath.Join(s.base, "tpl/hooks/post-checkout")))
	r := s.runHome(s.base, nil, plantScript+`plant githooks/post-checkout `+pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGit(s.base, "clone", "-q", s.ws, filepath.Join(s.base, "clone"))
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git clone")
}
