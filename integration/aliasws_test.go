package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bind-mount alias of what the name rule refuses read-write (/, a home, a subtree of
// /etc) is refused as the workspace or --rw, and so is a workspace holding one; the
// probe each command would write lands on the host only without the refusal. A
// workspace inside the alias that the name rule allows still works (attack review 13,
// F3). The mounts are made in a mount namespace of the test's own.
func TestWorkspaceBindAliasRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		home := filepath.Join(s.base, "home")
		must(t, os.Mkdir(home, 0o755))
		s.chown(home)
		okws := filepath.Join(s.base, "okws")
		must(t, os.Mkdir(okws, 0o755))
		s.chown(okws)
		// each probe names, through the alias, a file of s.base on the host
		script := `B=$1; shift
mkdir -p "$B/alias" "$B/halias" "$B/ealias" "$B/ws2/h" || exit 77
mount --bind / "$B/alias" && mount --bind "$B/home" "$B/halias" && mount --bind /etc/apt "$B/ealias" || exit 77
mount --bind "$B/home" "$B/ws2/h" || exit 77
run() { name=$1; shift; HOME="$B/home" "$@" </dev/null >"$B/out-$name" 2>&1; echo "CASE $name RC $? $(tr '\n' ' ' < "$B/out-$name")"; }
run root "$@" exec --workspace "$B/alias" -- /bin/touch "$B/alias$B/probe-root"
run home "$@" exec --workspace "$B/halias" -- /bin/touch "$B/halias/probe-home"
run etc-rw "$@" exec --workspace "$B/okws" --rw "$B/ealias" -- /bin/true
run etc-rw-dest "$@" exec --workspace "$B/okws" --rw "$B/ealias:/x" -- /bin/true
run holds-home "$@" exec --workspace "$B/ws2" -- /bin/touch "$B/ws2/h/probe-holds"
run allowed "$@" exec --workspace "$B/alias$B/okws" -- /bin/touch "$B/alias$B/okws/probe-allowed"
`
		r := s.inPrivateMountNS(script)
		got := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if rest, ok := strings.CutPrefix(l, "CASE "); ok {
				name, out, _ := strings.Cut(rest, " ")
				got[name] = out
			}
		}
		for _, name := range []string{"root", "home", "etc-rw", "etc-rw-dest", "holds-home"} {
			out, ok := got[name]
			if !ok {
				t.Errorf("case %s did not run:\n%v", name, r)
				continue
			}
			if !strings.HasPrefix(out, "RC 125 ") || !strings.Contains(out, "refusing") || !strings.Contains(out, "alias") {
				t.Errorf("case %s: want 125 refusing an alias, got: %s", name, out)
			}
		}
		for _, p := range []string{"probe-root", "home/probe-home", "home/probe-holds"} {
			if _, err := os.Lstat(filepath.Join(s.base, p)); err == nil {
				t.Errorf("the command wrote the host through a bind-mount alias: %s exists", p)
			}
		}
		if out := got["allowed"]; !strings.HasPrefix(out, "RC 0 ") {
			t.Errorf("a workspace inside an alias of / that the name rule allows: %s", out)
		}
		if _, err := os.Lstat(filepath.Join(okws, "probe-allowed")); err != nil {
			t.Errorf("the allowed workspace's probe is missing: %v\n%v", err, r)
		}
	})
}
