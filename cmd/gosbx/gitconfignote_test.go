package main

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// A failed change of the repository's config gets a note saying why git's errno (EBUSY
// under git: commit, EROFS under readonly) and what works inside; reads of it, and
// writes of another config file, get none (trial finding: a bare "Device or resource
// busy").
func TestGitConfigNote(t *testing.T) {
	spec := func(args ...string) *config.Config {
		return &config.Config{Process: &specs.Process{Args: args}, Linux: &config.Linux{ReadonlyPaths: []string{"/w/.git/config", "/proc/sys"}}}
	}
	for _, c := range []struct {
		args []string
		note bool
	}{
		{[]string{"git", "config", "core.editor", "vim"}, true},
		{[]string{"git", "config", "--unset", "core.editor"}, true},
		{[]string{"git", "config", "set", "core.editor", "vim"}, true},
		{[]string{"sh", "-c", "git -C sub config user.name x && git commit"}, true},
		{[]string{"git", "remote", "add", "o", "/x"}, true},
		{[]string{"git", "remote", "-v"}, false},
		{[]string{"git", "config", "core.editor"}, false},
		{[]string{"git", "config", "--get", "core.editor"}, false},
		{[]string{"git", "config", "--list"}, false},
		{[]string{"git", "config", "get", "core.editor"}, false},
		{[]string{"git", "config", "--global", "core.editor", "vim"}, false},
		{[]string{"git", "config", "--file=x", "a.b", "c"}, false},
		{[]string{"sh", "-c", "git status; echo config a b"}, false},
	} {
		n := gitConfigNote(spec(c.args...), policy.GitCommit)
		if (n != "") != c.note {
			t.Errorf("%q: note %q; want one: %v", c.args, n, c.note)
		}
	}
	n := gitConfigNote(spec("git", "config", "a.b", "c"), policy.GitCommit)
	for _, w := range []string{"\"Device or resource busy\"", "git -c KEY=VALUE", "git config --global KEY VALUE", "outside the sandbox"} {
		if !strings.Contains(n, w) {
			t.Errorf("note %q lacks %q", n, w)
		}
	}
	if n := gitConfigNote(spec("git", "config", "a.b", "c"), ""); !strings.Contains(n, "\"Read-only file system\"") {
		t.Errorf("note under git: readonly %q: want git's errno there", n)
	}
	if n := gitConfigNote(&config.Config{Process: &specs.Process{Args: []string{"git", "config", "a.b", "c"}}, Linux: &config.Linux{}}, ""); n != "" {
		t.Errorf("no repository guarded: note %q", n)
	}
}
