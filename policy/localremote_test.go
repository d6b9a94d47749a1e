package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// localRemotePath takes plain paths and file:// URLs as local, as git's transport does,
// and every other URL form of git-push(1) "GIT URLS" as not.
func TestLocalRemotePath(t *testing.T) {
	for v, want := range map[string]string{
		"../origin.git":                "../origin.git",
		"/srv/git/x.git":               "/srv/git/x.git",
		"file:///srv/git/x.git":        "/srv/git/x.git",
		"file://host/r":                "/r",
		"file://localhost/a%20b/c%2Fd": "/a b/c/d",
		"file:///a%00b%zz%4":           "/a%00b%zz%4",
		"file://[h/x]/y":               "/y",
		"file://u@[h/x]/y":             "/y",
		"~/repos/x.git":                "~/repos/x.git",
		"./a:b/c":                      "./a:b/c",
		"/a:b":                         "/a:b",
		"plain":                        "plain",
		"[vendor]/up.git":              "]/up.git", // host_end (review 30 F4)
		"sub@[zz]/evil":                "]/evil",
		"a@[b/c":                       "a@[b/c",
		"x[y]/z":                       "x[y]/z",
		"FILE:///a":                    "-",
		"file:/a":                      "-", // scp-like: host "file"
		"file://host":                  "-",
		"git@github.com:o/r.git":       "-",
		"host:path":                    "-",
		"a:b/c":                        "-",
		"https://example.com/r.git":    "-",
		"ssh://h/r":                    "-",
		"ext::sh -c x":                 "-",
		"file::/x":                     "-",
		"1x::y":                        "-",
		"":                             "-",
	} {
		got, ok := localRemotePath(v)
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("localRemotePath(%q) = %q, want %q", v, got, want)
		}
	}
	for u, want := range map[string]string{
		"FILE:///a": "FILE", "1x::y": "1x", "ext::sh": "ext", "https://h/x": "https",
		"file:///a": "", "git+ssh://h/x": "", "/a::b": "", "host:p": "",
	} {
		if got := remoteHelper(u); got != want {
			t.Errorf("remoteHelper(%q) = %q, want %q", u, got, want)
		}
	}
}

// gitT runs git in dir with a clean configuration and returns its output and error.
func gitT(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_SSH_COMMAND=false", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mkRemoteRepo makes a repository at dir (bare, or a checkout; with sep, a checkout
// whose .git file names the git dir sep) holding one branch named branch.
func mkRemoteRepo(t *testing.T, dir, branch string, bare bool, sep string) {
	t.Helper()
	args := []string{"init", "-q"}
	if bare {
		args = append(args, "--bare")
	}
	if sep != "" {
		args = append(args, "--separate-git-dir", sep)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := gitT(t, filepath.Dir(dir), append(args, dir)...); err != nil {
		t.Fatalf("git init %s: %v: %s", dir, err, out)
	}
	tree, err := gitT(t, dir, "hash-object", "-t", "tree", "-w", "/dev/null")
	if err != nil {
		t.Fatalf("hash-object: %v: %s", err, tree)
	}
	c, err := gitT(t, dir, "commit-tree", "-m", "x", strings.TrimSpace(tree))
	if err != nil {
		t.Fatalf("commit-tree: %v: %s", err, c)
	}
	if out, err := gitT(t, dir, "update-ref", "refs/heads/"+branch, strings.TrimSpace(c)); err != nil {
		t.Fatalf("update-ref: %v: %s", err, out)
	}
}

// The resolver against git itself: for each URL form, git ls-remote (git's transport,
// enter_repo) reaches a repository exactly when localRemotePath and enterRepo find
// one, and the same one (each repository holds a branch of its own name).
func TestLocalRemoteAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repos := map[string]string{ // git dir -> its branch
		filepath.Join(d, "my repos/proj.git"): "spaced",
		filepath.Join(d, "nosuffix.git"):      "nosuffix",
		filepath.Join(d, "co/.git"):           "checkout",
		filepath.Join(d, "both/.git"):         "bothco",
		filepath.Join(d, "both.git"):          "bothbare",
		filepath.Join(d, "a:b"):               "colon",
		filepath.Join(d, "sep.d"):             "separate",
		filepath.Join(d, "nb.git/.git"):       "dotgitco",
	}
	if err := os.MkdirAll(filepath.Join(d, "my repos"), 0o755); err != nil {
		t.Fatal(err)
	}
	mkRemoteRepo(t, filepath.Join(d, "my repos/proj.git"), "spaced", true, "")
	mkRemoteRepo(t, filepath.Join(d, "nosuffix.git"), "nosuffix", true, "")
	mkRemoteRepo(t, filepath.Join(d, "co"), "checkout", false, "")
	mkRemoteRepo(t, filepath.Join(d, "both"), "bothco", false, "")
	mkRemoteRepo(t, filepath.Join(d, "both.git"), "bothbare", true, "")
	mkRemoteRepo(t, filepath.Join(d, "a:b"), "colon", true, "")
	mkRemoteRepo(t, filepath.Join(d, "sep"), "separate", false, filepath.Join(d, "sep.d"))
	mkRemoteRepo(t, filepath.Join(d, "nb.git"), "dotgitco", false, "")
	// a plain path with a "[...]" host: git opens it from the "]" (review 30 F4)
	repos[filepath.Join(d, "]/brk.git")] = "bracket"
	mkRemoteRepo(t, filepath.Join(d, "]/brk.git"), "bracket", true, "")
	if err := os.MkdirAll(filepath.Join(d, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	// a detached HEAD (an object name) is valid; a HEAD git cannot read is not, and git
	// passes on to the next name (half: a plain directory, then half.git)
	repos[filepath.Join(d, "detached.git")] = "detached"
	mkRemoteRepo(t, filepath.Join(d, "detached.git"), "detached", true, "")
	oid, err := gitT(t, filepath.Join(d, "detached.git"), "rev-parse", "refs/heads/detached")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "detached.git/HEAD"), []byte(oid), 0o644); err != nil {
		t.Fatal(err)
	}
	repos[filepath.Join(d, "bad.git")] = "bad"
	mkRemoteRepo(t, filepath.Join(d, "bad.git"), "bad", true, "")
	if err := os.WriteFile(filepath.Join(d, "bad.git/HEAD"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// git's isspace has no \v or \f: "ref:\vrefs/..." is no valid HEAD (review 30 I1)
	repos[filepath.Join(d, "vt.git")] = "vt"
	mkRemoteRepo(t, filepath.Join(d, "vt.git"), "vt", true, "")
	if err := os.WriteFile(filepath.Join(d, "vt.git/HEAD"), []byte("ref:\vrefs/heads/vt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repos[filepath.Join(d, "half.git")] = "half"
	mkRemoteRepo(t, filepath.Join(d, "half.git"), "half", true, "")
	if err := os.MkdirAll(filepath.Join(d, "half/objects"), 0o755); err != nil {
		t.Fatal(err)
	}
	urls := []string{"detached", "bad", "bad.git", "half", "half/",
		"nosuffix", "nosuffix/", "./nosuffix", d + "/nosuffix", "file://" + d + "/nosuffix",
		"file://" + d + "/my%20repos/proj.git", "file://localhost" + d + "/my repos/proj.git",
		"file://anyhost" + d + "/my%20repos/proj", "file://" + d + "/my%20repos/pro%6A",
		"co", "co/.git", "file://" + d + "/co", "both", "both.git", "both/", "./a:b", "a:b", d + "/a:b",
		"sep", "sep/.git", "nb", "nb.git", "plain", "missing", "FILE://" + d + "/co", "file:" + d + "/co",
		"file://" + d, "file://" + d + "/",
		"[vendor]/brk.git", "u@[h]/brk.git", "[vendor]/brk", "[unclosed/brk.git", "vt",
	}
	for _, u := range urls {
		out, gitErr := gitT(t, d, "ls-remote", u)
		p, local := localRemotePath(u)
		gd := ""
		if local {
			if !filepath.IsAbs(p) {
				p = filepath.Join(d, p)
			}
			gd = enterRepo(p)
		}
		if (gitErr == nil) != (gd != "") {
			t.Errorf("%q: git ls-remote err=%v (%s); resolver: local=%v git dir %q", u, gitErr, strings.TrimSpace(out), local, gd)
			continue
		}
		if gd == "" {
			continue
		}
		canon, _ := filepath.EvalSymlinks(gd)
		branch, ok := repos[canon]
		if !ok {
			t.Errorf("%q: resolver found %q, not a test repository", u, gd)
			continue
		}
		if !strings.Contains(out, "refs/heads/"+branch+"\n") {
			t.Errorf("%q: resolver found %q (branch %s), git listed:\n%s", u, gd, branch, out)
		}
	}
}

// The guard takes what enter_repo takes, wherever it lies (F6: a checkout under a
// directory the scan skips; F7: the name without .git), and keeps each candidate before
// it from becoming a repository.
func TestGuardLocalRemoteResolves(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inside := func(p string) bool { return under(p, d) }
	mkRemoteRepo(t, filepath.Join(d, "build/proj.git"), "b", true, "")
	mkRemoteRepo(t, filepath.Join(d, "node_modules/a/b/c/co"), "c", false, "")
	mkRemoteRepo(t, filepath.Join(d, "sep"), "s", false, filepath.Join(d, "build/sep.d"))
	if err := os.MkdirAll(filepath.Join(d, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	// hooks linked into the tree (a script, a missing one)
	mkRemoteRepo(t, filepath.Join(d, "build/hooked.git"), "h", true, "")
	if err := os.MkdirAll(filepath.Join(d, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "scripts/hook.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, to := range map[string]string{"pre-receive": "hook.sh", "post-update": "missing.sh"} {
		if err := os.Symlink("../../../scripts/"+to, filepath.Join(d, "build/hooked.git/hooks", n)); err != nil {
			t.Fatal(err)
		}
	}
	removed := func(plan gitPlan) []string {
		var out []string
		for _, c := range plan.cleanups {
			if c.Kind == cleanup.RemoveIfCreated {
				out = append(out, c.Path)
			}
		}
		return out
	}
	for _, tc := range []struct {
		p             string
		ro, absent    []string
		commitGuarded string
	}{
		{p: d + "/build/proj", ro: []string{d + "/build/proj.git"},
			absent: []string{d + "/build/proj/.git", d + "/build/proj", d + "/build/proj.git/.git"}},
		{p: d + "/node_modules/a/b/c/co", ro: []string{d + "/node_modules/a/b/c/co/.git"}},
		{p: d + "/sep", ro: []string{d + "/sep/.git", d + "/build/sep.d"}},
		{p: d + "/build/hooked", ro: []string{d + "/build/hooked.git", d + "/scripts/hook.sh"},
			absent: []string{d + "/build/hooked/.git", d + "/build/hooked", d + "/build/hooked.git/.git", d + "/scripts/missing.sh"}},
		{p: d + "/plain", absent: []string{d + "/plain/.git", d + "/plain/HEAD", d + "/plain.git/.git", d + "/plain.git"}},
		// a checkout the scan guards in commit mode: left to it, and its worktree kept
		// from becoming a bare repository should the command break its .git
		{p: d + "/node_modules/a/b/c/co", commitGuarded: d + "/node_modules/a/b/c/co/.git",
			absent: []string{d + "/node_modules/a/b/c/co/HEAD", d + "/node_modules/a/b/c/co.git/.git", d + "/node_modules/a/b/c/co.git"}},
	} {
		plan := gitPlan{reads: gitReads{rb: newReadBudget()}}
		if tc.commitGuarded != "" {
			plan.reads.rb.commitGitDirs = map[string]bool{tc.commitGuarded: true}
		}
		if err := plan.guardLocalRemote("cfg", "remote.o.url", tc.p, "/nonexistent/.git", inside); err != nil {
			t.Errorf("%s: %v", tc.p, err)
			continue
		}
		for _, r := range tc.ro {
			if !slices.Contains(plan.readOnly, r) {
				t.Errorf("%s: %s not read-only: %q", tc.p, r, plan.readOnly)
			}
		}
		if tc.commitGuarded != "" && slices.Contains(plan.readOnly, tc.commitGuarded) {
			t.Errorf("%s: commit-mode git dir made read-only", tc.p)
		}
		if got := removed(plan); !slices.Equal(got, tc.absent) {
			t.Errorf("%s: removed if created %q, want %q", tc.p, got, tc.absent)
		}
	}
	// a symlink on the way, in the writable tree: refused
	if err := os.Symlink("build", filepath.Join(d, "ln")); err != nil {
		t.Fatal(err)
	}
	plan := gitPlan{}
	if err := plan.guardLocalRemote("cfg", "remote.o.url", d+"/ln/proj", "/nonexistent/.git", inside); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("remote through a symlink in the tree: %v, want a refusal", err)
	}
}
