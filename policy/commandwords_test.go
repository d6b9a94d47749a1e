package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// commandWords follows quoting, operators and a literal cd as sh does (review 28 F6).
func TestCommandWords(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []cmdWord
	}{
		{"git log --oneline", []cmdWord{{text: "git", program: true}, {text: "log"}, {text: "--oneline"}}},
		{"cd web && ./scripts/lint.sh", []cmdWord{{text: "./scripts/lint.sh", program: true, dir: "web"}}},
		{`sh -c 'a b';./x|"y z"`, []cmdWord{{text: "sh", program: true}, {text: "-c"}, {text: "a b"}, {text: "./x", program: true}, {text: "y z", program: true}}},
		{"cd $D; ./x", []cmdWord{{text: "./x", program: true, unknown: true}}},
		{"cd; ./x", []cmdWord{{text: "./x", program: true, unknown: true}}},
		{`f() { git log "$@"; }; f`, []cmdWord{{text: "f", program: true}, {text: "{", program: true}, {text: "git", program: true}, {text: "log"}, {text: "$@", unknown: true}, {text: "}", program: true}, {text: "f", program: true}}},
		{"A=1 ./x>o 2>&1 <in", []cmdWord{{text: "A=1", program: true}, {text: "./x", program: true}, {text: "2"}, {text: "in", input: true}}},
	} {
		if got := commandWords(c.v); !slices.Equal(got, c.want) {
			t.Errorf("commandWords(%q) = %+v\nwant %+v", c.v, got, c.want)
		}
	}
}

// A shell command's paths are guarded as sh resolves them (review 28 F6): a cd's file
// read-only, an unresolvable or missing path-like word refused, refs and URLs with a
// slash (origin/main, HEAD:refs/for/$1) left alone.
func TestGuardShellCommand(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	mkdirs(t, gd, filepath.Join(ws, "web/scripts"))
	if err := os.WriteFile(filepath.Join(ws, "web/scripts/lint.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	inWritable := func(p string) bool { return under(p, ws) || p == ws }
	guard := func(alias string) (*gitPlan, error) {
		if err := os.WriteFile(filepath.Join(gd, "config"), []byte("[alias]\n\tx = \""+strings.ReplaceAll(alias, `"`, `\"`)+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &gitPlan{reads: gitReads{rb: &readBudget{left: launchReadBudget, homes: []string{base}}}, writable: inWritable}
		return p, p.guardConfigTargets(ws, gd, inWritable)
	}
	p, err := guard("!cd web && ./scripts/lint.sh --fix")
	if err != nil || !slices.Contains(p.readOnly, filepath.Join(ws, "web/scripts/lint.sh")) {
		t.Errorf("cd web && ./scripts/lint.sh: %v, read-only %v", err, p.readOnly)
	}
	for _, cfg := range []string{"[remote \"o\"]\n\turl = ext::sh web/scripts/lint.sh %S\n", "[url \"ext::web/scripts/lint.sh %G\"]\n\tinsteadOf = o:\n"} {
		if err := os.WriteFile(filepath.Join(gd, "config"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &gitPlan{reads: gitReads{rb: &readBudget{left: launchReadBudget, homes: []string{base}}}, writable: inWritable}
		if err := p.guardConfigTargets(ws, gd, inWritable); err != nil || !slices.Contains(p.readOnly, filepath.Join(ws, "web/scripts/lint.sh")) {
			t.Errorf("%q (git-remote-ext): %v, read-only %v", cfg, err, p.readOnly)
		}
	}
	for _, ok := range []string{"!git log --oneline | head -n 3", "!git diff origin/main", "!f() { git push origin HEAD:refs/for/$1; }; f", "!git log >logs/out.txt 2>&1"} {
		if _, err := guard(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	p, err = guard(`!sh -c 'cd web && exec ./scripts/lint.sh'`)
	if err != nil || !slices.Contains(p.readOnly, filepath.Join(ws, "web/scripts/lint.sh")) {
		t.Errorf("sh -c 'cd web && ./scripts/lint.sh': %v, read-only %v", err, p.readOnly)
	}
	for _, bad := range []string{`!sh -c "./absent.sh"`, `!"$GIT_PREFIX"/scripts/x.sh`, "!cd $D && ./lint.sh", "!sh scripts/fmt.sh", "!cd web; ./absent"} {
		if _, err := guard(bad); err == nil || !strings.Contains(err.Error(), "alias.x") {
			t.Errorf("%q: %v; want a refusal naming alias.x", bad, err)
		}
	}
}
