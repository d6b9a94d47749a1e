package integration

import (
	"strings"
	"testing"
)

// TestGitCommitUserRefsKept: the shadow-ref guard keeps the user's own refs that
// existed at launch (attack review 32 F2). A branch origin-fix (not under
// refs/heads/origin/) and a branch origin/feature, both loose at launch, survive a
// `git pack-refs --all` inside; the user's checked-out branch origin/feature that the
// command commits to is put back to the user's commit, not deleted. Before, both
// branches were removed ("removed the ref the command made"), and git log on the
// checked-out one said the branch had no commits.
func TestGitCommitUserRefsKept(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, cmd := range []string{"git pack-refs --all", "git " + gitID + " commit -qam agent"} {
			t.Run(strings.Fields(cmd)[len(strings.Fields(cmd))-2], func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "user")
				s.hostGit(s.ws, "remote", "add", "origin", "https://example.invalid/x.git")
				s.hostGit(s.ws, "branch", "origin-fix")
				s.hostGit(s.ws, "checkout", "-q", "-b", "origin/feature")
				s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "user feature")
				want, err := s.hostGitOut(s.ws, "rev-parse", "refs/heads/origin/feature")
				if err != nil {
					t.Fatal(err)
				}
				r := s.sh([]string{"--policy", s.commitPolicy()}, "set -e; echo agent >> tracked.txt; "+cmd)
				mustSucceed(t, r, cmd)
				for _, ref := range []string{"refs/heads/origin-fix", "refs/heads/main"} {
					if _, err := s.hostGitOut(s.ws, "rev-parse", "--verify", "-q", ref); err != nil {
						t.Errorf("the user's %s is gone\n%v", ref, r)
					}
				}
				if got, err := s.hostGitOut(s.ws, "rev-parse", "refs/heads/origin/feature"); err != nil || got != want {
					t.Errorf("the user's origin/feature is %q (%v), want %q as at launch\n%v", got, err, want, r)
				}
				if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "user feature" {
					t.Errorf("git log on the user's branch: %q %v\n%v", out, err, r)
				}
			})
		}
	})
}
