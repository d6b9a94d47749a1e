package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The trial's git findings, each proved from the host: following gosbx's own git note
// (a policy with git: commit) commits as the caller's identity from their ~/.gitconfig;
// the note is only for git subcommands that write the repository and names a linked
// worktree's git dirs; a root caller's --ro repository that git refuses as of dubious
// ownership gets a note naming safe.directory, and following it works.

// runHome runs `sh -c script` in the sandbox with flags, as the caller, with HOME (and
// so gosbx's ${home}) at home.
func (s *sandbox) runHome(home string, flags []string, script string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, append(append([]string{}, flags...), "--", shellPath, "-c", script, "_")...)
	cmd.Env = s.env("HOME=" + home)
	return s.runCmd(ctx, cmd)
}

// Finding 1: a commit under the note's policy (extends: agent, git: commit) succeeds
// with no identity given inside, and its author is the one the caller's ~/.gitconfig
// names; the host's file is not reachable (git config --global writes the private
// HOME's) and stays unchanged.
func TestGitCommitNoteIdentity(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		home := filepath.Join(s.base, "home")
		must(t, os.Mkdir(home, 0o755))
		s.chown(home)
		gc := filepath.Join(home, ".gitconfig")
		cfg := "[user]\n\tname = Host Person\n\temail = host-" + s.id + "@example.com\n"
		must(t, os.WriteFile(gc, []byte(cfg), 0o644))
		s.chown(gc)

		script := `echo new > added.txt && git add added.txt && git commit -q -m "inside-` + s.id + `"`
		r := s.runHome(home, nil, script)
		if r.code == 0 || !strings.Contains(r.stderr, "`extends: agent` and `filesystem: {git: commit}`") {
			t.Fatalf("commit under git: readonly: %v; want a failure and the note's policy", r)
		}
		r = s.runHome(home, []string{"--policy", s.commitPolicy()}, script+`; rc=$?
git config --global user.name Changed
exit $rc`)
		mustSucceed(t, r, "git commit under the note's policy")
		out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%s")
		want := "Host Person <host-" + s.id + "@example.com>"
		if err != nil || strings.TrimSpace(out) != want+"|"+want+"|inside-"+s.id {
			t.Errorf("the host's last commit: %q %v; want author and committer %s", out, err, want)
		}
		if b, _ := os.ReadFile(gc); string(b) != cfg {
			t.Errorf("the host's ~/.gitconfig changed: %q", b)
		}
	})
}

// git: commit gives the command the caller's identity, not the caller's git config
// file: a ~/.gitconfig holding a token (url.insteadOf, http.extraHeader) gives the
// commit its author and committer, while inside neither git config --list nor the
// file's path shows the token (the file is not bound; HOME is the private tmpfs).
func TestGitCommitIdentityNotConfigFile(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		home := filepath.Join(s.base, "home")
		must(t, os.Mkdir(home, 0o755))
		s.chown(home)
		token := "ghp_TOKEN" + s.id
		gc := filepath.Join(home, ".gitconfig")
		cfg := "[url \"https://" + token + "@github.com/\"]\n\tinsteadOf = https://github.com/\n" +
			"[http]\n\textraHeader = Authorization: Bearer " + token + "\n" +
			"[user]\n\tname = Token Owner\n\temail = owner-" + s.id + "@example.com\n"
		must(t, os.WriteFile(gc, []byte(cfg), 0o600))
		s.chown(gc)

		// the token is not written in the script: its text is the command line
		r := s.runHome(home, []string{"--policy", s.commitPolicy()}, `echo new > added.txt && git add added.txt && git commit -q -m inside || exit 1
echo ---list; git config --list --show-origin
echo ---cat; cat `+gc+` "$HOME/.gitconfig" ~/.config/git/config
t=ghp_TOKEN; echo ---grep; grep -ars "${t}`+s.id+`" "$HOME" /tmp /proc/self/environ
exit 0`)
		mustSucceed(t, r, "git commit under git: commit with a token in ~/.gitconfig")
		if strings.Contains(r.stdout+r.stderr, token) || strings.Contains(r.stdout, "insteadof") || strings.Contains(r.stdout, "insteadOf") {
			t.Errorf("the token of the caller's ~/.gitconfig was readable inside:\n%v", r)
		}
		out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%an <%ae>|%cn <%ce>")
		want := "Token Owner <owner-" + s.id + "@example.com>"
		if err != nil || strings.TrimSpace(out) != want+"|"+want {
			t.Errorf("the host's last commit: %q %v; want author and committer %s", out, err, want)
		}
	})
}

// Finding 7 and 8: a read-only git subcommand whose non-zero exit is its answer gets no
// note (git diff --quiet, git grep -q); a writing one does, and in a linked worktree the
// note names the worktree's git dir and the repository's, as git's error does.
func TestGitNoteOnlyForWrites(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mainRepo := filepath.Join(s.base, "mainrepo")
		s.newRepo(mainRepo, "main-commit")
		s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtbranch", s.ws)
		must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("changed\n"), 0o644))
		for _, script := range []string{"git diff --quiet", "git grep -q nosuchstring-" + s.id} {
			r := s.sh(nil, script)
			if r.code != 1 || strings.Contains(r.stderr, "gosbx: note") {
				t.Errorf("%s: %v; want exit 1 and no gosbx note", script, r)
			}
		}
		r := s.sh(nil, "git stash")
		common, _ := filepath.EvalSymlinks(filepath.Join(mainRepo, ".git"))
		wtDir := filepath.Join(common, "worktrees", filepath.Base(s.ws))
		if r.code == 0 || !strings.Contains(r.stderr, "repository metadata ("+wtDir+", "+common+") is read-only") {
			t.Errorf("git stash in a linked worktree: %v; want the note naming %s and %s", r, wtDir, common)
		}
	})
}

// Finding 2: a root caller's repository bound with --ro is seen as nobody's inside, and
// git refuses it; gosbx's note names safe.directory, and following it git reads the
// repository. A non-root caller's is its own inside: git works, no note.
func TestGitOwnerNoteReadOnlyRepo(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		repo := filepath.Join(s.base, "other")
		s.newRepo(repo, "other-commit-"+s.id)
		r := s.run("--ro", repo, "--", "git", "-C", repo, "log", "--format=%s")
		if c.uid != 0 {
			mustSucceed(t, r, "git log in a --ro repository, non-root caller")
			if strings.Contains(r.stderr, "gosbx: note") {
				t.Errorf("a note for a non-root caller: %v", r)
			}
			return
		}
		if r.code == 0 || !strings.Contains(r.stderr, "dubious ownership") || !strings.Contains(r.stderr, "git -c safe.directory="+repo+" ") {
			t.Fatalf("git log in a root caller's --ro repository: %v; want git's refusal and the note naming safe.directory=%s", r, repo)
		}
		r = s.run("--ro", repo, "--", "git", "-c", "safe.directory="+repo, "-C", repo, "log", "--format=%s")
		mustSucceed(t, r, "git log with the note's safe.directory")
		if !strings.Contains(r.stdout, "other-commit-"+s.id) {
			t.Errorf("git log with the note's safe.directory: %v", r)
		}
	})
}
