package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/policy"
)

func TestEnclosingNote(t *testing.T) {
	ok := func(string) error { return nil }
	top := t.TempDir()
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := enclosingNote("", sub, ok); got != "" && !strings.Contains(got, "above it") {
		t.Errorf("no repository above: %q", got) // /tmp itself may sit in one; only a note naming it
	}
	os.Mkdir(filepath.Join(top, ".git"), 0o755)
	if got := enclosingNote("", sub, ok); !strings.Contains(got, "pass --workspace "+top+" ") || !strings.Contains(got, "a git repository") {
		t.Errorf("a repository above: %q", got)
	}
	if got := enclosingNote(sub, sub, ok); got != "" {
		t.Errorf("--workspace given: %q, want none", got)
	}
	if got := enclosingNote("", top, ok); got != "" && strings.Contains(got, top+" above") {
		t.Errorf("the repository's own top: %q", got)
	}
	os.Remove(filepath.Join(top, ".git"))
	os.WriteFile(filepath.Join(top, "a", "go.mod"), []byte("module x\n"), 0o644)
	if got := enclosingNote("", sub, ok); !strings.Contains(got, "a Go module") || !strings.Contains(got, "--workspace "+filepath.Join(top, "a")+" ") {
		t.Errorf("a module above: %q", got)
	}
	os.WriteFile(filepath.Join(sub, "go.mod"), []byte("module y\n"), 0o644)
	if got := enclosingNote("", sub, ok); strings.Contains(got, "Go module") {
		t.Errorf("a module of its own: %q, want no module note", got)
	}
}

// The note never suggests a workspace gosbx refuses: the nearest directory above that
// holds a repository or module is what git and go would take, so a refused one (/tmp
// holding someone's go.mod, a home holding a dotfiles .git) gives no note at all.
func TestEnclosingNoteRefusedWorkspace(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(top, "go.mod"), []byte("module x\n"), 0o644)
	os.Mkdir(filepath.Join(top, ".git"), 0o755)
	refuseTop := func(d string) error {
		if d == top {
			return errors.New("refused")
		}
		return nil
	}
	if got := enclosingNote("", sub, refuseTop); got != "" {
		t.Errorf("refused directory above: %q, want no note", got)
	}
	// the check the note asks is the workspace's own: /tmp and the home are refused
	agent, found := policy.Builtin(policy.DefaultProfile)
	if !found {
		t.Fatal("no default profile")
	}
	home := t.TempDir()
	h := policy.Host{Homes: []string{home}, Home: home}
	for _, d := range []string{"/tmp", home, "/"} {
		if agent.WorkspaceRefusal(d, h) == nil {
			t.Errorf("WorkspaceRefusal(%s) = nil, want the workspace check's refusal", d)
		}
	}
	if err := agent.WorkspaceRefusal(sub, h); err != nil {
		t.Errorf("WorkspaceRefusal(%s) = %v, want nil", sub, err)
	}
}
