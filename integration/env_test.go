package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envAllowlist is the list of variables that survive (plus LC_*): the design's list (README.md, "The boundary") plus
// the caller's identity and shell (USER, LOGNAME, SHELL), which tmux and shells read.
var envAllowlist = map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "LANG": true, "TZ": true, "TERM": true,
	"USER": true, "LOGNAME": true, "SHELL": true}

// The caller's environment is cleared down to an allowlist; --env and
// --pass-env add to it.
func TestEnvironment(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--env", "GOSBX_IT_SET=set-"+s.id, "--pass-env", "GOSBX_IT_PASS", "--", "/usr/bin/env", "-0")
		cmd.Env = s.env(
			"GOSBX_IT_CANARY=canary-"+s.id,
			"AWS_SECRET_ACCESS_KEY=aws-"+s.id,
			"SSH_AUTH_SOCK=/run/gosbx-it-agent.sock",
			"LD_PRELOAD=/gosbx-it-nonexistent.so",
			"LD_LIBRARY_PATH=/gosbx-it-nonexistent",
			"GOSBX_IT_PASS=pass-"+s.id,
			"TERM=xterm-256color",
			"TZ=Europe/Paris",
			"LC_MESSAGES=C",
			"LC_ALL=C.UTF-8",
			"TMPDIR=/var/tmp/gosbx-it-caller-tmp",
			"SHELL=/gosbx-it-caller-shell-"+s.id,
			"USER=gosbx-it-user-"+s.id,
			"LOGNAME=gosbx-it-logname-"+s.id,
		)
		callerKeys := map[string]bool{}
		for _, kv := range cmd.Env {
			k, _, _ := strings.Cut(kv, "=")
			callerKeys[k] = true
		}
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "env")
		got := map[string]string{}
		for _, kv := range strings.Split(r.stdout, "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				got[k] = v
			}
		}
		allowed := func(k string) bool {
			return envAllowlist[k] || k == "GOSBX_IT_SET" || k == "GOSBX_IT_PASS" || strings.HasPrefix(k, "LC_")
		}
		for k, v := range got {
			if !allowed(k) {
				if callerKeys[k] && !strings.Contains(v, s.id) {
					t.Errorf("variable outside the contract's allowlist inside: %s=%s (set by the sandbox itself, the caller's value did not leak)", k, v)
				} else {
					t.Errorf("variable outside the allowlist inside: %s=%s", k, v)
				}
				continue
			}
			passed := k == "GOSBX_IT_SET" || k == "GOSBX_IT_PASS" || k == "SHELL" || k == "USER" || k == "LOGNAME"
			if strings.Contains(v, s.id) && !passed {
				t.Errorf("a caller secret leaked through %s=%s", k, v)
			}
		}
		want := map[string]string{
			"SHELL":         "/gosbx-it-caller-shell-" + s.id,
			"USER":          "gosbx-it-user-" + s.id,
			"LOGNAME":       "gosbx-it-logname-" + s.id,
			"LANG":          "C.UTF-8",
			"TERM":          "xterm-256color",
			"TZ":            "Europe/Paris",
			"LC_MESSAGES":   "C",
			"LC_ALL":        "C.UTF-8",
			"HOME":          c.home,
			"TMPDIR":        "/tmp",
			"GOSBX_IT_SET":  "set-" + s.id,
			"GOSBX_IT_PASS": "pass-" + s.id,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s inside = %q, want %q", k, got[k], v)
			}
		}
		if !strings.Contains(got["PATH"], "/usr/bin") {
			t.Errorf("PATH not kept: %q", got["PATH"])
		}
	})
}

// HOME is the caller's home path, private, empty (but for gosbx's ~/.profile) and writable; writes never
// reach the real home, whose files cannot be read.
func TestHomePrivate(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mark := ".gosbx-it-home-" + s.id
		_, homeErr := os.Stat(c.home)
		if c.uid == 0 {
			secret := filepath.Join(c.home, mark+"-secret")
			must(t, os.WriteFile(secret, []byte("s3cret-"+s.id), 0o644))
			t.Cleanup(func() { os.Remove(secret) })
		}
		for _, p := range []string{filepath.Join(c.home, mark), filepath.Join(c.home, ".cache", mark)} {
			t.Cleanup(func() { os.RemoveAll(p) })
		}
		r := s.sh(nil, `set -e
test "$HOME" = "$1" || { echo "HOME=$HOME"; exit 3; }
echo "LIST[$(ls -A "$HOME")]"
cat "$HOME/$2-secret" 2>/dev/null || true
mkdir -p "$HOME/.cache/$2" "$HOME/$2"
echo x > "$HOME/$2/file"
cat "$HOME/$2/file"
: > "$TMPDIR/gosbx-it-tmp"`, c.home, mark)
		mustSucceed(t, r, "HOME probes")
		// empty but for the ~/.profile gosbx writes (a login shell's PATH) and Go's
		// telemetry mode file, ~/.config/go/telemetry/mode (no telemetry child per go)
		if !strings.Contains(r.stdout, "LIST[.config\n.profile]") {
			t.Errorf("HOME holds more than gosbx's .profile and .config inside:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "s3cret") {
			t.Errorf("a file in the caller's real home was readable:\n%s", r.stdout)
		}
		for _, p := range []string{filepath.Join(c.home, mark), filepath.Join(c.home, ".cache", mark)} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("a write to HOME reached the real home: %s", p)
			}
		}
		if os.IsNotExist(homeErr) {
			if _, err := os.Lstat(c.home); err == nil {
				t.Errorf("%s did not exist on the host and does now", c.home)
			}
		}
	})
}

// A workspace inside the caller's home: HOME shows only the path to the
// workspace, which is writable; the rest of the real home stays hidden.
func TestWorkspaceInsideHome(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	c := rootCaller
	s := newSandbox(t, c)
	top, err := os.MkdirTemp(c.home, "gosbx-it-home-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(top) })
	s.ws = filepath.Join(top, "proj")
	must(t, os.Mkdir(s.ws, 0o755))
	canary := filepath.Join(c.home, ".gosbx-it-canary-"+s.id)
	must(t, os.WriteFile(canary, []byte("canary-"+s.id), 0o644))
	t.Cleanup(func() { os.Remove(canary) })
	mark := filepath.Join(c.home, ".gosbx-it-mark-"+s.id)
	t.Cleanup(func() { os.RemoveAll(mark) })

	r := s.sh(nil, `echo "HOME[$(ls -A "$HOME" | tr '\n' ' ')]"
echo "TOP[$(ls -A "$2" | tr '\n' ' ')]"
cat "$3" 2>/dev/null
echo in-ws > "$1/f"
mkdir "$4" && echo home-ok
pwd
exit 0`, s.ws, top, canary, mark)
	mustSucceed(t, r, "workspace in home")
	if want := "HOME[.config .profile " + filepath.Base(top) + " ]"; !strings.Contains(r.stdout, want) {
		t.Errorf("home inside should hold only .config (Go's telemetry mode file), .profile and the path to the workspace (%s):\n%s", want, r.stdout)
	}
	if !strings.Contains(r.stdout, "TOP[proj ]") {
		t.Errorf("the directory above the workspace should hold only the workspace:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "canary-") {
		t.Errorf("a file in the real home was readable:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "home-ok") {
		t.Errorf("HOME not writable around the workspace:\n%v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(s.ws, "f")); string(b) != "in-ws\n" {
		t.Errorf("write in the workspace inside the home did not land: %q\n%v", b, r)
	}
	if _, err := os.Lstat(mark); err == nil {
		t.Errorf("a write to HOME reached the real home")
	}
	if !strings.Contains(r.stdout, s.ws) {
		t.Errorf("command did not start in the workspace:\n%s", r.stdout)
	}
}
