package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProtectedScanAdded: the scan kept at a session's start finds nothing new while the
// trees are unchanged, and finds a .git that appears in the workspace or in a --rw tree
// until it is accepted; one that was there at the start is known. The refusal names it
// and the restart.
func TestProtectedScanAdded(t *testing.T) {
	base := t.TempDir()
	ws, rw := filepath.Join(base, "ws"), filepath.Join(base, "rw")
	for _, d := range []string{filepath.Join(ws, "old", ".git"), rw} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := Host{UID: os.Getuid(), Home: "/home/u", Cwd: base}
	p, _ := Builtin("agent")
	eff, err := Effective(Options{Policy: p, Workspace: ws, ReadWrite: []string{rw}}, h)
	if err != nil {
		t.Fatal(err)
	}
	s, err := eff.ScanProtected(ws, h)
	if err != nil || len(s.Trees) != 2 || len(s.Known) != 1 {
		t.Fatalf("scan at the start: %+v, %v; want 2 trees, old/.git known", s, err)
	}
	if added, err := s.Rescan(); err != nil || len(added) != 0 {
		t.Fatalf("nothing new: %q, %v", added, err)
	}
	for _, d := range []string{filepath.Join(ws, "a", "b", ".git"), filepath.Join(rw, "dep", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		added, err := s.Rescan()
		if err != nil || !slices.Equal(added, []string{d}) {
			t.Errorf("after %s appeared: %q, %v; want it", d, added, err)
		}
		if again, _ := s.Rescan(); !slices.Equal(again, added) {
			t.Errorf("rescan before Accept: %q, want %q again", again, added)
		}
		s.Accept(added)
		if again, _ := s.Rescan(); len(again) != 0 {
			t.Errorf("rescan after Accept: %q, want nothing", again)
		}
		if msg := NewProtectedError("n", added).Error(); !strings.Contains(msg, d) || !strings.Contains(msg, "gosbx session stop n") {
			t.Errorf("the refusal %q names neither %s nor the restart", msg, d)
		}
	}
}

// TestBoundsCwd: a request without --chdir starts in the caller's directory when it
// lies in the workspace (through a symlink too), else in the workspace; a policy's own
// cwd stays.
func TestBoundsCwd(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	sub := filepath.Join(ws, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	b := Bounds{Workspace: ws}
	for _, c := range []struct{ cwd, want string }{{sub, sub}, {link, sub}, {ws, ws}, {base, ws}, {"", ""}, {"rel", ""}} {
		if got, err := b.Check(Request{Cwd: c.cwd}); err != nil || got != c.want {
			t.Errorf("cwd %q: got %q, %v; want %q", c.cwd, got, err, c.want)
		}
	}
	b.Cwd = ws
	if got, _ := b.Check(Request{Cwd: sub}); got != "" {
		t.Errorf("with the policy's own cwd: got %q, want it kept", got)
	}
	if got, _ := b.Check(Request{Cwd: sub, Chdir: "/tmp"}); got != "/tmp" {
		t.Errorf("--chdir: got %q", got)
	}
}
