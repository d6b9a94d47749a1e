package integration

// Trial finding: gosbx exec from a subdirectory of a repository (no --workspace) made
// only that subdirectory the workspace; git said "not a git repository" and nothing
// said why. A failed command there now gets a note naming the flag.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSubdirWorkspaceNote(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		sub := filepath.Join(s.ws, "pkg", "inner")
		must(t, os.MkdirAll(sub, 0o755))
		must(t, os.Mkdir(filepath.Join(s.ws, ".git"), 0o755))
		filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "exec", "--", shellPath, "-c", "test -e ../../.git")
		cmd.Dir = sub
		r := s.runCmd(ctx, cmd)
		want := "gosbx: note: the workspace is the current directory " + sub + ", and " + s.ws + " above it holds a git repository the sandbox does not show: to work in it, pass --workspace " + s.ws
		if r.code != 1 || !strings.Contains(r.stderr, want) {
			t.Errorf("a failed command in a repository's subdirectory: want exit 1 and %q\n%v", want, r)
		}
		// with the workspace named, the repository is there and no note
		cmd = s.rawCommand(ctx, "exec", "--workspace", s.ws, "--", shellPath, "-c", "test -e ../../.git")
		cmd.Dir = sub
		r = s.runCmd(ctx, cmd)
		if r.code != 0 || strings.Contains(r.stderr, "note") {
			t.Errorf("with --workspace %s: want exit 0 and no note\n%v", s.ws, r)
		}
	})
}
