package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The trial's note findings, each fix run exactly as the note prints it and its effect
// read on the host: a root caller's --ro repository read as a remote (git clone, git
// fetch), and git: commit with no git identity on the host.

// A root caller's --ro repository is nobody's inside: read as a remote, git -c
// safe.directory does not reach the upload-pack git's local transport spawns (the
// trial's finding: the note's earlier advice failed), and the note now gives a fix that
// does; for the repository itself its --env fix works. A non-root caller's repository is
// its own inside (TestGitOwnerNoteReadOnlyRepo): no note, nothing to fix.
func TestGitOwnerNoteRemoteFix(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		if c.uid != 0 {
			t.Skip("only a root caller's files are nobody's inside")
		}
		s := newSandbox(t, c)
		origin := filepath.Join(s.base, "origin")
		s.newRepo(origin, "origin-commit-"+s.id)
		s.newRepo(s.ws, "ws-commit")
		s.hostGit(s.ws, "remote", "add", "origin", origin)
		ro := []string{"--ro", origin}

		r := s.sh(ro, "git clone -q "+origin+" clone1")
		fix := regexp.MustCompile(`-- sh -c '(git config --global --add safe\.directory [^']+) && git fetch \.\.\.'`).FindStringSubmatch(r.stderr)
		if r.code == 0 || !strings.Contains(r.stderr, "dubious ownership") || fix == nil {
			t.Fatalf("git clone of a root caller's --ro repository: %v; want git's refusal and the note's fix for a remote", r)
		}
		if want := "git config --global --add safe.directory " + filepath.Join(origin, ".git"); fix[1] != want {
			t.Errorf("the note's fix for a remote: %q, want %q", fix[1], want)
		}
		// the earlier advice, for the record: -c does not reach upload-pack
		r = s.sh(ro, "git -c safe.directory="+filepath.Join(origin, ".git")+" clone -q "+origin+" clone0")
		if r.code == 0 {
			t.Errorf("git -c safe.directory worked for a clone (git's local transport changed?): %v", r)
		}
		r = s.sh(ro, fix[1]+" && git clone -q "+origin+" clone1")
		mustSucceed(t, r, "git clone with the note's fix")
		if out, err := s.hostGitOut(filepath.Join(s.ws, "clone1"), "log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "origin-commit-"+s.id {
			t.Errorf("the clone on the host: %q %v", out, err)
		}

		// a fetch writes the workspace's repository: git: commit
		ro = append(ro, "--policy", s.commitPolicy())
		r = s.sh(ro, "git fetch -q origin")
		if r.code == 0 || !strings.Contains(r.stderr, fix[0]) {
			t.Fatalf("git fetch from a root caller's --ro repository: %v; want the note's fix %s", r, fix[0])
		}
		r = s.sh(ro, fix[1]+" && git fetch -q origin")
		mustSucceed(t, r, "git fetch with the note's fix")
		// the fetched commit is in the workspace's repository; origin/main itself is put
		// back as at launch after a commit-mode run (attack review 29 F16: a command could
		// point it anywhere), so it is looked up by the origin's id
		head, _ := s.hostGitOut(origin, "rev-parse", "HEAD")
		if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s", strings.TrimSpace(head)); err != nil || strings.TrimSpace(out) != "origin-commit-"+s.id {
			t.Errorf("the origin's commit on the host after the fetch: %q %v", out, err)
		}
		if _, err := os.Stat(filepath.Join(s.base, ".gitconfig")); err == nil {
			t.Errorf("git config --global inside wrote the caller's home")
		}

		// the repository itself: the note's --env fix
		ro = ro[:2]
		r = s.run(append(ro, "--", "git", "-C", origin, "log", "--format=%s")...)
		env := regexp.MustCompile(`--env GIT_CONFIG_COUNT=1 --env GIT_CONFIG_KEY_0=safe\.directory --env GIT_CONFIG_VALUE_0=(\S+)\.`).FindStringSubmatch(r.stderr)
		if r.code == 0 || env == nil || env[1] != origin {
			t.Fatalf("git log in a root caller's --ro repository: %v; want the note's --env fix naming %s", r, origin)
		}
		r = s.run(append(ro, "--env", "GIT_CONFIG_COUNT=1", "--env", "GIT_CONFIG_KEY_0=safe.directory", "--env", "GIT_CONFIG_VALUE_0="+env[1],
			"--", "git", "-C", origin, "log", "--format=%s")...)
		mustSucceed(t, r, "git log with the note's --env fix")
		if !strings.Contains(r.stdout, "origin-commit-"+s.id) {
			t.Errorf("git log with the note's --env fix: %v", r)
		}
	})
}

// git: commit with no identity in the caller's git config: git's own advice (git config
// --global) is lost inside, so gosbx's note says where the identity comes from and how
// to give one; its --env fix makes the commit, with that identity, as the host sees.
func TestGitIdentNoteNoIdentity(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		home := filepath.Join(s.base, "home") // no git config at all
		must(t, os.Mkdir(home, 0o755))
		s.chown(home)
		flags := []string{"--policy", s.commitPolicy()}
		script := `echo new > added.txt && git add added.txt && git commit -q -m "inside-` + s.id + `"`

		r := s.runHome(home, flags, script)
		want := "gosbx: note: the command ran git, and this sandbox sets no full git identity (GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, " +
			"GIT_COMMITTER_NAME, GIT_COMMITTER_EMAIL unset): git: commit takes user.name and user.email from your git config on the host " +
			"(~/.gitconfig, ~/.config/git/config, read when the sandbox starts) and found none there. If git said \"Author identity unknown\", " +
			"its advice does not last: git config --global inside writes the sandbox's private HOME. Set them on the host, as the user who " +
			"runs gosbx: git config --global user.name NAME; git config --global user.email EMAIL. Or give them for the run: " +
			"--env GIT_AUTHOR_NAME=NAME --env GIT_AUTHOR_EMAIL=EMAIL --env GIT_COMMITTER_NAME=NAME --env GIT_COMMITTER_EMAIL=EMAIL\n"
		if r.code == 0 || !strings.Contains(r.stderr, "Author identity unknown") || !strings.Contains(r.stderr, want) {
			t.Fatalf("git commit with no identity: %v\nwant git's refusal and the note:\n%s", r, want)
		}
		fix := regexp.MustCompile(`--env GIT_AUTHOR_NAME=NAME --env GIT_AUTHOR_EMAIL=EMAIL --env GIT_COMMITTER_NAME=NAME --env GIT_COMMITTER_EMAIL=EMAIL`).FindString(r.stderr)
		name, email := "Note Follower", "follower-"+s.id+"@example.com"
		fix = strings.NewReplacer("=NAME", "="+name, "=EMAIL", "="+email).Replace(fix)
		var envFlags []string
		for _, f := range strings.Split(fix, " --env ") {
			envFlags = append(envFlags, "--env", strings.TrimPrefix(f, "--env "))
		}
		r = s.runHome(home, append(flags, envFlags...), script)
		mustSucceed(t, r, "git commit with the note's --env fix")
		if strings.Contains(r.stderr, "gosbx: note") {
			t.Errorf("a note after a successful commit: %v", r)
		}
		out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s")
		id := name + " <" + email + ">"
		if err != nil || strings.TrimSpace(out) != id+"|"+id+"|inside-"+s.id {
			t.Errorf("the host's last commit: %q %v; want author and committer %s", out, err, id)
		}
	})
}

// The readonly note does not send a subcommand that git: commit refuses too (git gc
// writes info/refs and objects/info) to git: commit: it says so, and under git: commit
// git gc indeed fails, the host's objects/info unchanged.
func TestGitReadonlyNoteGcNotCommit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		r := s.sh(nil, "git gc -q")
		if r.code == 0 || strings.Contains(r.stderr, "{git: commit}") || !strings.Contains(r.stderr, "git gc writes info/refs and objects/info, which stay read-only under git: commit too: run it outside the sandbox") {
			t.Fatalf("git gc under git: readonly: %v; want a failure and a note that git: commit does not help", r)
		}
		info := treeDigest(t, filepath.Join(s.ws, ".git", "objects", "info"))
		r = s.sh([]string{"--policy", s.commitPolicy()}, "git gc -q")
		if r.code == 0 {
			t.Errorf("git gc under git: commit succeeded; the note's claim is stale: %v", r)
		}
		if d := digestDiff(info, treeDigest(t, filepath.Join(s.ws, ".git", "objects", "info"))); len(d) > 0 {
			t.Errorf("objects/info changed under git: commit: %v", d)
		}
	})
}
