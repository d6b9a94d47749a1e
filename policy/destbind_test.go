package policy

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/gosbx/gosbx/nsinit/config"
)

// The policy forms of --ro SRC:DST, --rw SRC:DST and --symlink: a bind object's dest
// and filesystem.symlinks compile to a bind of the resolved source at dest and a link.
func TestDestBindPolicyForm(t *testing.T) {
	dir := canonTempDir(t)
	ws, src, rw := filepath.Join(dir, "ws"), filepath.Join(dir, "src"), filepath.Join(dir, "rw")
	mkdirs(t, ws, src, rw)
	p := mustParse(t, `extends: agent
filesystem:
  read_only:
    - {path: `+filepath.Join(dir, ".", "src")+`, dest: /opt/data}
  read_write:
    - {path: `+rw+`, dest: /srv/w}
  symlinks:
    - {path: /opt/link, target: /opt/data/f}
`)
	s := mustCompile(t, Options{Policy: p, Workspace: ws}, fakeHost(ws))
	for _, c := range []struct {
		src, dst string
		ro       bool
	}{{src, "/opt/data", true}, {rw, "/srv/w", false}} {
		_, m := findMount(s, c.dst)
		if m == nil || m.Source != c.src || m.Type != "bind" || slices.Contains(m.Options, "ro") != c.ro {
			t.Errorf("mount at %s = %+v; want a bind of %s (ro %v)", c.dst, m, c.src, c.ro)
		}
		if _, own := findMount(s, c.src); own != nil {
			t.Errorf("%s is bound at its own path too: %+v", c.src, own)
		}
	}
	if !slices.Contains(s.Symlinks, config.Symlink{Path: "/opt/link", Target: "/opt/data/f"}) {
		t.Errorf("symlinks %v; want /opt/link -> /opt/data/f", s.Symlinks)
	}

	// the flag forms
	s = mustCompile(t, Options{Workspace: ws, ReadOnly: []string{src + ":/opt/x"}, Symlinks: []string{"rel:/opt/y"}}, fakeHost(ws))
	if _, m := findMount(s, "/opt/x"); m == nil || m.Source != src {
		t.Errorf("--ro SRC:DST: mount %+v", m)
	}
	if !slices.Contains(s.Symlinks, config.Symlink{Path: "/opt/y", Target: "rel"}) {
		t.Errorf("--symlink: symlinks %v", s.Symlinks)
	}
	// a destination in a bind would be made on the host
	_, err := Compile(Options{Workspace: ws, ReadOnly: []string{src + ":" + filepath.Join(ws, "x")}, Args: []string{"true"}}, fakeHost(ws))
	policyError(t, err, "ro")
	_, err = Compile(Options{Workspace: ws, Symlinks: []string{"/etc:" + filepath.Join(ws, "l")}, Args: []string{"true"}}, fakeHost(ws))
	policyError(t, err, "symlink")
}

func TestSplitDest(t *testing.T) {
	for _, c := range []struct{ in, src, dst string }{
		{"/a", "/a", ""}, {"/a:/b", "/a", "/b"}, {"rel:/b", "rel", "/b"}, {"/a:b:/c", "/a:b", "/c"}, {"/a:b", "/a:b", ""},
	} {
		if s, d := splitDest(c.in); s != c.src || d != c.dst {
			t.Errorf("splitDest(%q) = %q, %q; want %q, %q", c.in, s, d, c.src, c.dst)
		}
	}
}
