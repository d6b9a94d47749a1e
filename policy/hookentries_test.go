package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A hook that links into the workspace has its target read-only, in both git modes; a
// link through a symlink in the workspace, to a missing file there, or a hook with a
// second hard link there is refused (attack review 29 F12).
func TestGuardHookEntries(t *testing.T) {
	for _, mode := range []string{GitReadOnly, GitCommit} {
		base := canonTempDir(t)
		ws := filepath.Join(base, "ws")
		gd := filepath.Join(ws, ".git")
		hooks := filepath.Join(gd, "hooks")
		mkdirs(t, hooks, filepath.Join(gd, "objects"), filepath.Join(gd, "refs"), filepath.Join(ws, "scripts"))
		for _, f := range []string{filepath.Join(gd, "HEAD"), filepath.Join(ws, "scripts/pre-commit")} {
			if err := os.WriteFile(f, []byte("x\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		inWritable := func(p string) bool { return under(p, ws) || p == ws }
		plan := func() (gitPlan, error) {
			return guardGit(filepath.Join(ws, ".git"), mode, inWritable, nil, nil)
		}
		hook := filepath.Join(hooks, "pre-commit")
		link := func(target string) {
			t.Helper()
			os.Remove(hook)
			if err := os.Symlink(target, hook); err != nil {
				t.Fatal(err)
			}
		}
		link("../../scripts/pre-commit")
		p, err := plan()
		if err != nil || !slices.Contains(p.readOnly, filepath.Join(ws, "scripts/pre-commit")) {
			t.Errorf("%s: a hook linked into the workspace: %v; read-only %v", mode, err, p.readOnly)
		}
		if err := os.Symlink("scripts", filepath.Join(ws, "lnk")); err != nil {
			t.Fatal(err)
		}
		for target, want := range map[string]string{
			"../../lnk/pre-commit":     "lnk",
			"../../scripts/absent":     "does not exist",
			"../../scripts/../../x/y":  `".."`,
			filepath.Join(ws, "lnk/x"): "lnk",
		} {
			link(target)
			if _, err := plan(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: hook -> %s: %v; want a refusal naming %s", mode, target, err, want)
			}
		}
		os.Remove(hook)
		if err := os.Link(filepath.Join(ws, "scripts/pre-commit"), hook); err != nil {
			t.Fatal(err)
		}
		if _, err := plan(); err == nil || !strings.Contains(err.Error(), "hard link") {
			t.Errorf("%s: a hard-linked hook: %v; want a refusal", mode, err)
		}
	}
}
