package policy

import (
	"path/filepath"
	"strings"
	"time"
)

// Bounds are what a policy lets a caller set for one command, recorded once the
// policy is in force (a session's, at `session start`) so that a later request is held
// to the same rules as gosbx exec's flags: Effective and Bounds.Check share each check.
type Bounds struct {
	// ExtraEnv is environment.allow_extra: whether --env may add variables.
	ExtraEnv bool `json:"extra-env"`
	// Workspace is the canonical workspace: a relative working directory is taken
	// from it.
	Workspace string `json:"workspace"`
	// Timeout is the policy's wall-clock limit (0: none); a request may only shorten it.
	Timeout time.Duration `json:"timeout"`
	// Cwd is the policy's own working directory (process.cwd, or --chdir where the
	// sandbox was built): when set, a request's Cwd does not replace it.
	Cwd string `json:"cwd,omitempty"`
}

// Request is what a command run in an existing sandbox asks beyond its args: Env
// (KEY=VALUE, --env), Chdir (--chdir; relative to the workspace) and Timeout
// (--timeout; 0: the policy's).
type Request struct {
	Env     []string
	Chdir   string
	Timeout time.Duration
	// Cwd is the caller's current directory: the working directory when Chdir is ""
	// and it lies inside the workspace (symlinks resolved), as gosbx exec's default.
	Cwd string
}

// Bounds are p's bounds for a request (p as Effective returns it).
func (p *Policy) Bounds() Bounds {
	return Bounds{ExtraEnv: allowed(p.Environment.AllowExtra), Workspace: p.Workspace.Path, Timeout: p.Timeout(), Cwd: p.Process.Cwd}
}

// Check refuses a request that b does not allow, with the *Error gosbx exec gives for
// the same flag, and returns its working directory made absolute and clean ("" keeps
// the sandbox's).
func (b Bounds) Check(r Request) (cwd string, err error) {
	if err := checkExtraEnv(b.ExtraEnv, r.Env, nil); err != nil {
		return "", err
	}
	for _, kv := range r.Env {
		if _, _, err := envFlag(kv); err != nil {
			return "", err
		}
	}
	if err := checkShorter(b.Timeout, r.Timeout); err != nil {
		return "", err
	}
	if r.Chdir == "" {
		if r.Cwd == "" || b.Cwd != "" || b.Workspace == "" || !filepath.IsAbs(r.Cwd) {
			return "", nil
		}
		// gosbx exec's default (workdir): the caller's directory if it lies inside the
		// workspace, else the workspace
		if c, err := newResolver().evalSymlinks(r.Cwd); err == nil && under(c, b.Workspace) {
			return c, nil
		}
		return b.Workspace, nil
	}
	return checkChdir(r.Chdir, b.Workspace)
}

// checkExtraEnv refuses --env and --pass-env where environment.allow_extra is false.
func checkExtraEnv(allow bool, env, pass []string) error {
	if (len(env) > 0 || len(pass) > 0) && !allow {
		return errorf("env", "", nil, "the policy does not allow extra variables (environment.allow_extra)")
	}
	return nil
}

// envFlag splits an --env KEY=VALUE.
func envFlag(kv string) (k, v string, err error) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || !validEnvName(k) {
		return "", "", errorf("env", "", nil, "want KEY=VALUE, got %q", kv)
	}
	return k, v, nil
}

// checkShorter refuses a --timeout d longer than the policy's limit (0: none).
func checkShorter(limit, d time.Duration) error {
	if d > 0 && limit > 0 && d > limit {
		return errorf("timeout", "", nil, "%v is longer than the policy's %v: a flag may only shorten it", d, limit)
	}
	return nil
}

// checkChdir is a --chdir made absolute (a relative one from the workspace ws) and
// clean, refused under /proc or /dev/fd.
func checkChdir(chdir, ws string) (string, error) {
	if !filepath.IsAbs(chdir) {
		chdir = filepath.Join(ws, chdir)
	}
	chdir = filepath.Clean(chdir)
	if under(chdir, "/proc", "/dev/fd") {
		return "", errorf("chdir", chdir, nil, "refusing a working directory under /proc or /dev/fd")
	}
	return chdir, nil
}
