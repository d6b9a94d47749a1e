package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Attack review 29 F1 F10 F11: words without a slash that a program opens, git -c in
// aliases, KEY=VALUE values: read-only when there, refused when they cannot be kept.
func TestGuardCommandArgs(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	mkdirs(t, gd, filepath.Join(ws, "tools/lint"), filepath.Join(ws, "web"))
	for _, f := range []string{"lint.sh", "conv.py", "ci.mk", "ssh_config", "in.txt", "tools/lint/__init__.py", "tools/lint/__main__.py", "tools/__init__.py", "tools/proxy", "tools/diff.sh", "web/x.sh", "README"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte("#!/bin/sh\n"), 0o755); err != nil {
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
	for cfg, want := range map[string]string{
		"[alias]\n\tl = !sh lint.sh\n":                                       "lint.sh",
		"[diff \"bin\"]\n\ttextconv = python3 conv.py\n":                     "conv.py",
		"[alias]\n\tm = !make -f ci.mk\n":                                    "ci.mk",
		"[core]\n\tsshCommand = ssh -F ssh_config\n":                         "ssh_config",
		"[alias]\n\ti = !sh < in.txt\n":                                      "in.txt",
		"[alias]\n\tp = !python3 -m tools.lint\n":                            "tools/lint/__main__.py",
		"[core]\n\tsshCommand = ssh -o ProxyCommand=./tools/proxy\n":         "tools/proxy",
		"[core]\n\tsshCommand = ssh -o \"ProxyCommand=sh tools/proxy %h\"\n": "tools/proxy",
		"[alias]\n\tdx = -c diff.external=tools/diff.sh diff\n":              "tools/diff.sh",
		"[alias]\n\tc = !git -c core.hooksPath=tools/lint commit\n":          "tools/lint",
		"[alias]\n\tw = !cd web && sh x.sh\n":                                "web/x.sh",
		"[alias]\n\tg = !git log README\n":                                   "README",
	} {
		p, err := plan(cfg)
		if err != nil {
			t.Errorf("%q: %v", cfg, err)
			continue
		}
		if !slices.Contains(p.readOnly, filepath.Join(ws, want)) {
			t.Errorf("%q: %s not read-only: %v", cfg, want, p.readOnly)
		}
	}
	for cfg, what := range map[string]string{
		"[alias]\n\tl = !sh missing.sh\n":                           "missing.sh",
		"[alias]\n\tl = !for f in checks/*.sh; do sh $f; done\n":    "glob",
		"[alias]\n\tl = !sh $X\n":                                   "expansion",
		"[alias]\n\tl = !python3 -m tools.absent\n":                 "tools/absent.py",
		"[alias]\n\tl = !git --config-env=core.pager=P log\n":       "--config-env",
		"[alias]\n\tl = -c core.fsmonitor=tools/absent status\n":    "tools/absent",
		"[alias]\n\tl = !make -f absent.mk\n":                       "absent.mk",
		"[core]\n\tsshCommand = ssh -o ProxyCommand=./tools/nope\n": "tools/nope",
	} {
		if _, err := plan(cfg); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%q: %v; want a refusal naming %s", cfg, err, what)
		}
	}
	for _, cfg := range []string{
		"[alias]\n\tls = ls-files '*.py'\n",
		"[alias]\n\tj = !python3 -m json.tool\n",
		"[alias]\n\tc = !sh -c 'echo hi'\n",
		"[alias]\n\tc = !bash -lc lint\n",
		"[alias]\n\tc = !python3 -W ignore conv.py\n",
		"[core]\n\tpager = less -F -RX\n",
		"[commit]\n\tverbose = true\n",
	} {
		if _, err := plan(cfg); err != nil {
			t.Errorf("%q refused: %v", cfg, err)
		}
	}
}
