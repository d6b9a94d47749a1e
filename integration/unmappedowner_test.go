package integration

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// uid 65534 as uid 0 of a user namespace of its own (unshare -Urm) sees the host's
// /run/gosbx, root's, owned by the overflow uid: the messages say its owner is an id
// the namespace does not map and to leave it (its sessions and journals are root's),
// never that uid 65534 made it nor to have it removed; and the directory is still
// there after (attack review 38 F2). Both a one-shot launch (the journal warning) and
// `session start` (125) are asked.
func TestUnmappedOwnerMessages(t *testing.T) {
	requireBinary(t)
	if err := os.Mkdir("/run/gosbx", 0o700); err != nil && !os.IsExist(err) {
		t.Skipf("cannot make root's /run/gosbx: %v", err)
	}
	s := newSandbox(t, nobodyCaller)
	id := strconv.Itoa(nobodyID)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"exec", []string{"exec", "--workspace", s.ws, "--", "/bin/true"}},
		{"session", []string{"session", "start", "r38unmapped-" + s.id}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := s.limitCtx(runLimit)
			args := append([]string{"--reuid=" + id, "--regid=" + id, "--clear-groups", "--", "/usr/bin/unshare", "-Urm", gosbxBin}, c.args...)
			cmd := exec.CommandContext(ctx, "/usr/bin/setpriv", args...)
			cmd.Env = s.env()
			cmd.Dir = s.base
			cmd.WaitDelay = 5 * time.Second
			r := s.runCmd(ctx, cmd)
			if strings.Contains(r.stderr, "unshare:") {
				t.Skipf("no user namespace for uid %s here: %v", id, r)
			}
			if c.name == "session" {
				if r.code != 125 {
					exec.Command("/usr/bin/setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "--", "/usr/bin/unshare", "-Urm", gosbxBin, "session", "stop", "r38unmapped-"+s.id).Run()
					t.Fatalf("session start with root's /run/gosbx unmapped: want 125, got %v", r)
				}
			}
			if !strings.Contains(r.stderr, "/run/gosbx") || !strings.Contains(r.stderr, "does not map") || !strings.Contains(r.stderr, "leave it") {
				t.Errorf("want a message naming /run/gosbx's owner as an id the namespace does not map, and to leave it: %v", r)
			}
			if strings.Contains(r.stderr, "made it") || strings.Contains(r.stderr, "removed") || strings.Contains(r.stderr, "uid 65534,") {
				t.Errorf("the message reads the overflow uid as a user or advises removing root's directory: %v", r)
			}
			if st, err := os.Stat("/run/gosbx"); err != nil || !st.IsDir() {
				t.Errorf("root's /run/gosbx is gone: %v", err)
			}
		})
	}
}
