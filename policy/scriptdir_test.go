package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Attack review 31 F5: an interpreter's script word that names a directory (python
// runs its __main__.py, node its package.json's main or index.js), "." included, is
// refused; a directory in another place (rm -f DIR, cd DIR) is not. And the
// credential-store helper's --file is data: a missing one is not refused.
func TestGuardScriptDirectory(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	mkdirs(t, gd, filepath.Join(ws, "tools/lint"), filepath.Join(ws, "tool"))
	for _, f := range []string{"tool/__main__.py", "tools/lint/index.js", "__main__.py", "package.json", ".creds2"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inWritable := func(p string) bool { return under(p, ws) || p == ws }
	plan := func(cfg string) (*gitPlan, error) {
		if err := os.WriteFile(filepath.Join(gd, "config"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &gitPlan{reads: gitReads{rb: &readBudget{left: launchReadBudget, homes: []string{base}}}, writable: inWritable}
		return p, p.guardConfigTargets(ws, gd, inWritable)
	}
	for _, cfg := range []string{
		"[alias]\n\tl = !python3 tool\n",
		"[alias]\n\tl = !python3 tools/lint\n",
		"[alias]\n\tl = !python3 .\n",
		"[alias]\n\tl = !node .\n",
		"[alias]\n\tl = !node tools/lint\n",
		"[alias]\n\tl = !cd tools && node lint\n",
		"[diff \"x\"]\n\ttextconv = python3 -u tool\n",
		"[core]\n\tsshCommand = env python3 tool\n",
	} {
		if _, err := plan(cfg); err == nil || !strings.Contains(err.Error(), "as its script") {
			t.Errorf("%q: %v; want a refusal of the script directory", cfg, err)
		}
	}
	for _, cfg := range []string{
		"[alias]\n\tl = !rm -f tools\n",
		"[alias]\n\tl = !cd tools && ls lint\n",
		"[alias]\n\tl = !ls .\n",
		"[credential]\n\thelper = store --file .creds\n",
	} {
		if _, err := plan(cfg); err != nil {
			t.Errorf("%q refused: %v", cfg, err)
		}
	}
	p, err := plan("[credential]\n\thelper = store --file .creds2\n")
	if err != nil || !slices.Contains(p.readOnly, filepath.Join(ws, ".creds2")) {
		t.Errorf("an existing credential-store file: %v, read-only %v", err, p.readOnly)
	}
}
