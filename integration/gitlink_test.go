package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A .git that is a symlink to a git dir inside the workspace (Android's repo lays
// repositories out so: app/.git -> ../.repo/projects/app.git) runs, with the real git
// dir guarded as a .git directory would be, in both git modes; a symlink the command
// puts in its place is replaced by the original after the run.
func TestGitDirSymlinkGuarded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"readonly", "commit"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				app := filepath.Join(s.ws, "app")
				s.newRepo(app, "app-commit")
				projects := filepath.Join(s.ws, ".repo", "projects")
				must(t, os.MkdirAll(projects, 0o755))
				s.chown(filepath.Join(s.ws, ".repo"))
				s.chown(projects)
				real := filepath.Join(projects, "app.git")
				must(t, os.Rename(filepath.Join(app, ".git"), real))
				must(t, os.Symlink("../.repo/projects/app.git", filepath.Join(app, ".git")))
				must(t, os.Lchown(filepath.Join(app, ".git"), c.uid, c.gid))
				cfg, err := os.ReadFile(filepath.Join(real, "config"))
				must(t, err)
				var flags []string
				if mode == "commit" {
					flags = []string{"--policy", s.commitPolicy()}
				}
				r := s.sh(flags, `cd app || exit 3
git log --oneline | grep -q app-commit && echo LOG-OK
echo x > new.txt; git add new.txt 2>/dev/null && git `+gitID+` commit -q -m inside 2>/dev/null && echo COMMITTED
(echo '[core] fsmonitor = /bin/evil' >> ../.repo/projects/app.git/config) 2>/dev/null && echo WROTE-CONFIG
(echo '#!/bin/sh' > ../.repo/projects/app.git/hooks/pre-commit) 2>/dev/null && echo WROTE-HOOK
mkdir -p ../evil.git && rm .git 2>/dev/null && ln -s ../evil.git .git && echo REPLACED
exit 0`)
				mustSucceed(t, r, "a .git symlink into the workspace")
				if !strings.Contains(r.stdout, "LOG-OK") {
					t.Errorf("git does not work through the .git symlink:\n%v", r)
				}
				if got := strings.Contains(r.stdout, "COMMITTED"); got != (mode == "commit") {
					t.Errorf("commit in %s mode: %v\n%v", mode, got, r)
				}
				if strings.Contains(r.stdout, "WROTE") {
					t.Errorf("the real git dir's config or hooks were writable:\n%v", r)
				}
				if b, _ := os.ReadFile(filepath.Join(real, "config")); string(b) != string(cfg) {
					t.Errorf("the real git dir's config changed")
				}
				if l, err := os.Readlink(filepath.Join(app, ".git")); err != nil || l != "../.repo/projects/app.git" {
					t.Errorf("after the run, app/.git is %q (%v); want the original symlink back (the command replaced it: %v)", l, err, strings.Contains(r.stdout, "REPLACED"))
				}
			})
		}
	})
}
