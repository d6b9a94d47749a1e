package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// shadowLab is a workspace bound at its own path (read-write) and a tree beside it that
// the sandbox does not show (out), from attack review 23's repros.
type shadowLab struct {
	t       *testing.T
	ws, out string
}

func newShadowLab(t *testing.T) *shadowLab {
	root := canonTempDir(t)
	l := &shadowLab{t: t, ws: filepath.Join(root, "ws"), out: filepath.Join(root, "out")}
	mkdirs(t, l.ws, l.out)
	return l
}

// script writes an executable script at p (its directories made).
func (l *shadowLab) script(p string, mode os.FileMode) {
	l.t.Helper()
	mkdirs(l.t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+filepath.Base(filepath.Dir(p))+"\n"), 0o600); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		l.t.Fatal(err)
	}
}

func (l *shadowLab) spec(cwd, path string) *config.Config {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	return &config.Config{
		Process: &specs.Process{Env: []string{"PATH=" + path}, Cwd: cwd, User: specs.User{UID: 0, GID: 0}},
		Mounts: []specs.Mount{
			{Destination: "/", Type: "tmpfs", Source: "tmpfs"},
			{Destination: "/bin", Type: "bind", Source: "/bin", Options: []string{"rbind", "ro"}},
			{Destination: "/usr", Type: "bind", Source: "/usr", Options: []string{"rbind", "ro"}},
			{Destination: l.ws, Type: "bind", Source: l.ws, Options: []string{"rbind"}},
		},
		Linux: &config.Linux{
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: uid, Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: gid, Size: 1}},
		},
	}
}

func checkShadowed(t *testing.T, what string, spec *config.Config, wantSkipped, wantRuns string) {
	t.Helper()
	skipped, runs := Shadowed(spec, "mytool")
	if skipped != wantSkipped || runs != wantRuns {
		t.Errorf("%s: Shadowed = %q, %q; want %q, %q", what, skipped, runs, wantSkipped, wantRuns)
	}
}

// TestShadowedRelativeEntries (review 23 F1): "." and "" are the working directory
// inside, and a relative entry is taken from it, as the lookup inside does: a match
// there runs, so no refusal names a later absolute match; a working directory the
// host does not see as the sandbox does gives no verdict.
func TestShadowedRelativeEntries(t *testing.T) {
	l := newShadowLab(t)
	l.script(l.out+"/mytool", 0o755)
	mkdirs(t, l.ws+"/bin")
	if err := os.Symlink(l.out+"/mytool", l.ws+"/bin/mytool"); err != nil {
		t.Fatal(err)
	}
	l.script(l.ws+"/bin2/mytool", 0o755)
	l.script(l.ws+"/mytool", 0o755)
	rest := l.ws + "/bin:" + l.ws + "/bin2:/usr/bin"
	checkShadowed(t, "PATH=.:...", l.spec(l.ws, ".:"+rest), "", "")
	checkShadowed(t, "PATH=:...", l.spec(l.ws, ":"+rest), "", "")
	checkShadowed(t, "PATH=...:", l.spec(l.ws, "bin:bin2:"), l.ws+"/bin/mytool", l.ws+"/bin2/mytool")
	checkShadowed(t, "PATH=./bin:...", l.spec(l.ws, "./bin:"+l.ws+"/bin2"), l.ws+"/bin/mytool", l.ws+"/bin2/mytool")
	// the working directory lies where the sandbox shows nothing: what "." holds there
	// inside is not known on the host
	checkShadowed(t, "unseen working directory", l.spec(l.out, ".:"+rest), "", "")
	// the earlier absolute link still counts
	checkShadowed(t, "absolute first", l.spec(l.ws, rest+":."), l.ws+"/bin/mytool", l.ws+"/bin2/mytool")
}

// TestShadowedPermission (review 23 F2): a first match whose only x bit is its owner's,
// owned by a uid the sandbox does not map, is passed by inside (other bits) while the
// host's lookup (root) runs it: refused, with a note on its mode. Owned by the
// workspace's owner (idmapped to the command) it runs.
func TestShadowedPermission(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	l := newShadowLab(t)
	l.script(l.ws+"/bin/mytool", 0o744)
	l.script(l.ws+"/bin2/mytool", 0o755)
	spec := l.spec(l.ws, l.ws+"/bin:"+l.ws+"/bin2:/usr/bin")
	checkShadowed(t, "owner root", spec, "", "")
	for _, mode := range []os.FileMode{0o744, 0o700} {
		for _, owner := range []int{1000, 65534} {
			if err := os.Chmod(l.ws+"/bin/mytool", mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(l.ws+"/bin/mytool", owner, 0); err != nil {
				t.Fatal(err)
			}
			checkShadowed(t, "unmapped owner", spec, l.ws+"/bin/mytool", l.ws+"/bin2/mytool")
		}
	}
	hint := NotFoundContext{}.ShadowedHint(spec, "mytool", l.ws+"/bin/mytool", l.ws+"/bin2/mytool")
	for _, w := range []string{"mode 0700, owner 65534", "may not execute", "chmod a+x", "run " + l.ws + "/bin2/mytool instead"} {
		if !strings.Contains(hint, w) {
			t.Errorf("hint lacks %q: %s", w, hint)
		}
	}
	// all may execute it: it runs inside whoever owns it
	if err := os.Chmod(l.ws+"/bin/mytool", 0o755); err != nil {
		t.Fatal(err)
	}
	checkShadowed(t, "0755 unmapped owner", spec, "", "")
}

// TestShadowedSymlinkDotDot (review 23 F3): a PATH entry "l/../bin2" with l a symlink
// out of the sandbox is l's target's sibling on the host (kernel order), and dangles
// inside: the lookup inside runs the next match, so the launch is refused; the lexical
// "ws/bin2" is never looked at.
func TestShadowedSymlinkDotDot(t *testing.T) {
	l := newShadowLab(t)
	mkdirs(t, l.out+"/sub")
	l.script(l.out+"/bin2/mytool", 0o755)
	if err := os.Symlink(l.out+"/sub", l.ws+"/l"); err != nil {
		t.Fatal(err)
	}
	l.script(l.ws+"/bin/mytool", 0o755)
	entry := l.ws + "/l/../bin2"
	checkShadowed(t, "l/..", l.spec(l.ws, entry+":"+l.ws+"/bin:/usr/bin"), entry+"/mytool", l.ws+"/bin/mytool")
	// a lexical ws/bin2 that runs inside changes nothing: the entry is l's
	l.script(l.ws+"/bin2/mytool", 0o755)
	checkShadowed(t, "l/.. beside ws/bin2", l.spec(l.ws, entry+":"+l.ws+"/bin:/usr/bin"), entry+"/mytool", l.ws+"/bin/mytool")
	// l within the workspace: the same directory inside, it runs
	if err := os.Remove(l.ws + "/l"); err != nil {
		t.Fatal(err)
	}
	mkdirs(t, l.ws+"/sub")
	if err := os.Symlink("sub", l.ws+"/l"); err != nil {
		t.Fatal(err)
	}
	checkShadowed(t, "l inside", l.spec(l.ws, entry+":"+l.ws+"/bin:/usr/bin"), "", "")
}
