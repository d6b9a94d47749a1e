package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Local remotes resolved as git's transport resolves them, and guarded wherever they
// lie (attack review 29 F6, F7, F9, F17): the command writes a pre-receive hook into
// each repository the host's git push reaches; after the run the host pushes to every
// remote and no hook of the command's may have run.

// plantHooks is a script that writes, for each git dir given after the marker
// directory, a pre-receive hook writing the marker <out>/<n> (n its position), and
// says WROTE <dir> when the write took.
const plantHooks = `out=$1; shift; n=0
for d in "$@"; do n=$((n+1))
mkdir -p "$d/hooks" 2>/dev/null; printf '#!/bin/sh\necho PWNED > %s/%s\n' "$out" $n > "$d/hooks/pre-receive" 2>/dev/null && chmod +x "$d/hooks/pre-receive" && echo "WROTE $d"
done; true`

// markerDir makes the directory the planted hooks would write to, outside the
// workspace, writable by the host's git for any caller.
func markerDir(t *testing.T, s *sandbox) string {
	out := filepath.Join(s.base, "out")
	must(t, os.Mkdir(out, 0o777))
	must(t, os.Chmod(out, 0o777))
	return out
}

// noMarkers fails the test for each marker a planted hook wrote.
func noMarkers(t *testing.T, out string, r result) {
	t.Helper()
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		t.Errorf("the host's git push ran a hook the command wrote (marker %s)\n%v", e.Name(), r)
	}
}

// F6: a local remote that is a checkout (not bare) under a directory the scan skips,
// and one deeper than the scan goes: its .git is read-only all the same.
func TestLocalRemoteCheckoutUnscanned(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		out := markerDir(t, s)
		skipped := filepath.Join(s.ws, "build/mirrors/x/origin")
		deep := filepath.Join(s.ws, "a/b/c/d/origin")
		s.newRepo(skipped, "skipped")
		s.newRepo(deep, "deep")
		repo := filepath.Join(s.ws, "repo")
		s.newRepo(repo, "repo")
		s.hostGit(repo, "remote", "add", "origin", skipped)
		s.hostGit(repo, "remote", "add", "deep", "../a/b/c/d/origin")
		r := s.sh(nil, plantHooks, out, skipped+"/.git", deep+"/.git")
		mustSucceed(t, r, "write the remotes' hooks")
		if strings.Contains(r.stdout, "WROTE") {
			t.Errorf("the command wrote a hook into a local remote's .git\n%v", r)
		}
		for _, remote := range []string{"origin", "deep"} {
			if o, err := s.hostGitOut(repo, "push", "-q", remote, "HEAD:refs/heads/feature"); err != nil {
				t.Errorf("the host's push to %s: %v\n%s", remote, err, o)
			}
		}
		noMarkers(t, out, r)
	})
}

// F7: a remote named without the ".git" git finds it by (git clone /x/proj of
// proj.git): proj.git is read-only, and the script in the tree one of its hooks links
// to; and a repository the command makes at a name git tries first (proj itself) is
// gone after the run.
func TestLocalRemoteSuffixFound(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	out := markerDir(t, s)
	build := filepath.Join(s.ws, "build")
	must(t, os.Mkdir(build, 0o755))
	s.hostGit(build, "init", "-q", "--bare", "proj.git")
	repo := filepath.Join(s.ws, "repo")
	s.newRepo(repo, "repo")
	s.hostGit(repo, "remote", "add", "origin", filepath.Join(build, "proj"))
	// and a hook of proj.git's that is a link to a script in the tree
	s.writeWS("scripts/hook.sh", "#!/bin/sh\ntrue\n", 0o755)
	must(t, os.Symlink("../../../scripts/hook.sh", filepath.Join(build, "proj.git/hooks/post-receive")))
	r := s.sh(nil, `git init -q --bare build/proj && echo MADE; printf 'echo PWNED > %s/link\n' "$1" >> scripts/hook.sh && echo APPENDED; `+plantHooks, out, build+"/proj.git", build+"/proj")
	mustSucceed(t, r, "write the remote's hooks")
	if strings.Contains(r.stdout, "WROTE "+build+"/proj.git") {
		t.Errorf("the command wrote a hook into proj.git\n%v", r)
	}
	if strings.Contains(r.stdout, "APPENDED") {
		t.Errorf("the command rewrote the script proj.git's hook links to\n%v", r)
	}
	if !strings.Contains(r.stdout, "MADE") {
		t.Errorf("the command could not make build/proj (a test of its removal)\n%v", r)
	}
	if _, err := os.Lstat(filepath.Join(build, "proj")); err == nil {
		t.Errorf("the repository the command made at build/proj is left\n%v", r)
	}
	if o, err := s.hostGitOut(repo, "push", "-q", "origin", "HEAD:refs/heads/main"); err != nil {
		t.Errorf("the host's push: %v\n%s", err, o)
	}
	noMarkers(t, out, r)
}

// F9: file:// URLs as git reads them: %-escapes decoded, a host part (localhost, any)
// dropped.
func TestLocalRemoteFileURL(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	out := markerDir(t, s)
	dir := filepath.Join(s.ws, "build/my repos")
	must(t, os.MkdirAll(dir, 0o755))
	s.hostGit(dir, "init", "-q", "--bare", "proj.git")
	repo := filepath.Join(s.ws, "repo")
	s.newRepo(repo, "repo")
	s.hostGit(repo, "remote", "add", "origin", "file://"+s.ws+"/build/my%20repos/proj.git")
	s.hostGit(repo, "remote", "add", "o2", "file://localhost"+dir+"/proj.git")
	r := s.sh(nil, plantHooks, out, dir+"/proj.git")
	mustSucceed(t, r, "write the remote's hooks")
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the command wrote a hook into the file:// remote\n%v", r)
	}
	for _, remote := range []string{"origin", "o2"} {
		if o, err := s.hostGitOut(repo, "push", "-q", remote, "HEAD:refs/heads/"+remote); err != nil {
			t.Errorf("the host's push to %s: %v\n%s", remote, err, o)
		}
	}
	noMarkers(t, out, r)
}

// F17: the local remotes of a repository that holds the workspace from above.
func TestLocalRemoteEnclosing(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	out := markerDir(t, s)
	enc := filepath.Join(s.base, "enc")
	s.newRepo(enc, "enc")
	ws := filepath.Join(enc, "ws")
	must(t, os.MkdirAll(filepath.Join(ws, "build"), 0o755))
	s.hostGit(filepath.Join(ws, "build"), "init", "-q", "--bare", "up.git")
	s.hostGit(enc, "remote", "add", "origin", "ws/build/up.git")
	ctx := s.limitCtx(runLimit)
	r := s.runCmd(ctx, s.rawCommand(ctx, "exec", "--workspace", ws, "--", shellPath, "-c", plantHooks, "_", out, ws+"/build/up.git"))
	mustSucceed(t, r, "write the remote's hooks")
	if strings.Contains(r.stdout, "WROTE") {
		t.Errorf("the command wrote a hook into the enclosing repository's remote\n%v", r)
	}
	if o, err := s.hostGitOut(enc, "push", "-q", "origin", "HEAD:refs/heads/main"); err != nil {
		t.Errorf("the host's push: %v\n%s", err, o)
	}
	noMarkers(t, out, r)
}

// A local remote the guard cannot resolve safely (through a symlink the command could
// repoint) refuses the launch, naming the remote; and clones of the workspace's own
// repository and of its linked worktree leave both committable in commit mode (their
// remotes are the scan's commit-mode git dirs, not made read-only).
func TestLocalRemoteRefusedAndCommitMode(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	s.newRepo(s.ws, "ws")
	build := filepath.Join(s.ws, "build")
	must(t, os.Mkdir(build, 0o755))
	s.hostGit(build, "init", "-q", "--bare", "up.git")
	must(t, os.Symlink("build", filepath.Join(s.ws, "ln")))
	s.hostGit(s.ws, "remote", "add", "up", filepath.Join(s.ws, "ln/up.git"))
	r := s.sh(nil, "true")
	if r.code != 125 || !strings.Contains(r.stderr, "remote.up.url") || !strings.Contains(r.stderr, "symlink") {
		t.Errorf("a local remote through a symlink in the workspace: want 125 naming remote.up.url\n%v", r)
	}
	s.hostGit(s.ws, "remote", "remove", "up")
	must(t, os.Remove(filepath.Join(s.ws, "ln")))
	clone := filepath.Join(s.ws, "tmp/clone")
	s.hostGit(s.ws, "clone", "-q", s.ws, clone)
	// and a linked worktree that a second clone names
	s.hostGit(s.ws, "worktree", "add", "-q", "-b", "wt", "tmp/wt")
	s.hostGit(s.ws, "clone", "-q", filepath.Join(s.ws, "tmp/wt"), filepath.Join(s.ws, "tmp/clone2"))
	r = s.sh([]string{"--policy", s.commitPolicy()}, `echo v2 > tracked.txt && git -c user.name=a -c user.email=a@a commit -qam agent &&
cd tmp/wt && echo v3 > tracked.txt && git -c user.name=a -c user.email=a@a commit -qam agent && echo COMMITTED`)
	mustSucceed(t, r, "commit in the workspace whose clone names it as a remote")
	if !strings.Contains(r.stdout, "COMMITTED") {
		t.Errorf("commit mode broken by the clone's remote\n%v", r)
	}
}
