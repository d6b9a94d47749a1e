package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Review 27's config findings, proved from the host: git config that names a path in
// the workspace (a hooks directory, an included file, a program) keeps it read-only, so
// the host's next git command runs nothing the command planted there. Each planted
// script would create a marker file outside the workspace; the tests assert it is
// absent, and (where the program was there before) that the host's git still runs the
// original one (ranMarker), so that the test exercises the setting.

// plantScript is a shell line for the command: it rewrites the file $1 into a script
// that touches $2 and prints WROTE-<file> when it could.
const plantScript = `plant() { (printf '#!/bin/sh\ntouch %s\n' "$2" > "$1") 2>/dev/null && echo "WROTE-$1"; return 0; }
`

// hostProgram writes an executable script at p (owned by the caller) that touches ran.
func (s *sandbox) hostProgram(p, ran string) {
	s.t.Helper()
	must(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	mustWriteExecutable(s.t, p, []byte("#!/bin/sh\ntouch "+ran+"\n"), 0o755)
}

// hostCommit runs the host's git commit --allow-empty in dir (its hooks run).
func (s *sandbox) hostCommit(dir string) {
	s.t.Helper()
	s.hostGit(dir, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "host")
}

// wantRan fails the test when the host's git did not run the original program (the
// setting this test attacks is not exercised).
func wantRan(t *testing.T, ran string) {
	t.Helper()
	if _, err := os.Lstat(ran); err != nil {
		t.Errorf("the host's git did not run the configured program (%s missing): the test exercises nothing", ran)
	}
}

// noWrote fails the test when the command could rewrite a file the config names.
func noWrote(t *testing.T, r result) {
	t.Helper()
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the command rewrote what git config names: %q", r.stdout)
	}
}

// F1: core.hooksPath set in a file the repository's config includes.
func TestGitReview27IncludedHooksPath(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.writeWS(".gitconfig-project", "[core]\n\thooksPath = .githooks\n", 0o644)
	s.hostGit(s.ws, "config", "include.path", "../.gitconfig-project")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, ".githooks/pre-commit"), ran)
	r := s.sh(nil, plantScript+`plant .githooks/pre-commit "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(s.ws)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F2: core.hooksPath in config.worktree (extensions.worktreeConfig).
func TestGitReview27WorktreeConfig(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "extensions.worktreeConfig", "true")
	s.hostGit(s.ws, "config", "--worktree", "core.hooksPath", ".husky")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, ".husky/pre-commit"), ran)
	r := s.sh(nil, plantScript+`plant .husky/pre-commit "$1"
(echo '[core]' >> .git/config.worktree) 2>/dev/null && echo WROTE-config.worktree; true`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(s.ws)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F5: core.fsmonitor naming a tracked script (relative: to the worktree); likewise a
// diff textconv run through sh.
func TestGitReview27FsmonitorProgram(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, "tools/fsm.sh"), ran)
	s.hostProgram(filepath.Join(s.ws, "tools/conv.sh"), filepath.Join(s.base, "ran-conv"))
	s.hostGit(s.ws, "config", "core.fsmonitor", "tools/fsm.sh")
	s.hostGit(s.ws, "config", "diff.x.textconv", "sh tools/conv.sh")
	r := s.sh(nil, plantScript+`plant tools/fsm.sh "$1"; plant tools/conv.sh "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostGitOut(s.ws, "status")
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git status")
}

// A command named by a relative path that does not exist is refused (the command
// could create it), naming the setting.
func TestGitReview27MissingProgramRefused(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	s.hostGit(s.ws, "config", "core.fsmonitor", "tools/absent.sh")
	r := s.run("--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "core.fsmonitor") {
		t.Errorf("a missing core.fsmonitor program in the workspace: %v; want 125 naming the setting", r)
	}
}

// F6: a linked worktree deeper than the scan reaches: its own (relative) hooksPath.
func TestGitReview27DeepWorktreeHooks(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, ".husky/pre-commit"), ran)
	s.hostGit(s.ws, "add", ".husky/pre-commit")
	s.hostCommit(s.ws)
	os.Remove(ran) // not there: the hooks path is set below
	s.hostGit(s.ws, "config", "core.hooksPath", ".husky")
	s.hostGit(s.ws, "worktree", "add", "-q", "-b", "agent9", ".wt/team/a/agent9")
	deep := filepath.Join(s.ws, ".wt/team/a/agent9")
	r := s.sh(nil, plantScript+`plant .wt/team/a/agent9/.husky/pre-commit "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(deep)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit in the deep worktree")
}

// F6 (submodules): a submodule whose checkout is deeper than the scan, with its own
// core.hooksPath in its git dir's config.
func TestGitReview27DeepSubmoduleHooks(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	src := filepath.Join(s.base, "subsrc")
	s.newRepo(src, "sub-commit")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(src, ".husky/pre-commit"), ran)
	s.hostGit(src, "add", ".husky/pre-commit")
	s.hostCommit(src)
	os.Remove(ran) // not there: the hooks path is set below
	s.newRepo(s.ws, "super")
	s.submoduleGit(s.ws, "submodule", "add", "-q", src, "a/b/c/sub")
	s.submoduleGit(s.ws, "commit", "-q", "-m", "with submodule")
	sub := filepath.Join(s.ws, "a/b/c/sub")
	s.hostGit(sub, "config", "core.hooksPath", ".husky")
	r := s.sh(nil, plantScript+`plant a/b/c/sub/.husky/pre-commit "$1"`, pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(sub)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit in the deep submodule")
}

// F9: the repository that encloses the workspace names a hooks directory in it.
func TestGitReview27EnclosingHooksPath(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "mono")
	tools := filepath.Join(s.ws, "tools")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(tools, "git-hooks/pre-commit"), ran)
	s.hostGit(s.ws, "config", "core.hooksPath", "tools/git-hooks")
	ctx := s.limitCtx(runLimit)
	r := s.runCmd(ctx, s.rawCommand(ctx, "exec", "--workspace", tools, "--", shellPath, "-c",
		plantScript+`plant git-hooks/pre-commit "$1"`, "sh", pwned))
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(s.ws)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit in the enclosing repository")
}

// F3: a "~/" hooksPath when the workspace lies under the caller's home (the host's git
// runs with HOME=s.base, hostGitOut).
func TestGitReview27TildeHooksPath(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
	s.hostProgram(filepath.Join(s.ws, ".githooks/pre-commit"), ran)
	s.hostGit(s.ws, "config", "core.hooksPath", "~/"+filepath.Base(s.ws)+"/.githooks")
	r := s.runHome(s.base, nil, plantScript+`plant .githooks/pre-commit `+pwned)
	mustSucceed(t, r, "the command")
	noWrote(t, r)
	s.hostCommit(s.ws)
	wantRan(t, ran)
	noMarker(t, pwned, "the host's git commit")
}

// F4: the caller's global config includes (includeIf) a file in the workspace.
func TestGitReview27GlobalInclude(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "base")
	name := filepath.Base(s.ws)
	must(t, os.WriteFile(filepath.Join(s.base, ".gitconfig"), []byte("[includeIf \"gitdir:~/"+name+"/\"]\n\tpath = ~/"+name+"/.gitconfig-work\n"), 0o644))
	s.writeWS(".gitconfig-work", "[user]\n\tname = w\n", 0o644)
	pwned := filepath.Join(s.base, "PWNED")
	r := s.runHome(s.base, nil, plantScript+`plant fsm `+pwned+`; chmod +x fsm
(printf '[core]\n\tfsmonitor = %s/fsm\n' "$PWD" >> .gitconfig-work) 2>/dev/null && echo WROTE-config; true`)
	mustSucceed(t, r, "the command")
	if strings.Contains(r.stdout, "WROTE-config") {
		t.Errorf("the command rewrote the file the global config includes: %q", r.stdout)
	}
	s.hostGitOut(s.ws, "status")
	noMarker(t, pwned, "the host's git status")
}
