package integration

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The guards of "your home" follow every name of it, not the launcher's $HOME alone
// (attack review 38 F1): with HOME=/ (a service's or container's environment) or a
// GIT_CONFIG_GLOBAL=/dev/null in the launcher's environment, the core.hooksPath of the
// passwd home's ~/.gitconfig stays read-only, so the host's git run from the account's
// login environment (HOME at the passwd home) does not run a hook the command planted
// (nor with a hooksPath under "~", which that git takes from the passwd home);
// and the passwd home's ~/.config is no workspace (it holds credential paths), nor is
// the launcher's $XDG_CONFIG_HOME. The passwd home is a tmpfs in a mount namespace of
// the test's own (unshare -m, private), so root's real files are not touched.
func TestHomeGuardsFollowPasswdHome(t *testing.T) {
	s := newSandbox(t, rootCaller)
	u, err := user.LookupId("0")
	if err != nil || !filepath.IsAbs(u.HomeDir) || u.HomeDir == "/" {
		t.Skipf("root's passwd home cannot be told (%v)", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on the host")
	}
	hookWS := filepath.Join(s.base, "hookws")
	must(t, os.MkdirAll(filepath.Join(hookWS, "hooks"), 0o755))
	ctx := s.limitCtx(3 * runLimit)
	script := `H=$1; B=$2; W=$3; G=$4
mount -t tmpfs gosbx-it "$H" || exit 77
mkdir -p "$H/.config" || exit 77
printf '[core]\n\thooksPath = %s/hooks\n' "$W" > "$H/.gitconfig" || exit 77
git init -q "$B/other" || exit 77
plant() { # case marker env...: plant a pre-commit hook through the sandbox, then commit on the host as the account's shell would
	name=$1 m=$B/ran-$1; shift
	env -i PATH=/usr/bin:/bin "$@" "$G" exec --workspace "$W" -- /bin/sh -c 'printf "#!/bin/sh\ntouch %s\n" "$1" > "$2/hooks/pre-commit" && chmod 755 "$2/hooks/pre-commit"' _ "$m" "$W" </dev/null >"$B/out-$name" 2>&1
	echo "CASE $name RC $? $(tr '\n' ' ' < "$B/out-$name")"
	env -i PATH=/usr/bin:/bin HOME="$H" git -C "$B/other" -c user.name=h -c user.email=h@h commit -q --allow-empty -m "$name" >/dev/null 2>&1
	rm -f "$W/hooks/pre-commit" 2>/dev/null
}
plant slash HOME=/
plant elsewhere HOME=/nonexistent-gosbx-it
plant devnull HOME="$H" GIT_CONFIG_GLOBAL=/dev/null
plant nosystem HOME=/ GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=
# a hooksPath under "~": the account's git takes ~ from the passwd home
mkdir -p "$H/proj/hooks" && printf '[core]\n\thooksPath = ~/proj/hooks\n' > "$H/.gitconfig" || exit 77
W=$H/proj; plant tilde HOME=/
env -i PATH=/usr/bin:/bin HOME=/ "$G" exec --workspace "$H/.config" -- /bin/sh -c 'mkdir -p "$1/gh" && echo x > "$1/gh/probe"' _ "$H/.config" </dev/null >"$B/out-creds" 2>&1
echo "CASE creds RC $? $(tr '\n' ' ' < "$B/out-creds") PROBE $(ls "$H/.config/gh/probe" 2>&1)"
`
	cmd := exec.CommandContext(ctx, "/usr/bin/unshare", "-m", "--propagation", "private", shellPath, "-c", script, "_", u.HomeDir, s.base, hookWS, gosbxBin)
	cmd.Env = s.env()
	cmd.Dir = s.base
	cmd.WaitDelay = 5 * time.Second
	r := s.runCmd(ctx, cmd)
	t.Logf("cases: %s", r.stdout)
	if r.code == 77 {
		t.Skipf("cannot make the private home here: %s", r.stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "CASE "); ok {
			name, out, _ := strings.Cut(rest, " ")
			got[name] = out
		}
	}
	for _, name := range []string{"slash", "elsewhere", "devnull", "nosystem", "tilde"} {
		if _, err := os.Lstat(filepath.Join(s.base, "ran-"+name)); err == nil {
			t.Errorf("case %s: the host's git ran the hook the command planted in the passwd home's core.hooksPath: %q", name, got[name])
		}
		if out := got[name]; out == "" {
			t.Errorf("case %s did not run:\n%v", name, r)
		}
	}
	for _, name := range []string{"creds"} {
		if out := got[name]; !strings.HasPrefix(out, "RC 125 ") || !strings.Contains(out, "credential path") {
			t.Errorf("case %s: want 125 naming the credential path, got %q", name, out)
		}
	}
	if !strings.Contains(got["creds"], "PROBE ls:") {
		t.Errorf("the command wrote the passwd home's ~/.config/gh: %q", got["creds"])
	}
}
