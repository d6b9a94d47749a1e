package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitEnvOf names the config files git 2.39 reads for each environment (git-config(1)
// ENVIRONMENT), the settings GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT and the command
// variables carry, and git's default programs.
func TestGitEnvOf(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want []string
	}{
		{nil, []string{"/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"XDG_CONFIG_HOME=/x"}, []string{"/etc/gitconfig", "/x/git/config", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"XDG_CONFIG_HOME=rel"}, []string{"/etc/gitconfig", "/cwd/rel/git/config", "/h/.config/git/config", "/h/.gitconfig"}},
		// a variable that narrows what the launcher's git reads does not narrow the
		// guard: the account's git in another shell reads the default files (review 38 F1)
		{[]string{"GIT_CONFIG_GLOBAL=/g", "XDG_CONFIG_HOME=/x"}, []string{"/etc/gitconfig", "/g", "/x/git/config", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"GIT_CONFIG_GLOBAL="}, []string{"/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"GIT_CONFIG_GLOBAL=/dev/null"}, []string{"/etc/gitconfig", "/dev/null", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"GIT_CONFIG_SYSTEM=/s", "GIT_CONFIG_GLOBAL=g"}, []string{"/etc/gitconfig", "/s", "/cwd/g", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"GIT_CONFIG_SYSTEM=/s", "GIT_CONFIG_NOSYSTEM=1"}, []string{"/etc/gitconfig", "/s", "/h/.config/git/config", "/h/.gitconfig"}},
		{[]string{"GIT_CONFIG_NOSYSTEM=1"}, []string{"/etc/gitconfig", "/h/.config/git/config", "/h/.gitconfig"}},
	} {
		g, err := gitEnvOf(c.env, []string{"/h"}, "/cwd")
		if err != nil || !slices.Equal(g.globals, c.want) {
			t.Errorf("%q: globals %q (%v), want %q", c.env, g.globals, err, c.want)
		}
	}
	// every name of the home: the launcher's HOME (/) and the passwd home (/root)
	if g, _ := gitEnvOf(nil, []string{"/", "/root"}, "/cwd"); !slices.Equal(g.globals, []string{"/etc/gitconfig", "/.config/git/config", "/root/.config/git/config", "/.gitconfig", "/root/.gitconfig"}) {
		t.Errorf("homes / and /root: globals %q", g.globals)
	}
	g, err := gitEnvOf([]string{
		`GIT_CONFIG_PARAMETERS='core.hooksPath'='/w/h' 'alias.x=!sh -c '\''a b'\''' 'Diff.My.Sub.textconv'='t'  'core.bare'`,
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=./f",
		"GIT_TEMPLATE_DIR=tpl", "PATH=/a::b", "EDITOR=vim -f",
	}, []string{"/h"}, "/cwd")
	if err != nil {
		t.Fatal(err)
	}
	want := []configEntry{
		{section: "core", key: "hookspath", value: "/w/h", set: true, env: "GIT_CONFIG_PARAMETERS"},
		{section: "alias", key: "x", value: "!sh -c 'a b'", set: true, env: "GIT_CONFIG_PARAMETERS"},
		{section: "diff", sub: "My.Sub", key: "textconv", value: "t", set: true, env: "GIT_CONFIG_PARAMETERS"},
		{section: "core", key: "bare", env: "GIT_CONFIG_PARAMETERS"},
		{section: "core", key: "fsmonitor", value: "./f", set: true, env: "GIT_CONFIG_KEY_0"},
		{section: "core", key: "editor", value: "vim -f", set: true, env: "EDITOR"},
		{section: "core", key: "pager", value: "less", set: true, env: "default less"},
		{section: "core", key: "editor", value: "vi", set: true, env: "default vi"},
		{section: "core", key: "sshcommand", value: "ssh", set: true, env: "default ssh"},
		{section: "gpg", key: "program", value: "gpg", set: true, env: "default gpg"},
		{section: "init", key: "templatedir", value: "/cwd/tpl", set: true, env: "GIT_TEMPLATE_DIR"},
	}
	if !slices.Equal(g.entries, want) {
		t.Errorf("entries %+v\nwant %+v", g.entries, want)
	}
	if !slices.Equal(g.path, []string{"/a", "", "b"}) {
		t.Errorf("path %q", g.path)
	}
	for _, bad := range [][]string{
		{"GIT_CONFIG_PARAMETERS='core.x"},
		{"GIT_CONFIG_PARAMETERS=core.x=1"},
		{"GIT_CONFIG_PARAMETERS='nodot'='1'"},
		{"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=a.b", "GIT_CONFIG_VALUE_0=1"},
		{"GIT_CONFIG_COUNT=x"},
	} {
		if _, err := gitEnvOf(bad, []string{"/h"}, "/cwd"); err == nil {
			t.Errorf("%q: accepted; git refuses it", bad)
		}
	}
}

// gitConfigParameters reads what git -c itself passes to its children (the real
// GIT_CONFIG_PARAMETERS git 2.39 writes, quotes and all).
func TestGitConfigParametersAsGit(t *testing.T) {
	cmd := exec.Command("git", "-c", "alias.q=!echo 'it''s' \"x\"", "-c", "core.hooksPath=/a b", "-c", "Url.HTTPS://X/.insteadOf=y",
		"-c", "alias.env=!env", "env")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1"}
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "GIT_CONFIG_PARAMETERS=") {
			env = append(env, l)
		}
	}
	if len(env) != 1 {
		t.Fatalf("no GIT_CONFIG_PARAMETERS in %q", b)
	}
	es, err := gitConfigParameters(env)
	if err != nil {
		t.Fatalf("%s: %v", env[0], err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.section+"|"+e.sub+"|"+e.key+"|"+e.value)
	}
	want := []string{`alias||q|!echo 'it''s' "x"`, "core||hookspath|/a b", "url|HTTPS://X/|insteadof|y", "alias||env|!env"}
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", env[0], got, want)
	}
}

// remoteURLs rewrites as remote.c does: the longest insteadOf prefix; pushInsteadOf
// only for a remote without a pushurl; a branch's remote that names no remote is a URL.
func TestRemoteURLs(t *testing.T) {
	cfg := `[url "/w/a/"]
	insteadOf = https://h/
[url "/w/long/"]
	insteadOf = https://h/org/
[url "/w/push/"]
	pushInsteadOf = https://h/
[remote "o"]
	url = https://h/org/r.git
[remote "p"]
	url = https://h/x.git
	pushurl = https://h/y.git
[branch "main"]
	remote = ../direct.git
	pushRemote = o
`
	entries, ok := parseGitConfig(cfg)
	if !ok {
		t.Fatal("does not parse")
	}
	var se []sourcedEntry
	for _, e := range entries {
		se = append(se, sourcedEntry{"/c", e})
	}
	var got []string
	for _, u := range remoteURLs(se) {
		got = append(got, u.url)
	}
	want := []string{"/w/long/r.git", "/w/push/org/r.git", "/w/a/x.git", "/w/a/y.git", "../direct.git"}
	if !slices.Equal(got, want) {
		t.Errorf("remoteURLs %q, want %q", got, want)
	}
}

// guardPathProgram: a match in a writable tree's root is read-only, deeper it is noted;
// a writable directory searched before the match is noted, nothing is created; git's
// exec path comes first; a builtin under sh is no program; the note's fix drops the
// writable entries from PATH.
func TestGuardPathProgram(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	tools := filepath.Join(base, "tools")
	mkdirs(t, filepath.Join(ws, "bin"), tools, filepath.Join(base, "exec"), filepath.Join(ws, "other"))
	for _, p := range []string{filepath.Join(ws, "bin/mine"), filepath.Join(tools, "tool"), filepath.Join(base, "exec/git"), filepath.Join(ws, "top")} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	inWritable := func(p string) bool { return under(p, ws) || p == ws }
	path := []string{filepath.Join(ws, "bin"), filepath.Join(ws, "none"), ws, tools, ""}
	rb := &readBudget{left: launchReadBudget, trees: []string{ws}, env: gitEnv{path: path, execPath: filepath.Join(base, "exec")}}
	plan := &gitPlan{reads: gitReads{rb: rb}, writable: inWritable}
	if err := plan.guardCommand("/c", ws, "x", "mine; tool | git log; echo hi; FOO=1 other; top; true; nowhere", cmdWord{}, 0, inWritable); err != nil {
		t.Fatal(err)
	}
	// In the workspace's root a match (top) and a name the lookup passes over (the
	// directory other) are read-only: the root is a mount point already. Deeper, nothing
	// is bound and nothing created (no placeholder): the entries are noted.
	wantRO := []string{filepath.Join(ws, "other"), filepath.Join(ws, "top")}
	slices.Sort(plan.readOnly) // ws is on PATH twice (as itself and as ""): unioned at Build
	if plan.readOnly = slices.Compact(plan.readOnly); !slices.Equal(plan.readOnly, wantRO) {
		t.Errorf("readOnly %q\nwant %q", plan.readOnly, wantRO)
	}
	if len(plan.makeDirs) != 0 {
		t.Errorf("makeDirs %q, want none", plan.makeDirs)
	}
	want := []pathNote{
		{path[0], path[0], []string{"mine", "tool", "other", "top", "nowhere"}},
		{path[1], path[1], []string{"tool", "other", "top", "nowhere"}},
		{ws, ws, []string{"tool", "nowhere"}},
		{"", ws, []string{"nowhere"}}, // taken from the worktree's top
	}
	if !slices.EqualFunc(rb.pathNotes, want, func(a, b pathNote) bool {
		return a.entry == b.entry && a.dir == b.dir && slices.Equal(a.progs, b.progs)
	}) {
		t.Errorf("pathNotes %q\nwant %q", rb.pathNotes, want)
	}
	n := pathNoteText(rb, inWritable)
	for _, w := range []string{path[0] + ": mine, tool, other, top, nowhere;", `; "" (` + ws + "): nowhere", "env PATH=" + tools + " gosbx"} {
		if !strings.Contains(n, w) {
			t.Errorf("the note lacks %q:\n%s", w, n)
		}
	}
}

// remoteHelper names the helper git runs for a URL, none for its own transports.
func TestRemoteHelper(t *testing.T) {
	for u, want := range map[string]string{
		"https://h/r": "https", "persistent-https://h/r": "persistent-https", "hg::https://h/r": "hg",
		"codecommit::us-east-1://r": "codecommit", "ssh://h/r": "", "git@h:r": "", "../r": "", "file:///r": "",
		"git://h/r": "", "/abs/r": "", "c:/x": "",
	} {
		if got := remoteHelper(u); got != want {
			t.Errorf("remoteHelper(%q) = %q, want %q", u, got, want)
		}
	}
}
