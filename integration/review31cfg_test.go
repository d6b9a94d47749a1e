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
