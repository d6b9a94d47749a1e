package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnclosingNote(t *testing.T) {
	top := t.TempDir()
	sub := filepath.Join(top, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := enclosingNote("", sub); got != "" && !strings.Contains(got, "above it") {
		t.Errorf("no repository above: %q", got) // /tmp itself may sit in one; only a note naming it
	}
	os.Mkdir(filepath.Join(top, ".git"), 0o755)
	if got := enclosingNote("", sub); !strings.Contains(got, "pass --workspace "+top+" ") || !strings.Contains(got, "a git repository") {
		t.Errorf("a repository above: %q", got)
	}
	if got := enclosingNote(sub, sub); got != "" {
		t.Errorf("--workspace given: %q, want none", got)
	}
	if got := enclosingNote("", top); got != "" && strings.Contains(got, top+" above") {
		t.Errorf("the repository's own top: %q", got)
	}
	os.Remove(filepath.Join(top, ".git"))
	os.WriteFile(filepath.Join(top, "a", "go.mod"), []byte("module x\n"), 0o644)
	if got := enclosingNote("", sub); !strings.Contains(got, "a Go module") || !strings.Contains(got, "--workspace "+filepath.Join(top, "a")+" ") {
		t.Errorf("a module above: %q", got)
	}
	os.WriteFile(filepath.Join(sub, "go.mod"), []byte("module y\n"), 0o644)
	if got := enclosingNote("", sub); strings.Contains(got, "Go module") {
		t.Errorf("a module of its own: %q, want no module note", got)
	}
}
