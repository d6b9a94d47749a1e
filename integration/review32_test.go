package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
				if strings.Contains(cmd, "commit") && !strings.Contains(r.stderr, "put back as at launch") {
					t.Errorf("no note that the branch was put back:\n%v", r)
				}
				if out, err := s.hostGitOut(s.ws, "log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "user feature" {
					t.Errorf("git log on the user's branch: %q %v\n%v", out, err, r)
				}
			})
		}
	})
}

// TestGitCommitReplayKeepsUserObjects: a commit-mode launcher is SIGKILLed; the user
// then commits a file whose object declares more than the check's budget (300 MiB of
// zeros, 300 KB on disk); a later launch elsewhere replays the journal and leaves the
// user's object where git reads it (reported unchecked at most): only a proven
// mismatch is moved aside (attack review 32 F5: before, "an earlier sandbox's command
// created …: object moved aside", and git fsck said "missing blob").
func TestGitCommitReplayKeepsUserObjects(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		xdg, _ := runtimeDir(t, s)
		rtEnv := "XDG_RUNTIME_DIR=" + xdg
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", `touch "$1"; sleep 30`, "_", filepath.Join(s.ws, "ready"))
		cmd.Env = s.env(rtEnv)
		must(t, cmd.Start())
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(s.ws, "ready")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first command never started")
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		waitHostPIDs("gosbx-init", 5*time.Second, func(int) bool { return initsOf(s.ws) == 0 })
		os.Remove(filepath.Join(s.ws, "ready"))
		f, err := os.Create(filepath.Join(s.ws, "data.bin"))
		must(t, err)
		must(t, f.Truncate(300<<20))
		f.Close()
		s.chown(filepath.Join(s.ws, "data.bin"))
		s.hostGit(s.ws, "add", "data.bin")
		s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "user work")
		other := newSandbox(t, c)
		ctx = other.limitCtx(runLimit)
		second := other.command(ctx, "--", "true")
		second.Env = other.env(rtEnv)
		r := other.runCmd(ctx, second)
		mustSucceed(t, r, "a later launch elsewhere")
		if out, err := s.hostGitOut(s.ws, "cat-file", "-s", "HEAD:data.bin"); err != nil || strings.TrimSpace(out) != "314572800" {
			t.Errorf("the user's blob is not readable after the replay: %q %v\n%v", out, err, r)
		}
	})
}
