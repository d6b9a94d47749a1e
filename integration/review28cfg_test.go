package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review 28's config findings, proved from the host as review 27's are (plantScript,
// hostProgram, wantRan, noMarker): each planted script would create a marker outside
// the workspace on the host's next git command.

// F1: the caller's init.templateDir names a template in the workspace (pre-commit's
// init-templatedir setup): git copies its hooks into every new clone and runs them.
func TestGitReview28TemplateDir(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[init]\n\ttemplateDir = ~/"+filepath.Base(s.ws)+"/git-template\n"), 0o644))
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "git-template/hooks/post-checkout"), ran)
	r := s.runHome(s.base, nil, plantScript+`plant git-template/hooks/post-checkout `+pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGit(s.base, "clone", "-q", s.ws, filepath.Join(s.base, "clone"))
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git clone")
}

// F2: trailer.<token>.cmd names a script in the repository (git interpret-trailers runs it).
func TestGitReview28TrailerCmd(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "trailer.sign.cmd", "scripts/sign.sh")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "scripts/sign.sh"), ran)
	r := s.sh(nil, plantScript+`plant scripts/sign.sh "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "y", "--trailer", "sign=z")
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit --trailer")
}

// F5: the caller's ~/.gitconfig is a symlink into the workspace (a dotfiles/stow
// layout): the command must not rewrite the file the host's git reads everywhere.
func TestGitReview28GlobalConfigLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	other := filepath.Join(s.base, "other")
	s.newRepo(other, "base")
	s.writeWS("gitconfig", "[user]\n\tname = d\n", 0o644)
	must(t, os.Symlink(filepath.Join(filepath.Base(s.ws), "gitconfig"), filepath.Join(s.base, ".gitconfig")))
	pwned := filepath.Join(s.base, "PWNED")
	r := s.runHome(s.base, nil, `(printf '[core]\n\tfsmonitor = "touch `+pwned+`; false"\n' >> gitconfig) 2>/dev/null && echo WROTE-config; true`)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGitOut(other, "status")
	noMarker(t, pwned, "the host's git status")
}

// F5: core.hooksPath = ~/.githooks, a symlink into the workspace (stow).
func TestGitReview28HooksPathLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	other := filepath.Join(s.base, "other")
	s.newRepo(other, "base")
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[core]\n\thooksPath = ~/.githooks\n"), 0o644))
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "githooks/pre-commit"), ran)
	must(t, os.Symlink(filepath.Join(filepath.Base(s.ws), "githooks"), filepath.Join(s.base, ".githooks")))
	r := s.runHome(s.base, nil, plantScript+`plant githooks/pre-commit `+pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(other)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F5: a symlink on the way that lies in the workspace could be repointed: refused.
func TestGitReview28GlobalConfigLinkInWorkspaceRefused(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.writeWS("gitconfig", "[user]\n\tname = d\n", 0o644)
	must(t, os.Symlink("gitconfig", filepath.Join(s.ws, "link")))
	must(t, os.Symlink(filepath.Join(filepath.Base(s.ws), "link"), filepath.Join(s.base, ".gitconfig")))
	r := s.runHome(s.base, nil, `echo RAN`)
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "link") {
		t.Errorf("a global config reached through a symlink in the workspace: want 125 naming it\n%v", r)
	}
}

// F6: a shell alias that cds first (`!cd web && ./scripts/lint.sh`) runs web/scripts/lint.sh.
func TestGitReview28AliasCd(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "alias.lint", "!cd web && ./scripts/lint.sh")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "web/scripts/lint.sh"), ran)
	r := s.sh(nil, plantScript+`plant web/scripts/lint.sh "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGit(s.ws, "lint")
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git lint")
}

// F6: a shell alias whose program path depends on an expansion is refused, a plain
// shell alias is not.
func TestGitReview28AliasExpansion(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "alias.lg", "!git log --oneline | head -n 3")
	r := s.sh(nil, `echo RAN`)
	mustSucceed(t, r, "a plain shell alias")
	s.hostGit(s.ws, "config", "alias.x", `!"$GIT_PREFIX"/scripts/x.sh`)
	r = s.sh(nil, `echo RAN`)
	if r.code != 125 || !strings.Contains(r.stderr, "alias.x") {
		t.Errorf("an alias whose program path is an expansion: want 125 naming it\n%v", r)
	}
}

// F7: a symlink the previous command planted where a data file the config names was
// missing (core.excludesFile) does not make every later launch refuse.
func TestGitReview28PlantedDataLink(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "core.excludesFile", ".gitignore-local")
	mustSucceed(t, s.sh(nil, `ln -s /etc/hostname .gitignore-local`), "the planting command")
	r := s.sh(nil, `echo RAN`)
	mustSucceed(t, r, "the next launch")
	if !strings.Contains(r.stdout, "RAN") {
		t.Errorf("the next launch did not run: %v", r)
	}
}

// F6/F7: a file a command setting hands to its program (sh scripts/fmt.sh), or a file
// git trusts (gpg.ssh.allowedSignersFile), missing in the workspace, could be created by
// the command: refused, naming the setting.
func TestGitReview28MissingNamedFileRefused(t *testing.T) {
	requireBinary(t)
	for _, c := range [][2]string{{"alias.fmt", "!sh scripts/fmt.sh"}, {"gpg.ssh.allowedSignersFile", ".allowed_signers"}} {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		s.hostGit(s.ws, "config", c[0], c[1])
		r := s.sh(nil, `echo RAN`)
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(strings.ToLower(r.stderr), strings.ToLower(c[0])) {
			t.Errorf("%s = %s, missing: want 125 naming it\n%v", c[0], c[1], r)
		}
	}
}
