package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// path_prepend goes after the caller's leading venv bin dirs; dirs the caller has are
// not repeated (F5).
func TestPrependPath(t *testing.T) {
	d := t.TempDir()
	venv := filepath.Join(d, "v")
	other := filepath.Join(d, "o") // a venv not named by VIRTUAL_ENV: found by pyvenv.cfg
	mkdirs(t, venv+"/bin", other+"/bin", d+"/plain/bin")
	if err := os.WriteFile(other+"/pyvenv.cfg", []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pre := []string{"/h/.cargo/bin", "/h/go/bin", "/usr/local/go/bin"}
	tests := []struct{ path, venv, want string }{
		{"/usr/bin:/bin", "", "/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:/usr/bin:/bin"},
		{venv + "/bin:/usr/bin", venv, venv + "/bin:/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:/usr/bin"},
		{other + "/bin:/usr/bin", "", other + "/bin:/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:/usr/bin"},
		{d + "/plain/bin:/usr/bin", "", "/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:" + d + "/plain/bin:/usr/bin"},
		{venv + "/bin:/usr/local/go/bin:/usr/bin", venv, venv + "/bin:/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:/usr/bin"},
		{"/usr/bin:" + venv + "/bin", venv, "/h/.cargo/bin:/h/go/bin:/usr/local/go/bin:/usr/bin:" + venv + "/bin"},
	}
	for _, tc := range tests {
		if got := prependPath(pre, tc.path, tc.venv); got != tc.want {
			t.Errorf("prependPath(%q, venv %q) = %q, want %q", tc.path, tc.venv, got, tc.want)
		}
	}
}

// VIRTUAL_ENV is kept only for a dir bound at its own path, not under a tmpfs (F5).
func TestVisibleDir(t *testing.T) {
	d := canonTempDir(t)
	mkdirs(t, d+"/ws/.venv", d+"/home/.venv")
	mounts := []specs.Mount{
		{Destination: d + "/ws", Type: "bind", Source: d + "/ws"},
		{Destination: d + "/home", Type: "tmpfs", Source: "tmpfs"},
		{Destination: "/elsewhere", Type: "bind", Source: d + "/home"},
	}
	if !visibleDir(d+"/ws/.venv", mounts) {
		t.Errorf("a venv in the workspace is not visible")
	}
	if visibleDir(d+"/home/.venv", mounts) {
		t.Errorf("a venv under the private HOME tmpfs is visible")
	}
	if visibleDir(d+"/ws/missing", mounts) || visibleDir("relative", mounts) {
		t.Errorf("a missing or relative dir is visible")
	}
}

// An optional bind the caller cannot reach is absent; isAbsent sees EACCES through
// the *Error canonical returns (F6).
func TestIsAbsent(t *testing.T) {
	if !isAbsent(errorf("ro", "/x", nil, "does not exist")) {
		t.Errorf("ENOENT not absent")
	}
	if !isAbsent(errorf("ro", "/root/go/pkg/mod", &fs.PathError{Op: "lstat", Path: "/root/go", Err: syscall.EACCES}, "cannot resolve")) {
		t.Errorf("EACCES not absent")
	}
	if isAbsent(errorf("ro", "/x", syscall.ELOOP, "cannot resolve")) {
		t.Errorf("ELOOP absent")
	}
}

// The chain walk records every link and the dirs a ".." leaves, as the kernel resolves
// them (F4).
func TestResolveChain(t *testing.T) {
	d := canonTempDir(t)
	mkdirs(t, d+"/run/systemd/resolve", d+"/run/resolvconf", d+"/etc", d+"/var")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(d+"/run/systemd/resolve/stub", []byte("x"), 0o644))
	must(os.Symlink(d+"/run", d+"/var/run"))
	must(os.Symlink(d+"/run/systemd/resolve", d+"/run/rdir"))
	must(os.Symlink("../systemd/resolve/stub", d+"/run/resolvconf/chain"))
	must(os.Symlink("../var/run/rdir/../../resolvconf/chain", d+"/etc/resolv.conf"))
	hops, dotdot, target, err := resolveChain(newResolver(), d+"/etc/resolv.conf")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hops {
		got = append(got, strings.TrimPrefix(h.path, d)+"->"+strings.ReplaceAll(h.text, d, ""))
	}
	want := []string{"/etc/resolv.conf->../var/run/rdir/../../resolvconf/chain", "/var/run->/run",
		"/run/rdir->/run/systemd/resolve", "/run/resolvconf/chain->../systemd/resolve/stub"}
	if !slices.Equal(got, want) {
		t.Errorf("hops %q, want %q", got, want)
	}
	if target != d+"/run/systemd/resolve/stub" {
		t.Errorf("target %s", target)
	}
	if want := []string{d + "/etc", d + "/run/systemd/resolve", d + "/run/systemd", d + "/run/resolvconf"}; !slices.Equal(dotdot, want) {
		t.Errorf("dirs left by '..' %q, want %q", dotdot, want)
	}
	if real, err := filepath.EvalSymlinks(d + "/etc/resolv.conf"); err != nil || real != target {
		t.Errorf("EvalSymlinks gives %s, %v", real, err)
	}
	must(os.Symlink("loop", d+"/loop"))
	if _, _, _, err := resolveChain(newResolver(), d+"/loop"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a link loop: %v", err)
	}
}

// The identity rule's pieces: mountinfo escapes, the place of a path, the relations.
func TestAliasPieces(t *testing.T) {
	if got := unescapeMountinfo(`/a\040b\134c\011`); got != "/a b\\c\t" {
		t.Errorf("unescape: %q", got)
	}
	ms := []mountEntry{{"8:1", "/", "/"}, {"8:1", "/etc/apt", "/srv/alias"}, {"0:5", "/", "/srv/alias/t"}, {"8:1", "/root", "/srv/alias/t"}}
	for _, tc := range []struct{ p, dev, path string }{
		{"/etc", "8:1", "/etc"},
		{"/srv/alias/sources.list.d", "8:1", "/etc/apt/sources.list.d"},
		{"/srv/alias/t/x", "8:1", "/root/x"}, // the mount on top
	} {
		pl, ok := placeOf(ms, tc.p)
		if !ok || pl.dev != tc.dev || pl.path != tc.path {
			t.Errorf("placeOf(%s) = %+v, want %s %s", tc.p, pl, tc.dev, tc.path)
		}
	}
	for _, tc := range []struct {
		m          mountEntry
		path, want string
	}{
		{mountEntry{"8:1", "/", "/srv/host"}, "/etc", "/srv/host/etc"},
		{mountEntry{"8:1", "/etc/apt", "/srv/alias"}, "/etc/apt/x", "/srv/alias/x"},
		{mountEntry{"8:1", "/etc/apt", "/srv/alias"}, "/etc", ""},
		{mountEntry{"8:1", "/etc/apt", "/srv/alias"}, "/etc/aptx", ""},
	} {
		got, ok := nameAt(tc.m, tc.path)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("nameAt(%+v, %s) = %q %v, want %q", tc.m, tc.path, got, ok, tc.want)
		}
	}
	h := fakeHost("/")
	for _, tc := range []struct {
		x    string
		want bool
	}{
		{"/", true}, {"/home", true}, {"/etc/apt", true}, {"/var/tmp/ws", false}, {"/var", true},
		{"/home/gosbx-test-nobody/src", false}, {"/home/gosbx-test-nobody/.ssh/k", true},
	} {
		if got := holdsRefused("rw", tc.x, h, []string{"/home/gosbx-test-nobody/.ssh"}) != nil; got != tc.want {
			t.Errorf("holdsRefused(%s) = %v", tc.x, got)
		}
	}
}

// A plain workspace (no alias) passes the identity rule: no false refusal from the
// mount table (F3; the aliases themselves: integration TestWorkspaceBindAliasRefused,
// in a mount namespace of its own).
func TestRefusedAliasPlain(t *testing.T) {
	d := canonTempDir(t)
	mkdirs(t, d+"/ws")
	if err := refusedAlias("workspace", d+"/ws", fakeHost(d), []string{d + "/creds"}); err != nil {
		t.Errorf("a plain workspace refused: %v", err)
	}
}
