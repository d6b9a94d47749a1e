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
