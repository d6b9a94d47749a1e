package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Attack review 27 (F7, F8): what commit mode's after-run cleanup must not skip.

// deepPlant is a script that commits on a branch 40 directories deep and makes its
// reflog a symlink to $1 (review 27 F7: the host's next git commit there appended or
// created $1 through it).
const deepPlant = `b=$(printf 'd/%.0s' $(seq 40))feature && git checkout -q -b "$b" &&
git -c user.name=a -c user.email=a@b commit -q --allow-empty -m deep && ln -sf "$1" ".git/logs/refs/heads/$b" && echo PLANTED`

// checkNoDeepLink checks, on the host, that no symlink is left in the git dir gd and
// that the host's git, committing there, writes nothing at victim.
func checkNoDeepLink(t *testing.T, s *sandbox, gd, victim string, r result) {
	t.Helper()
	filepath.Walk(gd, func(p string, i os.FileInfo, err error) error {
		if err == nil && i.Mode()&os.ModeSymlink != 0 {
			t.Errorf("a symlink is left in the git dir after the run: %s\n%v", p, r)
		}
		return nil
	})
	if !strings.Contains(r.stderr, "removed") {
		t.Errorf("the removal is not said on stderr\n%v", r)
	}
	s.hostGitOut(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--amend", "--no-edit", "--allow-empty")
	s.hostGitOut(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "host")
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("the host's git wrote %s through a symlink the command left", victim)
	}
}

// TestGitModeCommitDeepSymlink: a symlink 40 levels down a writable git dir (deeper than
// the cleanup walks) does not survive the run: the directory below the walk's depth is
// removed whole, and the host's git commit writes nothing outside. On main (a walk that
// stops at 32 levels) the symlink stays and the host's git creates the victim.
func TestGitModeCommitDeepSymlink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		victim := filepath.Join(s.base, "created")
		r := s.sh([]string{"--policy", s.commitPolicy()}, deepPlant, victim)
		mustSucceed(t, r, "plant a deep symlink")
		checkNoDeepLink(t, s, filepath.Join(s.ws, ".git"), victim, r)
	})
}

// TestGitSessionDeepSymlink: the same in a session, by the per-request cleanup (before
// the request returns, not at session stop).
func TestGitSessionDeepSymlink(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		e.start("g", "--policy", e.commitPolicy())
		victim := filepath.Join(e.base, "created")
		r := e.in("g", nil, strings.ReplaceAll(deepPlant, `"$1"`, `"`+victim+`"`))
		mustSucceed(t, r, "plant a deep symlink")
		checkNoDeepLink(t, e.sandbox, filepath.Join(e.ws, ".git"), victim, r)
	})
}

// replacePlant commits X (tracked.txt: evil) and a benign twin Y with the same message,
// then tries every way to make refs/replace/X name Y: git replace (a loose ref), a line
// in packed-refs, a refs directory renamed and made again. It prints REPLACED when the
// sandbox's git shows Y's content for X, and X.
const replacePlant = `echo evil > tracked.txt && git -c user.name=a -c user.email=a@b commit -qam tidy && X=$(git rev-parse HEAD) &&
Y=$(git -c user.name=a -c user.email=a@b commit-tree -p HEAD~1 -m tidy "HEAD~1^{tree}") &&
(git replace "$X" "$Y" 2>/dev/null && echo LOOSE; true) &&
echo "$Y refs/replace/$X" >> .git/packed-refs &&
(mv .git/refs .git/refs.old 2>/dev/null && mkdir -p .git/refs/replace && cp -a .git/refs.old/heads .git/refs.old/tags .git/refs/ && echo "$Y" > ".git/refs/replace/$X" && echo RENAMED; true) &&
test "$(git show HEAD:tracked.txt)" = v1 && echo REPLACED && echo "X=$X"`

// checkNoReplaceRef checks, on the host, that the repository at ws has no replace ref
// and that git shows main's real content.
func checkNoReplaceRef(t *testing.T, s *sandbox, r result) {
	t.Helper()
	if !strings.Contains(r.stdout, "REPLACED") {
		t.Fatalf("the plant did not take inside the sandbox (the test shows nothing)\n%v", r)
	}
	if out, err := s.hostGitOut(s.ws, "for-each-ref", "refs/replace"); err != nil || out != "" {
		t.Errorf("replace refs on the host after the run: %q (%v)\n%v", out, err, r)
	}
	if out, err := s.hostGitOut(s.ws, "show", "main:tracked.txt"); err != nil || out != "evil\n" {
		t.Errorf("the host's git shows main:tracked.txt as %q (%v), not its real content\n%v", out, err, r)
	}
	if !strings.Contains(r.stderr, "gosbx: note: removed the replace ref") {
		t.Errorf("the removal is not said on stderr\n%v", r)
	}
}

// TestGitModeCommitReplaceRefs: replace refs the command adds (review 27 F8), however
// it adds them, are gone after the run, said on stderr, and the host's git shows the
// real content. On main refs/replace is writable and nothing removes it: the host's
// git shows the benign twin while a push sends the real commit.
func TestGitModeCommitReplaceRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		r := s.sh([]string{"--policy", s.commitPolicy()}, replacePlant)
		mustSucceed(t, r, "plant replace refs")
		checkNoReplaceRef(t, s, r)
	})
}

// TestGitSessionReplaceRefs: the same in a session, by the per-request cleanup.
func TestGitSessionReplaceRefs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		e.start("g", "--policy", e.commitPolicy())
		r := e.in("g", nil, replacePlant)
		mustSucceed(t, r, "plant replace refs")
		checkNoReplaceRef(t, e.sandbox, r)
	})
}
