package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// git: commit binds the caller's git config files read-only where they exist (a
// commit needs user.name and user.email, and the sandbox's HOME is private); git:
// readonly binds none, and a missing one is skipped.
func TestGitCommitBindsGitConfig(t *testing.T) {
	base := canonTempDir(t)
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	mkdirs(t, ws, filepath.Join(home, ".config/git"))
	gc, xdg := filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config/git/config")
	for _, f := range []string{gc, xdg} {
		if err := os.WriteFile(f, []byte("[user]\n\tname = h\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := fakeHost(ws)
	h.Home, h.Homes = home, []string{home}
	bound := func(mode string, extra ...string) map[string]bool {
		t.Helper()
		p := mustParse(t, "extends: agent\nfilesystem: {git: "+mode+"}\n")
		s, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}, ReadOnly: extra}, h)
		if err != nil {
			t.Fatalf("git: %s: %v", mode, err)
		}
		got := map[string]bool{}
		for _, m := range s.Mounts {
			if m.Type == "bind" && (m.Source == gc || m.Source == xdg) {
				got[m.Source] = slices.Contains(m.Options, "ro")
			}
		}
		return got
	}
	if got := bound(GitCommit); len(got) != 2 || !got[gc] || !got[xdg] {
		t.Errorf("git: commit binds %v; want %s and %s read-only", got, gc, xdg)
	}
	if got := bound(GitReadOnly); len(got) != 0 {
		t.Errorf("git: readonly binds %v; want no git config", got)
	}
	// the README's advice (--ro ~/.gitconfig) still works under git: commit
	if got := bound(GitCommit, gc); len(got) != 2 || !got[gc] {
		t.Errorf("git: commit with --ro %s binds %v", gc, got)
	}
	if err := os.Remove(xdg); err != nil {
		t.Fatal(err)
	}
	if got := bound(GitCommit); len(got) != 1 || !got[gc] {
		t.Errorf("git: commit with no %s binds %v; want only %s", xdg, got, gc)
	}
}

// The build profile binds go's checksum-database cache (GOPATH/pkg/sumdb) read-only
// beside the module cache, where it exists: go verifies a module it adds to go.sum
// against it, offline (the trial's `go run` of a module without its go.sum line).
func TestBuildBindsGoSumdb(t *testing.T) {
	base := canonTempDir(t)
	ws, home := filepath.Join(base, "ws"), filepath.Join(base, "home")
	sumdb := filepath.Join(home, "go/pkg/sumdb")
	mkdirs(t, ws, filepath.Join(home, "go/pkg/mod"), filepath.Join(sumdb, "sum.golang.org"))
	h := fakeHost(ws)
	h.Home, h.Homes = home, []string{home}
	p, _ := Builtin("build")
	s, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range s.Mounts {
		if m.Type == "bind" && m.Source == sumdb && m.Destination == sumdb {
			found = slices.Contains(m.Options, "ro")
		}
	}
	if !found {
		t.Errorf("build does not bind %s read-only: %+v", sumdb, s.Mounts)
	}
}
