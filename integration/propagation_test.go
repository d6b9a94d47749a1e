package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/internal/ownmountns"
)

// On a host whose mounts are shared (systemd makes / rshared), nothing the sandbox mounts
// (its root, its masks over /etc/shadow, …) appears in the caller's mount namespace, and
// nothing the host mounts under the workspace while the command runs appears inside.
// The caller's namespace here is an `unshare -m --propagation private` copy of the test's
// whose root is then made rshared: shared as on such a host, but no peer of the host's
// mounts, so that other tests' mounts do not show in the comparison.
func TestNoPropagationOnSharedHost(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		run := gosbxBin
		if c.uid != 0 {
			run = fmt.Sprintf("/usr/bin/setpriv --reuid=%d --regid=%d --clear-groups -- %s", c.uid, c.gid, gosbxBin)
		}
		// The caller's namespace is private to the host (other tests' mounts stay out),
		// then its root is made shared within it. The command says "ready", the host then mounts a tmpfs under the workspace and
		// says "mounted"; the command looks for it in its own mount table.
		inner := `touch ready; i=0; while [ ! -e mounted ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
grep -q gosbx-prop-probe /proc/self/mountinfo && echo LEAKED_IN; exit 0`
		script := fmt.Sprintf(`set -e
mount --make-rshared /
cat /proc/self/mountinfo | cut -d' ' -f5- | sort > %[1]s/before
mkdir %[2]s/sub
cd %[2]s
%[3]s exec --workspace %[2]s -- /bin/sh -c '%[4]s' > %[1]s/out 2>&1 &
i=0; while [ ! -e %[2]s/ready ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
mount -t tmpfs gosbx-prop-probe %[2]s/sub
touch %[2]s/mounted
wait $! || echo "gosbx exit $?" >> %[1]s/out
umount %[2]s/sub
cat /proc/self/mountinfo | cut -d' ' -f5- | sort > %[1]s/after
cat %[1]s/out
`, s.base, s.ws, run, inner)
		out, err := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script).CombinedOutput()
		got := string(out)
		if err != nil {
			t.Fatalf("unshare: %v\n%s", err, got)
		}
		if strings.Contains(got, "LEAKED_IN") {
			t.Errorf("a host mount made while the command ran appeared inside the sandbox:\n%s", got)
		}
		// The tables' lines start at the mount point (field 5); a line gone whose mount
		// point was removed was detached by another test's rmdir, not by the sandbox.
		table := func(name string) []string {
			b, err := os.ReadFile(filepath.Join(s.base, name))
			if err != nil || len(b) == 0 {
				t.Fatalf("the caller's mount table %s: %v", name, err)
			}
			var out []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				out = append(out, "0 0 0:0 / "+l)
			}
			return out
		}
		if added, removed := ownmountns.Changes(table("before"), table("after")); len(added)+len(removed) > 0 {
			t.Errorf("the sandbox changed the caller's mount table: added %q, removed %q\n%s", added, removed, got)
		}
		if strings.Contains(got, "gosbx exit") {
			t.Errorf("gosbx failed:\n%s", got)
		}
	})
}
