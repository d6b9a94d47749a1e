package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseGitConfig gives sections, subsections (quoted and the deprecated dotted form)
// and keys as git reads them, and refuses what git refuses.
func TestParseGitConfig(t *testing.T) {
	entries, ok := parseGitConfig("\ufeff[Core]\n\tHooksPath = \".hu sky\" # c\n[includeIf \"gitdir:~/w/\"]\n\tpath = x\n[diff.bin]\n\ttextconv = sh t/c\n[core]\n\tbare\n")
	if !ok {
		t.Fatal("a valid config does not parse")
	}
	want := []configEntry{
		{section: "core", key: "hookspath", value: ".hu sky", set: true},
		{section: "includeif", sub: "gitdir:~/w/", key: "path", value: "x", set: true},
		{section: "diff", sub: "bin", key: "textconv", value: "sh t/c", set: true, dotted: true},
		{section: "core", key: "bare"},
	}
	if !slices.Equal(entries, want) {
		t.Errorf("parseGitConfig: %+v\nwant %+v", entries, want)
	}
	for _, bad := range []string{"[core\n", "[core]\n\tx = \"open\n", "[core]\n\tx = a\\q\n", "= v\n"} {
		if _, ok := parseGitConfig(bad); ok {
			t.Errorf("%q parses; git refuses it", bad)
		}
	}
	if n, _, ok := gitConfigIdent("[user \"\"]\n\tname = x\n"); !ok || n != nil {
		t.Errorf("[user \"\"] gives a user.name: %v %v", n, ok)
	}
}

// guardConfigTargets follows includes (relative to the including file, "~/" to the
// caller's home, includeIf taken as true) and config.worktree, and makes read-only what
// every path- or command-valued setting names in the writable tree; it refuses a missing
// program, a missing include, a symlink and an include loop, and leaves PATH lookups and
// paths outside the trees alone.
func TestGuardConfigTargets(t *testing.T) {
	base := canonTempDir(t)
	home := base
	ws := filepath.Join(base, "ws")
	gd := filepath.Join(ws, ".git")
	mkdirs(t, gd, filepath.Join(ws, "tools"), filepath.Join(ws, "cfg"))
	write := func(p, text string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inWritable := func(p string) bool { return under(p, ws) || p == ws }
	plan := func() (*gitPlan, error) {
		p := &gitPlan{reads: gitReads{rb: &readBudget{left: launchReadBudget, homes: []string{home}, globals: []string{filepath.Join(home, ".gitconfig")}}}, writable: inWritable}
		return p, p.guardConfigTargets(ws, gd, inWritable)
	}
	write(filepath.Join(home, ".gitconfig"), "[includeIf \"gitdir:~/ws/\"]\n\tpath = ~/ws/cfg/global-inc\n[core]\n\tpager = less\n")
	write(filepath.Join(ws, "cfg/global-inc"), "[credential]\n\thelper = !tools/cred\n")
	write(filepath.Join(gd, "config"), "[include]\n\tpath = ../cfg/a\n[core]\n\tfsmonitor = true\n")
	write(filepath.Join(ws, "cfg/a"), "[include]\n\tpath = b\n[filter \"x\"]\n\tsmudge = sh tools/smudge --flag\n\tclean = cat\n")
	write(filepath.Join(ws, "cfg/b"), "[core]\n\thooksPath = ~/ws/.husky\n")
	write(filepath.Join(gd, "config.worktree"), "[alias]\n\tx = !tools/alias arg\n\ty = log\n[diff]\n\texternal = /usr/bin/diff\n")
	for _, f := range []string{"cred", "smudge", "alias"} {
		write(filepath.Join(ws, "tools", f), "#!/bin/sh\n")
	}
	p, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cfg/global-inc", "cfg/a", "cfg/b", ".husky", ".git/config.worktree", "tools/cred", "tools/smudge", "tools/alias"} {
		if !slices.Contains(p.readOnly, filepath.Join(ws, want)) {
			t.Errorf("%s is not read-only: %v", want, p.readOnly)
		}
	}
	if !slices.Contains(p.makeDirs, filepath.Join(ws, ".husky")) {
		t.Errorf("the missing hooks directory is not made: %v", p.makeDirs)
	}
	for _, r := range p.readOnly {
		if !under(r, ws) {
			t.Errorf("%s (outside the trees) planned read-only", r)
		}
	}

	refused := func(cfg, what string) {
		t.Helper()
		write(filepath.Join(gd, "config"), cfg)
		if _, err := plan(); err == nil || !strings.Contains(err.Error(), what) {
			t.Errorf("%q: %v; want a refusal naming %s", cfg, err, what)
		}
	}
	refused("[core]\n\tfsmonitor = tools/absent\n", "core.fsmonitor")
	refused("[include]\n\tpath = ../cfg/absent\n", "include.path")
	refused("[include]\n\tpath = config\n", "nested more than")
	refused("[core\n", "does not parse")
	if err := os.Symlink("smudge", filepath.Join(ws, "tools/link")); err != nil {
		t.Fatal(err)
	}
	refused("[merge \"m\"]\n\tdriver = tools/link %O %A %B\n", "merge.m.driver")
	write(filepath.Join(gd, "config"), "[merge \"npm\"]\n\tdriver = npx npm-merge-driver merge %A %O %B %P\n")
	if _, err := plan(); err != nil {
		t.Errorf("a command looked up on PATH: %v", err)
	}
}
