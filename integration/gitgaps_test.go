package integration

import (
	"context"
	"os/exec"
	"path/filepath"
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
