package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A repository the command makes at a submodule path of a protected repository (one
// .gitmodules names, never checked out) would have its config run by the user's next
// git status in the parent, which recurses into populated submodules: its .git is
// removed when the sandbox ends, and the status says so. In commit mode the same holds
// for .git/config.worktree (read with extensions.worktreeConfig).
func TestGitPlantedSubmoduleRepo(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				s.newRepo(s.ws, "base")
				sha := strings.TrimSpace(mustGitOut(s, s.ws, "rev-parse", "HEAD"))
				s.hostGit(s.ws, "update-index", "--add", "--cacheinfo", "160000,"+sha+",vendor/lib")
				must(t, os.WriteFile(filepath.Join(s.ws, ".gitmodules"), []byte("[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = https://example.invalid/lib\n"), 0o644))
				s.chown(filepath.Join(s.ws, ".gitmodules"))
				s.hostGit(s.ws, "add", ".gitmodules")
				s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "submodule")
				lib := filepath.Join(s.ws, "vendor", "lib")
				must(t, os.MkdirAll(lib, 0o755))
				s.chown(filepath.Join(s.ws, "vendor"))
				s.chown(lib)
				pwned := filepath.Join(s.base, "PWNED-"+mode)
				var flags []string
				script := `cd vendor/lib && git init -q . && git config core.fsmonitor "touch $1; false" && echo PLANTED`
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
					script += ` && cd ../.. && printf '[core]\n\tfsmonitor = "touch $1-wt; false"\n' > .git/config.worktree && echo WT`
				}
				r := s.run(append(flags, "--status-fd", "2", "--", shellPath, "-c", script, "_", pwned)...)
				if !strings.Contains(r.stdout, "PLANTED") {
					t.Fatalf("the command could not make its repository: the test exercises nothing\n%v", r)
				}
				if _, err := os.Lstat(filepath.Join(lib, ".git")); err == nil {
					t.Errorf("the planted %s/.git outlived the sandbox", lib)
				}
				if mode == "commit" {
					if !strings.Contains(r.stdout, "WT") {
						t.Errorf("the command could not write .git/config.worktree: that part exercises nothing\n%v", r)
					}
					if _, err := os.Lstat(filepath.Join(s.ws, ".git", "config.worktree")); err == nil {
						t.Errorf("the planted .git/config.worktree outlived the sandbox")
					}
				}
				if !strings.Contains(r.stderr, `"removed"`) || !strings.Contains(r.stderr, "vendor/lib/.git") {
					t.Errorf("the status does not say what was removed:\n%s", r.stderr)
				}
				out, _ := s.hostGitOut(s.ws, "-c", "extensions.worktreeConfig=true", "status", "--short")
				for _, p := range []string{pwned, pwned + "-wt"} {
					if _, err := os.Lstat(p); err == nil {
						t.Errorf("the user's git status ran the command's fsmonitor (%s exists)\n%s", p, out)
					}
				}
			})
		}
	})
}

func mustGitOut(s *sandbox, dir string, args ...string) string {
	s.t.Helper()
	out, err := s.hostGitOut(dir, args...)
	if err != nil {
		s.t.Fatalf("host git %v: %v\n%s", args, err, out)
	}
	return out
}
