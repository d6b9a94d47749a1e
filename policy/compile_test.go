package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// fakeHost is a non-root caller whose home is a directory that does not exist on disk,
// working in dir.
func fakeHost(dir string) Host {
	return Host{
		UID: 1234, GID: 5678,
		Home:    "/home/gosbx-test-nobody",
		Homes:   []string{"/home/gosbx-test-nobody"},
		Cwd:     dir,
		Environ: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"},
	}
}

// canonTempDir is t.TempDir() with symlinks resolved (TMPDIR may be a symlink).
func canonTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdirs(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func mustCompile(t *testing.T, o Options, h Host) *config.Config {
	t.Helper()
	if o.Args == nil {
		o.Args = []string{"true"}
	}
	s, err := Compile(o, h)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", o, err)
	}
	return s
}

// policyError asserts err is a *Error for field and returns it.
func policyError(t *testing.T, err error, field string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("Compile succeeded; want a %q error", field)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *policy.Error", err, err)
	}
	if pe.Field != field {
		t.Fatalf("error %q has Field %q; want %q", err, pe.Field, field)
	}
	if !strings.HasPrefix(pe.Error(), field) {
		t.Errorf("message %q does not start with the field %q", pe.Error(), field)
	}
	return pe
}

func findMount(s *config.Config, dest string) (int, *specs.Mount) {
	for i := range s.Mounts {
		if s.Mounts[i].Destination == dest {
			return i, &s.Mounts[i]
		}
	}
	return -1, nil
}

func annotationLinks(t *testing.T, s *config.Config) []config.Symlink {
	t.Helper()
	if len(s.Symlinks) == 0 {
		t.Fatal("no symlinks")
	}
	return s.Symlinks
}

func envMap(t *testing.T, env []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("env entry %q has no '='", kv)
		}
		if _, dup := m[k]; dup {
			t.Errorf("variable %s set twice in %q", k, env)
		}
		m[k] = v
	}
	return m
}

func TestCompileNoCommand(t *testing.T) {
	dir := canonTempDir(t)
	for _, args := range [][]string{nil, {}, {""}} {
		_, err := Compile(Options{Args: args, Workspace: dir}, fakeHost(dir))
		policyError(t, err, "command")
	}
}

func TestWorkspaceRefused(t *testing.T) {
	base := canonTempDir(t)
	home := filepath.Join(base, "users", "alice")
	file := filepath.Join(base, "file")
	mkdirs(t, home, filepath.Join(base, "rel"), filepath.Join(base, "repo", ".git", "hooks"))
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h := fakeHost(base)
	h.Home, h.Homes = home, []string{home}

	tests := []struct {
		name, ws string
		cwd      string // Host.Cwd; base if empty
		path     string // want Error.Path; not checked if empty
		reason   string // substring of the message
	}{
		{name: "root", ws: "/", reason: "root file system"},
		{name: "usr", ws: "/usr", reason: "system directory"},
		{name: "etc", ws: "/etc", reason: "system directory"},
		{name: "tmp", ws: "/tmp", reason: "system directory"},
		{name: "var tmp", ws: "/var/tmp", reason: "system directory"},
		{name: "dot-dot to root", ws: "/usr/../", reason: "root file system"},
		{name: "home", ws: home, path: home, reason: "home directory"},
		{name: "home parent", ws: filepath.Join(base, "users"), reason: "home directory"},
		{name: "home grandparent", ws: base, reason: "home directory"},
		{name: "home with trailing slash", ws: home + "/", reason: "home directory"},
		{name: "file", ws: file, path: file, reason: "not a directory"},
		{name: "missing", ws: filepath.Join(base, "missing"), path: filepath.Join(base, "missing"), reason: "does not exist"},
		{name: "relative missing", ws: "nope", path: filepath.Join(base, "nope"), reason: "does not exist"},
		{name: "relative resolves to home", ws: "users/alice", path: home, reason: "home directory"},
		{name: "relative file", ws: "file", path: file, reason: "not a directory"},
		{name: "empty means cwd: home", ws: "", cwd: home, reason: "home directory"},
		{name: "proc", ws: "/proc/self", reason: "/proc"},
		{name: "sys", ws: "/sys/kernel", reason: "/sys"},
		{name: "dev shm", ws: "/dev/shm", reason: "/dev"},
		{name: "beneath /usr", ws: "/usr/share", reason: "system directory /usr"},
		{name: "a .git directory", ws: filepath.Join(base, "repo", ".git"), reason: ".git"},
		{name: "inside a .git directory", ws: filepath.Join(base, "repo", ".git", "hooks"), reason: ".git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ws != "" && filepath.IsAbs(tt.ws) {
				if _, err := os.Stat(tt.ws); err != nil && !strings.HasPrefix(tt.ws, base) {
					t.Skipf("%s: %v", tt.ws, err)
				}
			}
			hh := h
			if tt.cwd != "" {
				hh.Cwd = tt.cwd
			}
			_, err := Compile(Options{Args: []string{"true"}, Workspace: tt.ws}, hh)
			pe := policyError(t, err, "workspace")
			if tt.path != "" && pe.Path != tt.path {
				t.Errorf("Path = %q; want %q", pe.Path, tt.path)
			}
			if !strings.Contains(pe.Error(), tt.reason) {
				t.Errorf("message %q does not mention %q", pe.Error(), tt.reason)
			}
		})
	}
}

func TestWorkspaceAccepted(t *testing.T) {
	base := canonTempDir(t)
	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "proj")
	other := filepath.Join(base, "other")
	mkdirs(t, proj, other)
	h := fakeHost(base)
	h.Home, h.Homes = home, []string{home}

	tests := []struct {
		name, ws, cwd, want string
	}{
		{"absolute inside home", proj, base, proj},
		{"relative to cwd", "proj", home, proj},
		{"dot-dot", "proj/../../other", home, other},
		{"empty is cwd", "", proj, proj},
		{"trailing slash", other + "/", base, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h
			hh.Cwd = tt.cwd
			s := mustCompile(t, Options{Workspace: tt.ws}, hh)
			_, m := findMount(s, tt.want)
			if m == nil {
				t.Fatalf("no mount at %s in %+v", tt.want, s.Mounts)
			}
			if m.Type != "bind" || m.Source != tt.want || slices.Contains(m.Options, "ro") {
				t.Errorf("workspace mount = %+v; want a read-write bind of %s", *m, tt.want)
			}
			for _, o := range []string{"nosuid", "nodev"} {
				if !slices.Contains(m.Options, o) {
					t.Errorf("workspace mount options %q lack %s", m.Options, o)
				}
			}
		})
	}
}

func TestSymlinkedWorkspace(t *testing.T) {
	base := canonTempDir(t)
	real := filepath.Join(base, "real", "proj")
	mkdirs(t, filepath.Join(real, ".git"))
	link := filepath.Join(base, "link")
	if err := os.Symlink("real/proj", link); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{link, "link", link + "/"} {
		t.Run(ws, func(t *testing.T) {
			s := mustCompile(t, Options{Workspace: ws}, fakeHost(base))
			if _, m := findMount(s, real); m == nil || m.Source != real {
				t.Errorf("no bind of the canonical %s: %+v", real, s.Mounts)
			}
			if _, m := findMount(s, link); m != nil {
				t.Errorf("the symlink name %s is a mount destination: %+v", link, *m)
			}
			links := annotationLinks(t, s)
			if !slices.Contains(links, mounts.Symlink{Path: link, Target: real}) {
				t.Errorf("symlink annotation %+v lacks %s -> %s", links, link, real)
			}
			if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(real, ".git")) {
				t.Errorf("ReadonlyPaths %q lack the canonical .git", s.Linux.ReadonlyPaths)
			}
		})
	}
	t.Run("canonical name adds no link", func(t *testing.T) {
		s := mustCompile(t, Options{Workspace: real}, fakeHost(base))
		for _, l := range annotationLinks(t, s) {
			if l.Target == real {
				t.Errorf("unexpected link %+v for a canonical workspace", l)
			}
		}
	})
}

// isAncestor reports whether a is a strict ancestor directory of b.
func isAncestor(a, b string) bool {
	return a == "/" && b != "/" || strings.HasPrefix(b, a+"/")
}

func checkParentsFirst(t *testing.T, s *config.Config) {
	t.Helper()
	for i, m := range s.Mounts {
		for _, later := range s.Mounts[i+1:] {
			if isAncestor(later.Destination, m.Destination) {
				t.Errorf("mount %s comes before its parent %s", m.Destination, later.Destination)
			}
		}
	}
}

// scratchFree returns a new directory that lies under none of the sandbox's own
// tmpfs (/tmp, /var/tmp, /run): the package directory is used.
func scratchFree(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(".", ".testhome-")
	if err != nil {
		t.Skipf("cannot create a directory next to the package: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	d, err = filepath.EvalSymlinks(d)
	if err == nil {
		d, err = filepath.Abs(d)
	}
	if err != nil {
		t.Fatal(err)
	}
	if under(d, "/tmp", "/var/tmp", "/run") {
		t.Skipf("the package directory %s is itself under a scratch tmpfs", d)
	}
	return d
}

func TestMountOrder(t *testing.T) {
	t.Run("workspace under /tmp", func(t *testing.T) {
		ws := canonTempDir(t)
		if !under(ws, "/tmp") {
			t.Skipf("t.TempDir() %s is not under /tmp", ws)
		}
		s := mustCompile(t, Options{Workspace: ws}, fakeHost(ws))
		checkParentsFirst(t, s)
		ti, tm := findMount(s, "/tmp")
		wi, _ := findMount(s, ws)
		if tm == nil || tm.Type != "tmpfs" || wi < 0 {
			t.Fatalf("want a tmpfs /tmp and a bind of %s; got %+v", ws, s.Mounts)
		}
		if ti > wi {
			t.Errorf("the workspace bind (#%d) comes before the /tmp tmpfs (#%d)", wi, ti)
		}
	})
	t.Run("workspace under the home", func(t *testing.T) {
		home := scratchFree(t)
		ws := filepath.Join(home, "src", "proj")
		mkdirs(t, ws)
		h := fakeHost(ws)
		h.Home, h.Homes = home, []string{home}
		s := mustCompile(t, Options{Workspace: ws}, h)
		checkParentsFirst(t, s)
		hi, hm := findMount(s, home)
		wi, _ := findMount(s, ws)
		if hm == nil || hm.Type != "tmpfs" || wi < 0 {
			t.Fatalf("want a tmpfs at the home %s and a bind of %s; got %+v", home, ws, s.Mounts)
		}
		if !slices.Contains(hm.Options, "mode=0700") {
			t.Errorf("home tmpfs options %q; want mode=0700", hm.Options)
		}
		if hi > wi {
			t.Errorf("the workspace bind (#%d) comes before the home tmpfs (#%d)", wi, hi)
		}
	})
	t.Run("extra binds and /dev", func(t *testing.T) {
		base := canonTempDir(t)
		ws := filepath.Join(base, "ws")
		inner := filepath.Join(ws, "vendor")
		outer := filepath.Join(base, "a", "b", "c")
		mkdirs(t, inner, outer)
		s := mustCompile(t, Options{Workspace: ws, ReadOnly: []string{inner}, ReadWrite: []string{outer}}, fakeHost(base))
		checkParentsFirst(t, s)
		for _, d := range []string{"/dev", "/dev/null", "/dev/pts", "/dev/shm", "/proc", "/run", "/var/tmp", inner, outer} {
			if i, _ := findMount(s, d); i < 0 {
				t.Errorf("no mount at %s", d)
			}
		}
	})
}

func TestProtectedPaths(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	rw1 := filepath.Join(base, "rw1")
	rw2 := filepath.Join(base, "rw2")
	ro := filepath.Join(base, "ro")
	// rw2 has no .git: a protected path is listed only when it exists.
	mkdirs(t, filepath.Join(ws, ".git"), filepath.Join(rw1, ".git"), rw2, filepath.Join(ro, ".git"))
	s := mustCompile(t, Options{Workspace: ws, ReadWrite: []string{rw1, "rw2"}, ReadOnly: []string{ro}}, fakeHost(base))
	for _, p := range []string{ws, rw1} {
		if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(p, ".git")) {
			t.Errorf("ReadonlyPaths %q lack %s/.git", s.Linux.ReadonlyPaths, p)
		}
	}
	if slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(rw2, ".git")) {
		t.Errorf("ReadonlyPaths %q list the missing %s/.git", s.Linux.ReadonlyPaths, rw2)
	}
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger"} {
		if !slices.Contains(s.Linux.ReadonlyPaths, p) {
			t.Errorf("ReadonlyPaths %q lack %s", s.Linux.ReadonlyPaths, p)
		}
	}
	if slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(ro, ".git")) {
		t.Errorf("a read-only bind's .git is listed needlessly")
	}
	for _, p := range []string{"/proc/kcore", "/proc/keys"} {
		if !slices.Contains(s.Linux.MaskedPaths, p) {
			t.Errorf("MaskedPaths %q lack %s", s.Linux.MaskedPaths, p)
		}
	}
	if _, m := findMount(s, ro); m == nil || !slices.Contains(m.Options, "ro") {
		t.Errorf("--ro %s: mount %+v is not read-only", ro, m)
	}
	if _, m := findMount(s, rw2); m == nil || slices.Contains(m.Options, "ro") || m.Source != rw2 {
		t.Errorf("--rw rw2 (relative): mount %+v; want a read-write bind of %s", m, rw2)
	}
}

func TestExtraBindsRefused(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	dir := filepath.Join(base, "dir")
	gitDir := filepath.Join(base, "repo", ".git")
	mkdirs(t, ws, dir, gitDir)
	tests := []struct {
		name   string
		o      Options
		field  string
		reason string
	}{
		{"ro missing", Options{ReadOnly: []string{filepath.Join(base, "missing")}}, "ro", "does not exist"},
		{"rw missing", Options{ReadWrite: []string{"missing"}}, "rw", "does not exist"},
		{"ro empty", Options{ReadOnly: []string{""}}, "ro", "empty"},
		{"ro root", Options{ReadOnly: []string{"/"}}, "ro", "root"},
		{"rw root via dot-dot", Options{ReadWrite: []string{"/usr/.."}}, "rw", "root"},
		{"rw proc", Options{ReadWrite: []string{"/proc"}}, "rw", "/proc"},
		{"ro proc self", Options{ReadOnly: []string{"/proc/self"}}, "ro", "/proc"},
		{"ro dev", Options{ReadOnly: []string{"/dev"}}, "ro", "/dev"},
		{"rw dev null", Options{ReadWrite: []string{"/dev/null"}}, "rw", "/dev"},
		{"ro and rw same dir", Options{ReadOnly: []string{dir}, ReadWrite: []string{dir}}, "mount", "already"},
		{"rw twice", Options{ReadWrite: []string{dir, dir + "/"}}, "mount", "already"},
		{"ro of the workspace", Options{ReadOnly: []string{ws}}, "mount", "already"},
		{"rw over /tmp", Options{ReadWrite: []string{"/tmp"}}, "rw", "system directory"},
		{"rw in /etc", Options{ReadWrite: []string{"/etc"}}, "rw", "system directory"},
		{"rw in /usr/share", Options{ReadWrite: []string{"/usr/share"}}, "rw", "system directory"},
		{"rw of a .git", Options{ReadWrite: []string{gitDir}}, "rw", ".git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Args = []string{"true"}
			tt.o.Workspace = ws
			_, err := Compile(tt.o, fakeHost(base))
			pe := policyError(t, err, tt.field)
			if !strings.Contains(pe.Error(), tt.reason) {
				t.Errorf("message %q does not mention %q", pe.Error(), tt.reason)
			}
		})
	}
}

func TestEnvironment(t *testing.T) {
	ws := canonTempDir(t)
	caller := []string{
		"PATH=/opt/bin:/usr/bin", "LANG=de_DE.UTF-8", "LC_ALL=C", "LC_TIME=en_GB", "TZ=Europe/Berlin",
		"TERM=xterm-256color", "HOME=/root", "TMPDIR=/var/tmp/mine", "USER=alice",
		"AWS_SECRET_ACCESS_KEY=hunter2", "GITHUB_TOKEN=ghp_x", "LD_PRELOAD=/evil.so", "LD_LIBRARY_PATH=/evil",
		"SSH_AUTH_SOCK=/run/ssh.sock", "FOO=foo-value", "BAR=bar=with=equals", "NOVALUE",
	}
	h := fakeHost(ws)
	h.Environ = caller

	tests := []struct {
		name    string
		o       Options
		environ []string // Host.Environ; caller if nil
		want    map[string]string
		absent  []string
	}{
		{
			name: "allowlist",
			want: map[string]string{"PATH": "/opt/bin:/usr/bin", "LANG": "de_DE.UTF-8", "LC_ALL": "C",
				"LC_TIME": "en_GB", "TZ": "Europe/Berlin", "TERM": "xterm-256color",
				"HOME": h.Home, "TMPDIR": "/tmp", "USER": "alice", "SHELL": "/bin/sh"},
			absent: []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "LD_PRELOAD", "LD_LIBRARY_PATH",
				"SSH_AUTH_SOCK", "FOO", "BAR", "NOVALUE"},
		},
		{
			name:   "pass-env",
			o:      Options{PassEnv: []string{"FOO", "BAR", "NOT_SET_ANYWHERE"}},
			want:   map[string]string{"FOO": "foo-value", "BAR": "bar=with=equals"},
			absent: []string{"NOT_SET_ANYWHERE", "GITHUB_TOKEN"},
		},
		{
			name: "env sets and overrides",
			o:    Options{Env: []string{"A=1", "EMPTY=", "PATH=/custom", "HOME=/elsewhere", "X=a=b", "A=2"}},
			want: map[string]string{"A": "2", "EMPTY": "", "PATH": "/custom", "HOME": "/elsewhere", "X": "a=b"},
		},
		{
			name: "env beats pass-env",
			o:    Options{PassEnv: []string{"FOO"}, Env: []string{"FOO=mine"}},
			want: map[string]string{"FOO": "mine"},
		},
		{
			name:    "default PATH",
			environ: []string{"LANG=C", "SECRET=x"},
			want:    map[string]string{"PATH": DefaultPath, "LANG": "C", "TMPDIR": "/tmp"},
			absent:  []string{"SECRET"},
		},
		{
			name:    "empty PATH is kept",
			environ: []string{"PATH="},
			want:    map[string]string{"PATH": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := h
			if tt.environ != nil {
				hh.Environ = tt.environ
			}
			tt.o.Workspace = ws
			s := mustCompile(t, tt.o, hh)
			env := envMap(t, s.Process.Env)
			for k, v := range tt.want {
				if got, ok := env[k]; !ok || got != v {
					t.Errorf("%s = %q (set: %v); want %q", k, got, ok, v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := env[k]; ok {
					t.Errorf("%s=%q leaked into the sandbox", k, v)
				}
			}
		})
	}
}

func TestEnvironmentRefused(t *testing.T) {
	ws := canonTempDir(t)
	tests := []struct {
		name  string
		o     Options
		field string
	}{
		{"env without =", Options{Env: []string{"NOEQUALS"}}, "env"},
		{"env empty key", Options{Env: []string{"=value"}}, "env"},
		{"env empty", Options{Env: []string{""}}, "env"},
		{"pass-env with =", Options{PassEnv: []string{"A=B"}}, "pass-env"},
		{"pass-env empty", Options{PassEnv: []string{""}}, "pass-env"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Args, tt.o.Workspace = []string{"true"}, ws
			_, err := Compile(tt.o, fakeHost(ws))
			policyError(t, err, tt.field)
		})
	}
}

func TestHomeDirectory(t *testing.T) {
	ws := canonTempDir(t)
	tests := []struct {
		name, home, want string
	}{
		{"ordinary", "/home/alice", "/home/alice"},
		{"unclean", "/home//alice/", "/home/alice"},
		{"empty", "", "/home/sandbox"},
		{"root dir", "/", "/home/sandbox"},
		{"relative", "alice", "/home/sandbox"},
		{"under /usr", "/usr/local/alice", "/home/sandbox"},
		{"under /proc", "/proc/1", "/home/sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := fakeHost(ws)
			h.Home, h.Homes = tt.home, nil
			s := mustCompile(t, Options{Workspace: ws}, h)
			if got := envMap(t, s.Process.Env)["HOME"]; got != tt.want {
				t.Errorf("HOME = %q; want %q", got, tt.want)
			}
			_, m := findMount(s, tt.want)
			if m == nil || m.Type != "tmpfs" {
				t.Errorf("no private tmpfs at %s: %+v", tt.want, m)
			}
		})
	}
	// A home that is itself one of the scratch tmpfs must not be mounted twice: the
	// caller's HOME=/run (or /tmp) has to compile.
	for _, home := range []string{"/tmp", "/var/tmp", "/run"} {
		t.Run("home is "+home, func(t *testing.T) {
			h := fakeHost(ws)
			h.Home, h.Homes = home, nil
			s, err := Compile(Options{Args: []string{"true"}, Workspace: ws}, h)
			if err != nil {
				t.Fatalf("Compile with HOME=%s: %v", home, err)
			}
			if got := envMap(t, s.Process.Env)["HOME"]; got != home {
				t.Errorf("HOME = %q; want %q", got, home)
			}
		})
	}
}

func TestWorkingDirectory(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	sub := filepath.Join(ws, "sub", "deeper")
	outside := filepath.Join(base, "outside")
	mkdirs(t, sub, outside)
	if err := os.Symlink(sub, filepath.Join(base, "tosub")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, cwd, chdir, want string
		refused                bool
	}{
		{name: "cwd is the workspace", cwd: ws, want: ws},
		{name: "cwd inside the workspace", cwd: sub, want: sub},
		{name: "cwd inside through a symlink", cwd: filepath.Join(base, "tosub"), want: sub},
		{name: "cwd outside", cwd: outside, want: ws},
		{name: "cwd is a prefix but not a parent", cwd: ws + "x", want: ws},
		{name: "chdir relative", cwd: outside, chdir: "sub", want: filepath.Join(ws, "sub")},
		{name: "chdir relative beats cwd", cwd: sub, chdir: ".", want: ws},
		{name: "chdir absolute", cwd: ws, chdir: "/usr/bin", want: "/usr/bin"},
		{name: "chdir unclean", cwd: ws, chdir: "sub//deeper/../deeper/", want: sub},
		{name: "chdir proc", cwd: ws, chdir: "/proc/self/cwd", refused: true},
		{name: "chdir proc itself", cwd: ws, chdir: "/proc", refused: true},
		{name: "chdir dev fd", cwd: ws, chdir: "/dev/fd/3", refused: true},
		{name: "chdir relative into proc", cwd: ws, chdir: strings.Repeat("../", 20) + "proc/1/root", refused: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Options{Args: []string{"true"}, Workspace: ws, Chdir: tt.chdir}
			s, err := Compile(o, fakeHost(tt.cwd))
			if tt.refused {
				policyError(t, err, "chdir")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.Cwd != tt.want {
				t.Errorf("Cwd = %q; want %q", s.Process.Cwd, tt.want)
			}
		})
	}
}

func hasNS(s *config.Config, typ specs.LinuxNamespaceType) bool {
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == typ {
			if ns.Path != "" {
				return false
			}
			return true
		}
	}
	return false
}

func TestNetwork(t *testing.T) {
	ws := canonTempDir(t)
	tests := []struct {
		net    string
		netns  bool
		refuse bool
	}{
		{"", true, false},
		{NetNone, true, false},
		{NetHost, false, false},
		{"bridge", false, true},
		{"None", false, true},
		{NetProxy, true, false},
		{"Proxy", false, true},
	}
	for _, tt := range tests {
		t.Run("net="+tt.net, func(t *testing.T) {
			s, err := Compile(Options{Args: []string{"true"}, Workspace: ws, Net: tt.net}, fakeHost(ws))
			if tt.refuse {
				policyError(t, err, "net")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := hasNS(s, specs.NetworkNamespace); got != tt.netns {
				t.Errorf("network namespace = %v; want %v", got, tt.netns)
			}
			for _, typ := range []specs.LinuxNamespaceType{specs.UserNamespace, specs.MountNamespace,
				specs.PIDNamespace, specs.IPCNamespace, specs.UTSNamespace, specs.CgroupNamespace} {
				if !hasNS(s, typ) {
					t.Errorf("no new %s namespace", typ)
				}
			}
		})
	}
}

func TestSecretMasks(t *testing.T) {
	ws := canonTempDir(t)
	for _, uid := range []int{0, 1000} {
		t.Run(fmt.Sprint("uid ", uid), func(t *testing.T) {
			h := fakeHost(ws)
			h.UID, h.GID = uid, uid
			s := mustCompile(t, Options{Workspace: ws}, h)
			// The secrets are masked for every caller (a root caller's sandbox most of
			// all), wherever they exist on this host.
			for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/etc/ssl/private", "/etc/sudoers", "/etc/sudoers.d"} {
				_, err := os.Lstat(p)
				if got := slices.Contains(s.Linux.MaskedPaths, p); got != (err == nil) {
					t.Errorf("uid %d: %s masked = %v; want %v (exists: %v)", uid, p, got, err == nil, err == nil)
				}
			}
			keys, _ := filepath.Glob("/etc/ssh/*_key")
			for _, k := range keys {
				if !slices.Contains(s.Linux.MaskedPaths, k) {
					t.Errorf("uid %d: host key %s not masked", uid, k)
				}
			}
			if !slices.Contains(s.Linux.MaskedPaths, "/proc/kcore") {
				t.Errorf("uid %d: /proc/kcore not masked", uid)
			}
		})
	}
}

func TestIdentityAndPrivileges(t *testing.T) {
	ws := canonTempDir(t)
	h := fakeHost(ws)
	h.UID, h.GID = 4242, 4343
	s := mustCompile(t, Options{Args: []string{"sh", "-c", "id"}, Workspace: ws, Hostname: "box"}, h)
	wantU := []specs.LinuxIDMapping{{ContainerID: 4242, HostID: 4242, Size: 1}}
	wantG := []specs.LinuxIDMapping{{ContainerID: 4343, HostID: 4343, Size: 1}}
	if !reflect.DeepEqual(s.Linux.UIDMappings, wantU) {
		t.Errorf("UIDMappings = %+v; want %+v", s.Linux.UIDMappings, wantU)
	}
	if !reflect.DeepEqual(s.Linux.GIDMappings, wantG) {
		t.Errorf("GIDMappings = %+v; want %+v", s.Linux.GIDMappings, wantG)
	}
	p := s.Process
	if p.User.UID != 4242 || p.User.GID != 4343 {
		t.Errorf("User = %+v; want 4242:4343", p.User)
	}
	if !reflect.DeepEqual(p.Args, []string{"sh", "-c", "id"}) {
		t.Errorf("Args = %q", p.Args)
	}
	if !p.NoNewPrivileges {
		t.Error("NoNewPrivileges is false")
	}
	// the OCI export says every capability is dropped, and the root read-only
	oci, err := config.ToSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	c := oci.Process.Capabilities
	if c == nil {
		t.Fatal("Capabilities is nil: the runtime would keep its defaults")
	}
	for name, set := range map[string][]string{"bounding": c.Bounding, "effective": c.Effective,
		"inheritable": c.Inheritable, "permitted": c.Permitted, "ambient": c.Ambient} {
		if len(set) != 0 {
			t.Errorf("%s capabilities = %q; want none", name, set)
		}
	}
	if oci.Root == nil || !oci.Root.Readonly {
		t.Errorf("Root = %+v; want read-only", oci.Root)
	}
	if s.Hostname != "box" {
		t.Errorf("Hostname = %q", s.Hostname)
	}
	if !slices.Contains(p.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_CORE"}) {
		t.Errorf("Rlimits %+v lack RLIMIT_CORE 0", p.Rlimits)
	}
	if s2 := mustCompile(t, Options{Workspace: ws}, h); s2.Hostname != DefaultHostname {
		t.Errorf("default Hostname = %q; want %q", s2.Hostname, DefaultHostname)
	}
}

func TestSystemRoots(t *testing.T) {
	ws := canonTempDir(t)
	s := mustCompile(t, Options{Workspace: ws}, fakeHost(ws))
	links := annotationLinks(t, s)
	for _, r := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"} {
		st, err := os.Lstat(r)
		if err != nil {
			continue
		}
		_, m := findMount(s, r)
		switch {
		case st.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(r)
			if m != nil {
				t.Errorf("%s is a symlink on the host but bound: %+v", r, *m)
			}
			if !slices.Contains(links, mounts.Symlink{Path: r, Target: target}) {
				t.Errorf("symlink %s -> %s not recreated: %+v", r, target, links)
			}
		case st.IsDir():
			if m == nil || m.Type != "bind" || m.Source != r || !slices.Contains(m.Options, "ro") {
				t.Errorf("%s: mount %+v; want a read-only bind", r, m)
			}
		}
	}
	for _, l := range []string{"/dev/fd", "/dev/stdin", "/dev/ptmx"} {
		found := false
		for _, x := range links {
			found = found || x.Path == l
		}
		if !found {
			t.Errorf("no %s symlink", l)
		}
	}
	for _, m := range s.Mounts {
		if m.Type != "bind" {
			continue
		}
		if strings.HasPrefix(m.Destination, "/dev/") {
			// device nodes need dev; read-only keeps their inodes (mode, times) unchanged
			if !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "noexec") {
				t.Errorf("device bind %s options %q lack ro,nosuid,noexec", m.Destination, m.Options)
			}
			continue
		}
		if slices.Contains(m.Options, "ro") && (!slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "nodev")) {
			t.Errorf("bind %s options %q lack nosuid,nodev", m.Destination, m.Options)
		}
	}
}

func TestSpecJSONRoundTrip(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	extra := filepath.Join(base, "extra")
	mkdirs(t, ws, extra)
	h := fakeHost(ws)
	h.UID, h.Root = 0, true
	s := mustCompile(t, Options{Args: []string{"sh", "-c", "echo \"$X\""}, Workspace: ws,
		ReadOnly: []string{extra}, Env: []string{"X=ü\n\"quoted\""}}, h)
	spec, err := config.ToSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var back specs.Spec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(b2) {
		t.Errorf("JSON not stable across a round trip:\n%s\n%s", b, b2)
	}
	if !reflect.DeepEqual(back.Mounts, s.Mounts) || !reflect.DeepEqual(back.Process.Env, s.Process.Env) ||
		!reflect.DeepEqual(back.Linux.UIDMappings, s.Linux.UIDMappings) ||
		!reflect.DeepEqual(back.Linux.Namespaces, s.Linux.Namespaces) ||
		!reflect.DeepEqual(back.Linux.ReadonlyPaths, s.Linux.ReadonlyPaths) ||
		!reflect.DeepEqual(back.Linux.MaskedPaths, s.Linux.MaskedPaths) ||
		!reflect.DeepEqual(back.Annotations, spec.Annotations) ||
		!reflect.DeepEqual(back.Process.Args, s.Process.Args) || back.Process.Cwd != s.Process.Cwd ||
		!back.Process.NoNewPrivileges || back.Hostname != s.Hostname {
		t.Errorf("spec changed across a JSON round trip:\n%+v\n%+v", s, back)
	}
	if back.Process.Capabilities == nil {
		t.Error("capabilities lost in JSON: an empty set must stay explicit")
	}
	// and the exported file is the same config again
	again, err := config.FromSpec(&back)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := config.Encode(again), config.Encode(s); !bytes.Equal(a, b) || !reflect.DeepEqual(again.RootID, s.RootID) ||
		!reflect.DeepEqual(again.Limits, s.Limits) {
		t.Errorf("FromSpec of the export differs from the config:\n%+v\n%+v", again, s)
	}
}

func TestErrorMessage(t *testing.T) {
	cause := errors.New("boom")
	tests := []struct {
		e    *Error
		want string
	}{
		{&Error{Field: "workspace", Path: "/x", Reason: "does not exist"}, "workspace /x: does not exist"},
		{&Error{Field: "net", Reason: "bad"}, "net: bad"},
		{&Error{Field: "ro", Path: "/y", Reason: "cannot resolve", Err: cause}, "ro /y: cannot resolve: boom"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
	}
	if !errors.Is(tests[2].e, cause) {
		t.Error("errors.Is does not reach the cause")
	}
}

func TestUnder(t *testing.T) {
	tests := []struct {
		p    string
		dirs []string
		want bool
	}{
		{"/tmp", []string{"/tmp"}, true},
		{"/tmp/x", []string{"/tmp"}, true},
		{"/tmpx", []string{"/tmp"}, false},
		{"/anything", []string{"/"}, true},
		{"/a/b", []string{"/c", "/a"}, true},
		{"/a", []string{"/a/b"}, false},
		{"/a", nil, false},
	}
	for _, tt := range tests {
		if got := under(tt.p, tt.dirs...); got != tt.want {
			t.Errorf("under(%q, %q) = %v; want %v", tt.p, tt.dirs, got, tt.want)
		}
	}
}

func TestCurrentHost(t *testing.T) {
	t.Setenv("HOME", "/nonexistent-gosbx-home/../gosbx-home")
	h, err := CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	if h.UID != os.Getuid() || h.GID != os.Getgid() {
		t.Errorf("ids %d:%d; want %d:%d", h.UID, h.GID, os.Getuid(), os.Getgid())
	}
	wd, _ := os.Getwd()
	if h.Cwd != wd {
		t.Errorf("Cwd = %q; want %q", h.Cwd, wd)
	}
	if h.Home != "/gosbx-home" {
		t.Errorf("Home = %q; want the cleaned $HOME", h.Home)
	}
	if len(h.Homes) == 0 || h.Homes[0] != "/gosbx-home" {
		t.Errorf("Homes = %q", h.Homes)
	}
	if !slices.Contains(h.Environ, "HOME=/nonexistent-gosbx-home/../gosbx-home") {
		t.Error("Environ lacks HOME")
	}
}

func TestNestedRepositories(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	mkdirs(t,
		filepath.Join(ws, ".git"),
		filepath.Join(ws, "a", ".git"),
		filepath.Join(ws, "a", "b", ".git"),
		filepath.Join(ws, "node_modules", "pkg", ".git"),
		filepath.Join(ws, "1", "2", "3", "4", ".git"),
	)
	s := mustCompile(t, Options{Workspace: ws}, fakeHost(base))
	for _, p := range []string{".git", "a/.git", "a/b/.git"} {
		if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(ws, p)) {
			t.Errorf("ReadonlyPaths %q lack %s", s.Linux.ReadonlyPaths, p)
		}
	}
	if slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(ws, "node_modules", "pkg", ".git")) {
		t.Error("the scan descended into node_modules")
	}
}

func TestHostname(t *testing.T) {
	ws := canonTempDir(t)
	tests := []struct {
		name string
		ok   bool
	}{
		{"box", true},
		{"my-box.example", true},
		{"A1", true},
		{"-bad", false},
		{"bad-", false},
		{"a..b", false},
		{"with space", false},
		{"semi;colon", false},
		{strings.Repeat("a", 65), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(Options{Args: []string{"true"}, Workspace: ws, Hostname: tt.name}, fakeHost(ws))
			if !tt.ok {
				policyError(t, err, "hostname")
				return
			}
			if err != nil || s.Hostname != tt.name {
				t.Errorf("Compile(hostname %q) = %v", tt.name, err)
			}
		})
	}
}
