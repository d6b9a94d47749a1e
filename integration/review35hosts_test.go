package integration

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxHostsNotPlanted: a hosts file of the right name and size planted in the
// caller's runtime directory by another user is not bound over the sandbox's
// /etc/hosts: not when the file is another uid's (in a runtime directory of the
// caller's: it is written anew, the sandbox's name still resolves), not when the runtime
// directory itself is another uid's (the finding's /tmp/gosbx-UID made first by an
// attacker: the sandbox sees the host's file). Both resolve github.com as the host does
// (attack review 35 F1: before, the sandbox resolved it to the planted 6.6.6.6).
func TestSandboxHostsNotPlanted(t *testing.T) {
	host, err := os.ReadFile("/etc/hosts")
	must(t, err)
	if strings.Contains(string(host), "6.6.6.6") {
		t.Skip("the host's /etc/hosts names 6.6.6.6")
	}
	want := append([]byte(nil), host...)
	if len(want) > 0 && want[len(want)-1] != '\n' {
		want = append(want, '\n')
	}
	want = append(want, "# the sandbox's own name (gosbx)\n127.0.1.1\tgosbx\n"...)
	sum := sha256.Sum256(want)
	name := "hosts-" + hex.EncodeToString(sum[:12])
	planted := []byte("6.6.6.6 github.com\n")
	planted = append(planted, bytes.Repeat([]byte("#"), len(want)-len(planted)-1)...)
	planted = append(planted, '\n')
	const attacker = 4242

	plant := func(t *testing.T, s *sandbox, rundirOwner int) (rt, p string) {
		rt = filepath.Join(s.base, "rt")
		must(t, os.Mkdir(rt, 0o700))
		s.chown(rt)
		rd := filepath.Join(rt, "gosbx")
		must(t, os.Mkdir(rd, 0o700))
		must(t, os.Lchown(rd, rundirOwner, rundirOwner))
		d := filepath.Join(rd, "hosts")
		must(t, os.Mkdir(d, 0o700))
		must(t, os.Lchown(d, rundirOwner, rundirOwner))
		p = filepath.Join(d, name)
		must(t, os.WriteFile(p, planted, 0o644))
		must(t, os.Lchown(p, attacker, attacker))
		return rt, p
	}
	script := `getent hosts github.com; echo "github=$?"; getent hosts gosbx; echo "self=$?"`
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, tc := range []struct {
			name         string
			rundirOwner  int
			selfResolves bool
		}{
			{"file-of-another-uid", c.uid, true},
			{"rundir-of-another-uid", attacker, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := newSandbox(t, c)
				rt, p := plant(t, s, tc.rundirOwner)
				ctx := s.limitCtx(runLimit)
				cmd := s.command(ctx, "--", shellPath, "-c", script)
				cmd.Env = s.env("XDG_RUNTIME_DIR=" + rt)
				r := s.runCmd(ctx, cmd)
				if strings.Contains(r.stdout, "6.6.6.6") || !strings.Contains(r.stdout, "github=2") {
					t.Errorf("the sandbox resolved github.com through the planted hosts file %s (want as the host: not found):\n%v", p, r)
				}
				if tc.selfResolves && !strings.Contains(r.stdout, "127.0.1.1") {
					t.Errorf("the sandbox's name did not resolve (want the hosts file written anew):\n%v", r)
				}
				if tc.selfResolves {
					if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
						t.Errorf("%s after the launch: %q (%v), want the sandbox's hosts file", p, got, err)
					}
				}
			})
		}
	})
}
