package integration

// Issue 19 item 5: bwrap's conveniences. --ro SRC:DST and --rw SRC:DST bind a host
// path at another path inside, --symlink TARGET:PATH makes a link inside; a bind named
// through merged-usr's /bin symlink works (it failed at mount: "too many levels of
// symbolic links"). Effects checked from the host.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDestBinds(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ro := filepath.Join(s.base, "ro")
		rw := filepath.Join(s.base, "rw")
		for _, d := range []string{ro, rw} {
			must(t, os.Mkdir(d, 0o755))
			s.chown(d)
		}
		must(t, os.WriteFile(filepath.Join(ro, "in.txt"), []byte("ro-content"), 0o644))
		r := s.sh([]string{"--ro", ro + ":/opt/gosbx-ro", "--rw", rw + ":/srv/gosbx-rw", "--symlink", "/opt/gosbx-ro/in.txt:/opt/gosbx-link"},
			`cat /opt/gosbx-ro/in.txt && echo
if (echo x > /opt/gosbx-ro/new) 2>/dev/null; then echo WROTE-RO; fi
echo rw-ok > /srv/gosbx-rw/out.txt
echo "link=$(readlink /opt/gosbx-link) $(cat /opt/gosbx-link)"
if test -e "$1"; then echo SOURCE-VISIBLE; fi`, ro)
		mustSucceed(t, r, "binds at another path")
		if !strings.Contains(r.stdout, "ro-content\n") {
			t.Errorf("--ro SRC:DST: the source's file not readable at DST:\n%v", r)
		}
		if strings.Contains(r.stdout, "WROTE-RO") {
			t.Errorf("--ro SRC:DST is writable inside")
		}
		if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
			t.Errorf("a write to the --ro SRC:DST bind reached the host")
		}
		if b, _ := os.ReadFile(filepath.Join(rw, "out.txt")); string(b) != "rw-ok\n" {
			t.Errorf("a write at the --rw SRC:DST destination did not reach the source on the host: %q", b)
		}
		if !strings.Contains(r.stdout, "link=/opt/gosbx-ro/in.txt ro-content") {
			t.Errorf("--symlink: no link inside saying its target:\n%v", r)
		}
		if strings.Contains(r.stdout, "SOURCE-VISIBLE") {
			t.Errorf("the source is visible at its own path too; want it only at DST")
		}
		// made inside, not on the host
		for _, p := range []string{"/opt/gosbx-ro", "/srv/gosbx-rw", "/opt/gosbx-link"} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host after the run", p)
			}
		}
	})
}

// A destination or link inside a bind would be created on the host: refused (125),
// nothing made.
func TestDestBindsRefused(t *testing.T) {
	s := newSandbox(t, rootCaller)
	src := filepath.Join(s.base, "src")
	must(t, os.Mkdir(src, 0o755))
	for _, flags := range [][]string{
		{"--ro", src + ":" + filepath.Join(s.ws, "in-ws")},
		{"--rw", src + ":/usr/gosbx-it"},
		{"--symlink", "/etc:" + filepath.Join(s.ws, "link")},
		{"--ro", src + ":relative"},
	} {
		r := s.run(append(flags, "--", "true")...)
		if r.code != 125 {
			t.Errorf("%q: exit %d; want 125\n%v", flags, r.code, r)
		}
	}
	for _, p := range []string{filepath.Join(s.ws, "in-ws"), filepath.Join(s.ws, "link"), "/usr/gosbx-it"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was made on the host", p)
		}
	}
}

// --ro /bin/false on a merged-usr host: the source is resolved on the host (/usr/bin/false)
// and /bin/false reaches it inside.
func TestBindThroughMergedUsr(t *testing.T) {
	if l, err := os.Readlink("/bin"); err != nil || l != "usr/bin" {
		t.Skip("/bin is not merged-usr's symlink here")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--ro", "/bin/false", "--", "/bin/false")
		if r.code != 1 {
			t.Errorf("--ro /bin/false -- /bin/false: exit %d; want 1 (false ran)\n%v", r.code, r)
		}
	})
}
