package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunDirAliasRefused: a bind of another name of the caller's runtime directory, made
// by a bind mount on the host, is refused as the directory's own name is (attack review
// rsess F1: `--rw ALIAS`, ALIAS a bind mount of the directory holding the runtime
// directory, ran, and the sandbox could write the session's lock file and the cleanup
// journals there; so did `--workspace ALIAS`). Refused: the alias of the directory above
// the runtime directory (as a bind and as the workspace), a path inside that alias (the
// runtime directory itself by another name), and a tree holding the alias (a recursive
// bind takes the mount along); the command does not run.
func TestRunDirAliasRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("a")
		holder := filepath.Join(e.base, "holder")
		must(t, os.Mkdir(holder, 0o755))
		alias := filepath.Join(holder, "alias")
		must(t, os.Mkdir(alias, 0o755))
		if err := unix.Mount(e.rt, alias, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("bind mount %s at %s: %v", e.rt, alias, err)
		}
		t.Cleanup(func() { unix.Unmount(alias, unix.MNT_DETACH) })
		marker := filepath.Join(e.ws, "ran")
		for _, flags := range [][]string{{"--rw", alias}, {"--ro", filepath.Join(alias, "gosbx")}, {"--ro", holder}} {
			r := e.gosbx(append(append([]string{"exec", "--workspace", e.ws}, flags...), "--", "touch", marker)...)
			if r.code != 125 || !strings.Contains(r.stderr, "runtime directory") {
				t.Errorf("exec %v: want 125 and the refusal\n%v", flags, r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("exec %v: the command ran", flags)
			}
		}
		// the alias as the workspace: the command would write there (from the host: the
		// marker dropped in the runtime directory by its real name)
		planted := filepath.Join(e.rt, "planted")
		r := e.gosbx("exec", "--workspace", alias, "--", "touch", filepath.Join(alias, "planted"))
		if r.code != 125 || !strings.Contains(r.stderr, "runtime directory") {
			t.Errorf("exec --workspace %s: want 125 and the refusal\n%v", alias, r)
		}
		if _, err := os.Lstat(planted); err == nil {
			t.Errorf("exec --workspace %s: the command wrote %s", alias, planted)
		}
		// a bind beside the alias is still allowed
		other := filepath.Join(e.base, "other")
		must(t, os.Mkdir(other, 0o755))
		mustSucceed(t, e.gosbx("exec", "--workspace", e.ws, "--ro", other, "--", "touch", marker), "exec --ro beside the alias")
	})
}
