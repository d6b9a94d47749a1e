package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// New-user trial 2026-12-02 T4: a container's root (uid 0 without CAP_SYS_ADMIN, the
// unprivileged path) in a workspace owned by uid 65534 got "Permission denied" from its
// command and no word from gosbx. A failed command in a workspace the command cannot
// write now gets a note naming the owner, the mode, the uid it runs as and the fix;
// in a workspace it can write, a failure gets none. Also for a plain unprivileged
// caller in another user's directory.
func TestWorkspaceNotWritableNote(t *testing.T) {
	requireBinary(t)
	for _, c := range []caller{nobodyCaller, rootNoAdmin} {
		t.Run(c.name, func(t *testing.T) {
			s := newSandbox(t, c)
			other := 0
			if c.uid == 0 {
				other = nobodyID
			}
			must(t, os.Chown(s.ws, other, other))
			must(t, os.Chmod(s.ws, 0o755))
			r := s.run("--", "sh", "-c", "echo r > f")
			want := fmt.Sprintf("gosbx: note: the command failed, and the workspace %s is not writable by it: it is owned by uid %d (mode 0755), and the command runs as you, uid %d", s.ws, other, c.uid)
			if r.code == 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, fmt.Sprintf("chown it to uid %d", c.uid)) {
				t.Errorf("a workspace owned by uid %d: want a failure and %q\n%v", other, want, r)
			}
			if _, err := os.Stat(s.ws + "/f"); err == nil {
				t.Errorf("the command wrote the workspace it should not write")
			}
			s.chown(s.ws)
			r = s.run("--", "sh", "-c", "echo r > f; exit 3")
			if r.code != 3 || strings.Contains(r.stderr, "not writable") {
				t.Errorf("a workspace of the caller's: want exit 3 and no note\n%v", r)
			}
		})
	}
}
