package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// effError asserts err is a *Error for field.
func effError(t *testing.T, err error, field, reason string) {
	t.Helper()
	pe := policyError(t, err, field)
	if !strings.Contains(pe.Error(), reason) {
		t.Errorf("message %q does not mention %q", pe.Error(), reason)
	}
}

func TestEffectiveFlagsRefused(t *testing.T) {
	ws := canonTempDir(t)
	no := false
	tests := []struct {
		name   string
		pol    func(p *Policy)
		o      Options
		field  string
		reason string
	}{
		{"host network", func(p *Policy) { p.Network.AllowHost = &no }, Options{Net: NetHost}, "net", "network.allow_host"},
		{"extra hosts", func(p *Policy) { p.Network.AllowExtraHosts = &no }, Options{AllowHosts: []string{"pypi.org"}}, "allow-host", "network.allow_extra_hosts"},
		{"extra read-write", func(p *Policy) { p.Filesystem.AllowExtraReadWrite = &no }, Options{ReadWrite: []string{ws}}, "rw", "allow_extra_read_write"},
		{"extra read-only", func(p *Policy) { p.Filesystem.AllowExtraReadOnly = &no }, Options{ReadOnly: []string{"/opt"}}, "ro", "allow_extra_read_only"},
		{"extra env", func(p *Policy) { p.Environment.AllowExtra = &no }, Options{Env: []string{"A=1"}}, "env", "allow_extra"},
		{"extra pass-env", func(p *Policy) { p.Environment.AllowExtra = &no }, Options{PassEnv: []string{"A"}}, "env", "allow_extra"},
		{"longer timeout", func(p *Policy) { p.Process.Timeout = "10m" }, Options{Timeout: 11 * time.Minute}, "timeout", "longer"},
		{"unknown net", func(p *Policy) {}, Options{Net: "wifi"}, "net", "wifi"},
		{"bad hostname", func(p *Policy) {}, Options{Hostname: "a b"}, "hostname", "a b"},
		{"bad policy hostname", func(p *Policy) { p.Process.Hostname = "-x" }, Options{}, "hostname", "-x"},
		{"empty ro", func(p *Policy) {}, Options{ReadOnly: []string{""}}, "ro", "empty"},
		{"empty rw", func(p *Policy) {}, Options{ReadWrite: []string{""}}, "rw", "empty"},
		{"bad variable in a policy", func(p *Policy) { p.Filesystem.Masked = append(p.Filesystem.Masked, "${nope}") }, Options{}, "masked", "unknown variable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := Builtin("agent")
			tt.pol(p)
			tt.o.Policy, tt.o.Workspace = p, ws
			_, err := Effective(tt.o, fakeHost(ws))
			effError(t, err, tt.field, tt.reason)
		})
	}
}

func TestEffectiveFlagsAllowed(t *testing.T) {
	ws := canonTempDir(t)
	no := false
	p, _ := Builtin("agent")
	p.Process.Timeout = "10m"
	p.Filesystem.AllowExtraReadOnly = &no // does not affect the other flags

	tests := []struct {
		name  string
		o     Options
		check func(t *testing.T, e *Policy)
	}{
		{"shorter timeout", Options{Timeout: time.Minute}, func(t *testing.T, e *Policy) {
			if e.Timeout() != time.Minute {
				t.Errorf("timeout %v; want 1m", e.Timeout())
			}
		}},
		{"equal timeout", Options{Timeout: 10 * time.Minute}, func(t *testing.T, e *Policy) {
			if e.Timeout() != 10*time.Minute {
				t.Errorf("timeout %v", e.Timeout())
			}
		}},
		{"no timeout flag keeps the policy's", Options{}, func(t *testing.T, e *Policy) {
			if e.Timeout() != 10*time.Minute {
				t.Errorf("timeout %v", e.Timeout())
			}
		}},
		{"host network", Options{Net: NetHost}, func(t *testing.T, e *Policy) {
			if e.Network.Mode != NetHost {
				t.Errorf("network %q", e.Network.Mode)
			}
		}},
		{"default network", Options{}, func(t *testing.T, e *Policy) {
			if e.Network.Mode != NetNone {
				t.Errorf("network %q", e.Network.Mode)
			}
		}},
		{"env and hostname", Options{Env: []string{"A=1"}, PassEnv: []string{"B"}, Hostname: "box"}, func(t *testing.T, e *Policy) {
			if e.Environment.Set["A"] != "1" || !slices.Contains(e.Environment.Pass, "B") || e.Process.Hostname != "box" {
				t.Errorf("environment %+v, hostname %q", e.Environment, e.Process.Hostname)
			}
		}},
		{"rw", Options{ReadWrite: []string{"sub"}}, func(t *testing.T, e *Policy) {
			if !slices.ContainsFunc(e.Filesystem.ReadWrite, func(b Bind) bool { return b.Path == filepath.Join(ws, "sub") }) {
				t.Errorf("read_write %v lacks the relative --rw made absolute", e.Filesystem.ReadWrite)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Policy, tt.o.Workspace = p, ws
			e, err := Effective(tt.o, fakeHost(ws))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}

	// A policy with no timeout takes any.
	q, _ := Builtin("agent")
	e, err := Effective(Options{Policy: q, Workspace: ws, Timeout: 100 * time.Hour}, fakeHost(ws))
	if err != nil || e.Timeout() != 100*time.Hour {
		t.Errorf("no policy timeout: %v, %v", e, err)
	}
	// Effective leaves the policy it was given alone.
	if q.Process.Timeout != "" || len(q.Environment.Set) != 0 {
		t.Errorf("Effective changed its input: %+v", q)
	}
	// nil means the agent profile.
	if e, err := Effective(Options{Workspace: ws}, fakeHost(ws)); err != nil || !slices.Contains(e.Filesystem.Protected, ".git") {
		t.Errorf("nil policy: %v, %v", e, err)
	}
}

func TestEffectiveDoesNotAliasInput(t *testing.T) {
	ws := canonTempDir(t)
	p := mustParse(t, "extends: agent\nenvironment:\n  set:\n    A: ${home}\n")
	before := p.Environment.Set["A"]
	ro := p.Filesystem.ReadOnly[0].Path
	if _, err := Effective(Options{Policy: p, Workspace: ws, Env: []string{"B=2"}, ReadOnly: []string{"/opt"}}, fakeHost(ws)); err != nil {
		t.Fatal(err)
	}
	if p.Environment.Set["A"] != before || p.Environment.Set["B"] != "" || p.Filesystem.ReadOnly[0].Path != ro {
		t.Errorf("Effective changed the policy it was given: %+v", p.Environment.Set)
	}
	for _, b := range p.Filesystem.ReadOnly {
		if b.Path == "/opt" {
			t.Error("--ro was added to the caller's policy")
		}
	}
}

func TestEffectiveExpansion(t *testing.T) {
	base := canonTempDir(t)
	home := filepath.Join(base, "home")
	ws := filepath.Join(base, "ws")
	mkdirs(t, home, ws)
	h := fakeHost(ws)
	h.UID, h.Home, h.Homes = 4321, home, []string{home}

	p := mustParse(t, `filesystem:
  read_only: ["${home}/.gitconfig", "~/.cargo/bin", "${workspace}/vendor", "/data/${uid}"]
  read_write: ["${workspace}/../cache-${uid}"]
  tmpfs: ["${home}", {path: "/scratch/${uid}", mode: "0700"}]
  masked: ["${workspace}/.env", "~/secret"]
  credentials: ["~/.ssh", "${home}/.aws"]
environment:
  set:
    CACHE: ${workspace}/.cache
    ME: uid ${uid} at ~/x
    TILDE: ~/bin
  path: ${home}/bin:/usr/bin
  path_prepend: ["${workspace}/.venv/bin", "~/go/bin"]
process:
  cwd: ${workspace}/sub
`)
	e, err := Effective(Options{Policy: p, Env: []string{"LIT=${home}/x", "LIT2=~/y"}, ReadOnly: []string{"~/extra"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	f := e.Filesystem
	paths := func(bs []Bind) []string {
		var out []string
		for _, b := range bs {
			out = append(out, b.Path)
		}
		return out
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s = %q; want %q", what, got, want)
		}
	}
	check("read_only", paths(f.ReadOnly), []string{home + "/.gitconfig", home + "/.cargo/bin", ws + "/vendor", "/data/4321", home + "/extra"})
	check("read_write", paths(f.ReadWrite), []string{base + "/cache-4321"})
	check("tmpfs", []string{f.Tmpfs[0].Path, f.Tmpfs[1].Path}, []string{home, "/scratch/4321"})
	check("masked", f.Masked, []string{ws + "/.env", home + "/secret"})
	check("credentials", f.Credentials, []string{home + "/.ssh", home + "/.aws"})
	check("path_prepend", e.Environment.PathPrepend, []string{ws + "/.venv/bin", home + "/go/bin"})
	if got := e.Environment.Path; got != home+"/bin:/usr/bin" {
		t.Errorf("path = %q", got)
	}
	want := map[string]string{
		"CACHE": ws + "/.cache",
		"ME":    "uid 4321 at ~/x", // ~ expands only at the start
		"TILDE": home + "/bin",
		"LIT":   "${home}/x", // --env values are the caller's, taken as they are
		"LIT2":  "~/y",
	}
	for k, v := range want {
		if got := e.Environment.Set[k]; got != v {
			t.Errorf("set.%s = %q; want %q", k, got, v)
		}
	}
	if e.Process.Cwd != ws+"/sub" {
		t.Errorf("cwd = %q", e.Process.Cwd)
	}
	if e.Workspace.Path != ws {
		t.Errorf("workspace = %q", e.Workspace.Path)
	}
	for _, s := range append(append(paths(f.ReadOnly), f.Masked...), e.Environment.PathPrepend...) {
		if strings.Contains(s, "${") || strings.HasPrefix(s, "~") {
			t.Errorf("%q not expanded", s)
		}
	}
}

func TestEffectiveHomeFallback(t *testing.T) {
	ws := canonTempDir(t)
	p := mustParse(t, "filesystem:\n  read_only: [\"${home}/x\"]\n")
	for _, home := range []string{"", "/", "relative"} {
		h := fakeHost(ws)
		h.Home, h.Homes = home, nil
		e, err := Effective(Options{Policy: p, Workspace: ws}, h)
		if err != nil {
			t.Fatalf("home %q: %v", home, err)
		}
		if got := e.Filesystem.ReadOnly[0].Path; got != fallbackHome+"/x" {
			t.Errorf("home %q: ${home}/x = %q; want %s/x", home, got, fallbackHome)
		}
	}
}

func TestEffectiveWorkspaceFromPolicy(t *testing.T) {
	base := canonTempDir(t)
	home := filepath.Join(base, "home")
	proj := filepath.Join(home, "src", "app")
	other := filepath.Join(base, "other")
	mkdirs(t, proj, other)
	h := fakeHost(other)
	h.Home, h.Homes = home, []string{home}
	p := mustParse(t, "workspace:\n  path: ~/src/app\n")

	e, err := Effective(Options{Policy: p}, h)
	if err != nil {
		t.Fatal(err)
	}
	if e.Workspace.Path != proj {
		t.Errorf("workspace = %q; want the policy's %s", e.Workspace.Path, proj)
	}
	// The flag wins.
	if e, err = Effective(Options{Policy: p, Workspace: other}, h); err != nil || e.Workspace.Path != other {
		t.Errorf("--workspace: %v, %v", e, err)
	}
	// Without either, the current directory.
	if e, err = Effective(Options{}, h); err != nil || e.Workspace.Path != other {
		t.Errorf("default: %v, %v", e, err)
	}
	// The compiled spec binds it.
	s := mustCompile(t, Options{Policy: p}, h)
	if _, m := findMount(s, proj); m == nil || m.Source != proj {
		t.Errorf("no bind of the policy's workspace %s", proj)
	}
	// A policy workspace that does not exist is refused.
	q := mustParse(t, "workspace:\n  path: ${home}/missing\n")
	_, err = Effective(Options{Policy: q}, h)
	effError(t, err, "workspace", "does not exist")
}

func TestEffectiveCredentials(t *testing.T) {
	base := canonTempDir(t)
	home := filepath.Join(base, "home")
	ssh := filepath.Join(home, ".ssh")
	keys := filepath.Join(base, "keys") // ~/.aws is a symlink to it
	proj := filepath.Join(home, "proj")
	mkdirs(t, filepath.Join(ssh, "sub"), keys, filepath.Join(proj, "secrets"))
	if err := os.Symlink(keys, filepath.Join(home, ".aws")); err != nil {
		t.Fatal(err)
	}
	h := fakeHost(base)
	h.Home, h.Homes = home, []string{home}
	// Without Homes, the home itself is refused only because it holds credentials.
	bare := h
	bare.Homes = nil

	custom := mustParse(t, "extends: agent\nfilesystem:\n  credentials: [\"${home}/proj/secrets\"]\n")
	tests := []struct {
		name   string
		pol    *Policy
		h      Host
		o      Options
		field  string
		reason string
	}{
		{"is a credential dir", nil, h, Options{Workspace: ssh}, "workspace", ssh},
		{"lies in one", nil, h, Options{Workspace: filepath.Join(ssh, "sub")}, "workspace", ssh},
		{"holds one", nil, bare, Options{Workspace: home}, "workspace", "credential path"},
		{"is one through a symlink", nil, h, Options{Workspace: keys}, "workspace", "credential path " + keys},
		{"holds a policy's credential", custom, h, Options{Workspace: proj}, "workspace", "filesystem.credentials"},
		{"rw of a credential dir", nil, h, Options{Workspace: proj, ReadWrite: []string{ssh}}, "rw", "credential path"},
		{"rw holding one", nil, bare, Options{Workspace: proj, ReadWrite: []string{home}}, "rw", "credential path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Policy, tt.o.Args = tt.pol, []string{"true"}
			_, err := Compile(tt.o, tt.h)
			effError(t, err, tt.field, tt.reason)
		})
	}
	// A project next to the credentials is fine, also read-only binds of them.
	mustCompile(t, Options{Workspace: proj}, h)
	if _, err := Compile(Options{Args: []string{"true"}, Workspace: proj, ReadOnly: []string{ssh}}, h); err != nil {
		t.Errorf("--ro of ~/.ssh: %v", err)
	}
}

// A bind a file names that its extends' profile has too is listed once (the trial's
// `extends: build` plus ~/.gitconfig showed it twice): required if either requires it.
func TestEffectiveDedupesBinds(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	p, err := Parse([]byte("extends: build\nfilesystem:\n  read_only: [~/.gitconfig, "+home+"/.gitconfig]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eff, err := Effective(Options{Policy: p, Workspace: ws, Args: []string{"true"}}, Host{Home: home, Homes: []string{home}, Cwd: ws, UID: os.Getuid(), GID: os.Getgid()})
	if err != nil {
		t.Fatal(err)
	}
	var got []Bind
	for _, b := range eff.Filesystem.ReadOnly {
		if b.Path == filepath.Join(home, ".gitconfig") {
			got = append(got, b)
		}
	}
	if len(got) != 1 || got[0].Optional {
		t.Errorf("~/.gitconfig binds: %+v; want one, required", got)
	}
	if d := dedupeBinds([]Bind{{Path: "/a", Optional: true}, {Path: "/b"}, {Path: "/a", Optional: true}, {Path: "/a", Dest: "/c"}}); len(d) != 3 || !d[0].Optional || d[0].Path != "/a" || d[1].Path != "/b" {
		t.Errorf("dedupeBinds: %+v", d)
	}
}
