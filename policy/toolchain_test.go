package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// toolchainLab is a fake caller's machine: a home with pyenv, nvm, ~/.local/bin, a
// cargo bin and credential directories, and a workspace beside it.
type toolchainLab struct {
	t        *testing.T
	root     string
	home, ws string
}

func newToolchainLab(t *testing.T) *toolchainLab {
	root := canonTempDir(t)
	l := &toolchainLab{t: t, root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "src", "app")}
	h := l.home
	mkdirs(t, l.ws, h+"/.pyenv/shims", h+"/.pyenv/bin", h+"/.pyenv/versions/3.12.1/bin", h+"/.pyenv/versions/3.12.1/lib/python3.12",
		h+"/.pyenv/versions/3.11.0/bin", h+"/.nvm/versions/node/v20.1.0/bin", h+"/.local/bin", h+"/apps/tool-1/bin",
		h+"/.ssh", h+"/.aws/bin", h+"/.cargo/bin", h+"/.rustup/toolchains", h+"/bin", h+"/secret/bin")
	l.write(".pyenv/shims/python3", "#!/bin/sh\nexec pyenv exec python3 \"$@\"\n")
	l.write(".pyenv/versions/3.12.1/bin/python3.12", "#!/bin/sh\n")
	l.symlink("python3.12", ".pyenv/versions/3.12.1/bin/python3")
	l.write(".pyenv/versions/3.11.0/bin/python3", "#!/bin/sh\n")
	l.write(".pyenv/version", "3.11.0\n")
	l.write(".ssh/id_ed25519", "KEY")
	l.write("apps/tool-1/bin/tool", "#!/bin/sh\n")
	l.write("secret/bin/python", "#!/bin/sh\n")
	l.symlink(h+"/apps/tool-1/bin/tool", ".local/bin/tool")
	l.symlink(h+"/.ssh/id_ed25519", ".local/bin/key")
	l.symlink("loop2", ".local/bin/loop1")
	l.symlink("loop1", ".local/bin/loop2")
	return l
}

func (l *toolchainLab) write(rel, s string) {
	p := filepath.Join(l.home, rel)
	if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
		l.t.Fatal(err)
	}
}

func (l *toolchainLab) symlink(target, rel string) {
	p := rel
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.home, rel)
	}
	if err := os.Symlink(target, p); err != nil {
		l.t.Fatal(err)
	}
}

// host is a caller with this PATH (home-relative entries start with ~/) and variables.
func (l *toolchainLab) host(path string, env ...string) Host {
	h := fakeHost(l.ws)
	h.Home, h.Homes = l.home, []string{l.home}
	h.Environ = append([]string{"PATH=" + strings.ReplaceAll(path, "~", l.home)}, env...)
	return h
}

func (l *toolchainLab) effective(h Host, flags ...string) *Policy {
	l.t.Helper()
	p, err := Effective(Options{Workspace: l.ws, Toolchains: flags}, h)
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

func boundPaths(p *Policy) []string {
	var out []string
	for _, b := range p.toolchains.binds {
		out = append(out, b.Path)
	}
	return out
}

func TestToolchainPyenvVersion(t *testing.T) {
	l := newToolchainLab(t)
	v := func(s string) string { return filepath.Join(l.home, ".pyenv/versions", s) }
	cases := []struct {
		name  string
		env   []string
		file  string // .python-version in the workspace's parent
		want  []string
		skips bool
	}{
		{"global version file", nil, "", []string{v("3.11.0")}, false},
		{"local file from the workspace upward", nil, "3.12.1\n", []string{v("3.12.1")}, false},
		{"PYENV_VERSION wins", []string{"PYENV_VERSION=3.11.0"}, "3.12.1\n", []string{v("3.11.0")}, false},
		{"two versions", []string{"PYENV_VERSION=3.12.1:3.11.0"}, "", []string{v("3.12.1"), v("3.11.0")}, false},
		{"system is no version", []string{"PYENV_VERSION=system"}, "", nil, true},
		{"a version is never a path", []string{"PYENV_VERSION=../../.ssh"}, "", nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			local := filepath.Join(filepath.Dir(l.ws), ".python-version")
			os.Remove(local)
			if c.file != "" {
				if err := os.WriteFile(local, []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := l.effective(l.host("~/.pyenv/shims:~/.pyenv/bin:/usr/bin", c.env...), "auto")
			if got := boundPaths(p); !slices.Equal(got, c.want) {
				t.Fatalf("bound %q; want %q (skipped %v)", got, c.want, p.toolchains.skipped)
			}
			// the shim directory is replaced on PATH by the versions' bin directories
			var bins []string
			for _, w := range c.want {
				bins = append(bins, w+"/bin")
			}
			shims := filepath.Join(l.home, ".pyenv/shims")
			if got := p.substPath(shims + ":/usr/bin"); len(bins) > 0 && got != strings.Join(bins, ":")+":/usr/bin" {
				t.Errorf("PATH inside %q; want the versions' bin first", got)
			}
			if c.skips && len(p.toolchains.skipped) == 0 {
				t.Errorf("nothing said about the shims")
			}
			if slices.Contains(boundPaths(p), filepath.Join(l.home, ".pyenv")) {
				t.Errorf("the whole ~/.pyenv is bound")
			}
		})
	}
}

func TestToolchainRoots(t *testing.T) {
	l := newToolchainLab(t)
	h := l.home
	// a pipx app: ~/.local/bin/black -> its venv, whose python is pyenv's
	pipx := h + "/.local/share/pipx/venvs/black"
	mkdirs(t, pipx+"/bin")
	os.WriteFile(pipx+"/bin/black", []byte("#!"+pipx+"/bin/python\n"), 0o755)
	os.WriteFile(pipx+"/pyvenv.cfg", []byte("home = "+h+"/.pyenv/versions/3.12.1/bin\n"), 0o644)
	l.symlink(h+"/.pyenv/versions/3.12.1/bin/python3", pipx+"/bin/python")
	l.symlink(pipx+"/bin/black", ".local/bin/black")
	p := l.effective(l.host("~/.nvm/versions/node/v20.1.0/bin:~/.local/bin:~/.cargo/bin:~/bin:/usr/bin"), "auto")
	want := []string{h + "/.nvm/versions/node/v20.1.0", h + "/.local/bin", pipx + "/bin", pipx + "/pyvenv.cfg", h + "/.pyenv/versions/3.12.1", h + "/apps/tool-1",
		h + "/.cargo/bin", h + "/.rustup", h + "/bin"}
	if got := boundPaths(p); !slices.Equal(got, want) {
		t.Fatalf("bound %q; want %q", got, want)
	}
	skipped := map[string]string{}
	for _, s := range p.toolchains.skipped {
		skipped[s.Path] = s.Why
	}
	if why := skipped[h+"/.ssh"]; !strings.Contains(why, "credential") {
		t.Errorf("~/.local/bin/key -> ~/.ssh/id_ed25519: skipped as %q; want a credential path", why)
	}
	if why := skipped[h+"/.local/bin/loop1"]; !strings.Contains(why, "too many levels") {
		t.Errorf("a link loop: skipped as %q; want ELOOP", why)
	}
}

func TestToolchainNeverBound(t *testing.T) {
	l := newToolchainLab(t)
	h := l.home
	mkdirs(t, l.ws+"/bin", filepath.Dir(l.ws)+"/bin", l.root+"/bin")
	p := l.effective(l.host("~/.ssh:~/.aws/bin:~:/:/tmp:"+l.ws+"/bin:"+filepath.Dir(l.ws)+"/bin:relative/bin:/proc/self:"+l.root+"/bin:"+l.root), "auto")
	for _, b := range boundPaths(p) {
		switch {
		case under(b, h+"/.ssh", h+"/.aws"), under(h, b), b == "/", b == "/tmp", under(b, l.ws), under(l.ws, b), under(b, "/proc"):
			t.Errorf("bound %s", b)
		}
	}
	// the workspace's parent's bin is a toolchain dir of its own: bound alone, never
	// its parent (which holds the workspace)
	if got := boundPaths(p); !slices.Equal(got, []string{filepath.Dir(l.ws) + "/bin", l.root + "/bin"}) {
		t.Errorf("bound %q; want only %s/bin and %s/bin (never %s, which holds the home)", got, filepath.Dir(l.ws), l.root, l.root)
	}
}

func TestToolchainVenv(t *testing.T) {
	l := newToolchainLab(t)
	venv := filepath.Join(l.ws, ".venv")
	mkdirs(t, venv+"/bin")
	cfg := "home = " + l.home + "/.pyenv/versions/3.12.1/bin\n"
	os.WriteFile(venv+"/pyvenv.cfg", []byte(cfg), 0o644)
	l.symlink(l.home+"/.pyenv/versions/3.12.1/bin/python3", venv+"/bin/python3")
	// pyenv's shims on PATH: the selected version (3.11.0), and the venv's, a version
	// of that pyenv
	p := l.effective(l.host("~/.pyenv/shims:/usr/bin"), "auto")
	if got, want := boundPaths(p), []string{l.home + "/.pyenv/versions/3.11.0", l.home + "/.pyenv/versions/3.12.1"}; !slices.Equal(got, want) {
		t.Fatalf("bound %q; want %q", got, want)
	}
	if w := p.toolchains.binds[1].Why; !strings.Contains(w, "venv "+venv) {
		t.Errorf("why %q does not name the venv", w)
	}
	// From an attack review: a workspace venv leads only where the caller's PATH
	// toolchains do; without pyenv on PATH its version is not bound.
	p = l.effective(l.host("/usr/bin"), "auto")
	if got := boundPaths(p); len(got) != 0 {
		t.Fatalf("a workspace venv bound %q with no version manager on PATH", got)
	}

	// A venv is the workspace's: its links and pyvenv.cfg may never lead to any other
	// directory the caller can read, a Python installation's shape or not.
	mkdirs(t, l.home+"/secret/lib/python3.12")
	os.Remove(venv + "/bin/python3")
	l.symlink(l.home+"/secret/bin/python", venv+"/bin/python3")
	os.WriteFile(venv+"/pyvenv.cfg", []byte("home = "+l.home+"/secret/bin\n"), 0o644)
	p = l.effective(l.host("~/.pyenv/shims:/usr/bin"), "auto")
	if got := boundPaths(p); !slices.Equal(got, []string{l.home + "/.pyenv/versions/3.11.0"}) {
		t.Fatalf("a planted venv bound %q", got)
	}
	for _, sk := range p.toolchains.skipped {
		if strings.Contains(sk.Why, "secret") || strings.Contains(sk.Path, "secret") {
			t.Errorf("a skip names the host path the sandbox chose: %+v", sk)
		}
	}
	// a link to a directory (another user's ~/.local shape) is no interpreter either
	os.Remove(venv + "/bin/python3")
	l.symlink(l.home+"/secret", venv+"/bin/python3")
	p = l.effective(l.host("~/.pyenv/shims:/usr/bin"), "auto")
	if got := boundPaths(p); !slices.Equal(got, []string{l.home + "/.pyenv/versions/3.11.0"}) {
		t.Fatalf("a venv link to a directory bound %q", got)
	}
}

// TestToolchainWrittenTrees (from an attack review): a venv the sandbox wrote in a
// --rw SRC:DST tree, or in the cache, and reached by a workspace link, is tainted as
// the workspace's own: its pyvenv.cfg home (a credential file, a private directory)
// is not bound, and neither is a directory reached through a link a sandbox wrote.
func TestToolchainWrittenTrees(t *testing.T) {
	l := newToolchainLab(t)
	data := filepath.Join(l.root, "data")
	cache := filepath.Join(l.home, ".cache", "gosbx")
	mkdirs(t, data+"/v/bin", cache+"/x/v/bin", l.home+"/private/bin")
	l.write(".pgpass", "db:5432:*:app:pw\n")
	l.write("private/bin/python3", "#!/bin/sh\n")
	for _, v := range []string{data + "/v", cache + "/x/v"} {
		os.WriteFile(v+"/pyvenv.cfg", []byte("home = "+l.home+"/private/bin\n"), 0o644)
		os.Symlink(l.home+"/private/bin/python3", v+"/bin/python3")
	}
	for _, c := range []struct{ name, target string }{{"rw source", data + "/v"}, {"cache", cache + "/x/v"}} {
		os.Remove(l.ws + "/.venv")
		os.Symlink(c.target, l.ws+"/.venv")
		p, err := Effective(Options{Workspace: l.ws, Toolchains: []string{"auto"}, ReadWrite: []string{data + ":/data"}}, l.host("/usr/bin"))
		if err != nil {
			t.Fatal(err)
		}
		if got := boundPaths(p); len(got) != 0 {
			t.Errorf("%s: a venv a sandbox wrote bound %q", c.name, got)
		}
	}
	// a workspace link to a directory that holds a link: the second hop is the
	// sandbox's choice too
	os.Remove(l.ws + "/.venv")
	mkdirs(t, l.ws+"/.venv/bin")
	os.WriteFile(l.ws+"/.venv/pyvenv.cfg", nil, 0o644)
	os.Symlink(data+"/v/bin", l.ws+"/.venv/bin/d")
	os.Symlink("d/python3", l.ws+"/.venv/bin/python3")
	p, err := Effective(Options{Workspace: l.ws, Toolchains: []string{"auto"}, ReadWrite: []string{data + ":/data"}}, l.host("/usr/bin"))
	if err != nil {
		t.Fatal(err)
	}
	if got := boundPaths(p); len(got) != 0 {
		t.Errorf("a chain through a directory link bound %q", got)
	}
}

// TestToolchainVersionFiles (from an attack review): a version file in the workspace
// is read only when it is a regular file there, never through a symlink (a credential,
// a FIFO, a device), and only version names are taken from it and printed.
func TestToolchainVersionFiles(t *testing.T) {
	l := newToolchainLab(t)
	local := filepath.Join(l.ws, ".python-version")
	l.write(".netrc", "s3cr3t-T0ken\n")
	os.Symlink(l.home+"/.netrc", local)
	check := func(what string) {
		t.Helper()
		p := l.effective(l.host("~/.pyenv/shims:/usr/bin"), "auto")
		for _, sk := range p.toolchains.skipped {
			if strings.Contains(sk.Path+sk.Why, "s3cr3t") || strings.Contains(sk.Path+sk.Why, "<") {
				t.Errorf("%s: the file's content is printed: %+v", what, sk)
			}
		}
		// not read: pyenv's global version is the choice
		if got := boundPaths(p); !slices.Equal(got, []string{l.home + "/.pyenv/versions/3.11.0"}) {
			t.Errorf("%s: bound %q; want the global version only", what, got)
		}
	}
	check("a symlink to a secret")
	os.Remove(local)
	if err := syscall.Mkfifo(local, 0o644); err != nil {
		t.Fatal(err)
	}
	check("a FIFO") // would block without O_NONBLOCK; refused as no regular file
	os.Remove(local)
	os.WriteFile(local, []byte("<script>x</script> s3cr3t-T0ken/x\n"), 0o644)
	p := l.effective(l.host("~/.pyenv/shims:/usr/bin"), "auto")
	for _, sk := range p.toolchains.skipped {
		if strings.Contains(sk.Path+sk.Why, "s3cr3t") || strings.Contains(sk.Path+sk.Why, "<") {
			t.Errorf("words that are no version names are printed: %+v", sk)
		}
	}
	for _, v := range []string{"3.12.1", "pypy3.10-7.3.12", "miniconda3-latest", "graalpy+1_x"} {
		if !validVersion(v) {
			t.Errorf("validVersion(%q) = false", v)
		}
	}
	for _, v := range []string{"", ".", "..", "a/b", "a b", "x\x1b[2J", strings.Repeat("1", 65)} {
		if validVersion(v) {
			t.Errorf("validVersion(%q) = true", v)
		}
	}
}

func TestToolchainFlags(t *testing.T) {
	l := newToolchainLab(t)
	h := l.host("~/.nvm/versions/node/v20.1.0/bin:/usr/bin")
	build, _ := Builtin("build")
	agent, _ := Builtin("agent")
	strict, _ := Builtin("strict")
	for _, c := range []struct {
		pol   *Policy
		flags []string
		want  int
	}{{build, nil, 1}, {build, []string{"none"}, 0}, {agent, nil, 0}, {agent, []string{"auto"}, 1},
		{agent, []string{l.home + "/apps/tool-1"}, 1}, {agent, []string{"auto", l.home + "/apps/tool-1"}, 2}} {
		p, err := Effective(Options{Policy: c.pol, Workspace: l.ws, Toolchains: c.flags}, h)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(p.toolchains.binds); got != c.want {
			t.Errorf("%v: %d roots bound %v; want %d", c.flags, got, boundPaths(p), c.want)
		}
	}
	no := false
	strict.Filesystem.AllowExtraReadOnly = &no
	_, err := Effective(Options{Policy: strict, Workspace: l.ws, Toolchains: []string{"auto"}}, h)
	policyError(t, err, "toolchain")
	if _, err := Effective(Options{Policy: strict, Workspace: l.ws, Toolchains: []string{"none"}}, h); err != nil {
		t.Errorf("--toolchain none (narrowing) refused: %v", err)
	}
	_, err = Effective(Options{Workspace: l.ws, Toolchains: []string{"none", "auto"}}, h)
	policyError(t, err, "toolchain")
}

func TestToolchainCompiled(t *testing.T) {
	l := newToolchainLab(t)
	h := l.host("~/.pyenv/shims:/usr/bin")
	s := mustCompile(t, Options{Workspace: l.ws, Toolchains: []string{"auto"}, Args: []string{"python3"}}, h)
	v := l.home + "/.pyenv/versions/3.11.0"
	_, m := findMount(s, v)
	if m == nil || m.Source != v || !slices.Contains(m.Options, "ro") || !slices.Contains(m.Options, "nosuid") {
		t.Fatalf("no read-only nosuid bind of %s: %+v", v, m)
	}
	if path := envMap(t, s.Process.Env)["PATH"]; !strings.HasPrefix(path, v+"/bin:") {
		t.Errorf("PATH inside %q; want %s/bin first", path, v)
	}
	if _, m := findMount(s, l.home+"/.pyenv/shims"); m != nil {
		t.Errorf("the shim directory is bound")
	}
}

func TestToolchainFileForms(t *testing.T) {
	for _, c := range []struct{ in, out, err string }{
		{"auto", `"auto"`, ""}, {"none", `"none"`, ""}, {"[/opt/x]", `["/opt/x"]`, ""}, {"[auto, /opt/x]", `["auto","/opt/x"]`, ""},
		{"maybe", "", "want auto, none"}, {"[]", "", "empty list"}, {"{a: 1}", "", "want auto, none or a list"}, {"[1]", "", "want a path"},
	} {
		p, err := Parse([]byte("filesystem:\n  toolchains: "+c.in+"\n"), "t.yaml")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v; want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if out, _ := json.Marshal(p.Filesystem.Toolchains); string(out) != c.out {
			t.Errorf("%s printed as %s; want %s", c.in, out, c.out)
		}
	}
}

func TestLinkChain(t *testing.T) {
	d := canonTempDir(t)
	os.WriteFile(d+"/f", nil, 0o644)
	os.Symlink("f", d+"/a")
	os.Symlink(d+"/a", d+"/b")
	os.Symlink("c", d+"/c")
	hops, err := linkChain(nil, d+"/b")
	if err != nil || !slices.Equal(hops, []string{d + "/b", d + "/a", d + "/f"}) {
		t.Errorf("chain %q, %v", hops, err)
	}
	if _, err := linkChain(nil, d+"/c"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a self link: %v; want ELOOP", err)
	}
}

func TestNotFoundHint(t *testing.T) {
	l := newToolchainLab(t)
	h := l.host("~/.pyenv/shims:/usr/bin")
	o := Options{Workspace: l.ws, Args: []string{"python3"}}
	p, err := Effective(o, h)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Build(p, o.Args, h)
	if err != nil {
		t.Fatal(err)
	}
	shim := l.home + "/.pyenv/shims/python3"
	want := "python3: not found inside the sandbox (on the host it is " + shim + "): add --toolchain " + l.home + "/.pyenv/versions/3.11.0 or --toolchain auto"
	if got := p.NotFoundHint(h, s, "python3", "python3"); got != want {
		t.Errorf("hint\n%q; want\n%q", got, want)
	}
	// a command only an unselected version has: that version, and not auto (which
	// binds the selected one)
	os.WriteFile(l.home+"/.pyenv/shims/python3.12", []byte("#!/bin/sh\n"), 0o755)
	want = "python3.12: not found inside the sandbox (on the host it is " + l.home + "/.pyenv/shims/python3.12): add --toolchain " + l.home + "/.pyenv/versions/3.12.1"
	if got := p.NotFoundHint(h, s, "python3.12", "python3.12"); got != want {
		t.Errorf("hint\n%q; want\n%q", got, want)
	}
	if got := p.NotFoundHint(h, s, "nosuch", "nosuch"); got != "" {
		t.Errorf("a command the host lacks too: %q", got)
	}
	// pyenv itself: bin/pyenv leads to libexec/pyenv; both are named, once each, never
	// ~/.pyenv whole with its other entries (versions, shims: not a prefix's layout)
	mkdirs(t, l.home+"/.pyenv/bin", l.home+"/.pyenv/libexec")
	os.WriteFile(l.home+"/.pyenv/libexec/pyenv", []byte("#!/bin/sh\n"), 0o755)
	l.symlink("../libexec/pyenv", l.home+"/.pyenv/bin/pyenv")
	hp := l.host("~/.pyenv/bin:/usr/bin")
	want = "pyenv: not found inside the sandbox (on the host it is " + l.home + "/.pyenv/bin/pyenv): add --ro " + l.home + "/.pyenv/bin --ro " + l.home + "/.pyenv/libexec or --toolchain auto"
	if got := p.NotFoundHint(hp, s, "pyenv", "pyenv"); got != want {
		t.Errorf("pyenv hint\n%q; want\n%q", got, want)
	}
	venv := l.ws + "/.venv/bin"
	mkdirs(t, venv)
	l.symlink(l.home+"/.pyenv/versions/3.12.1/bin/python3", venv+"/python")
	got := p.NotFoundHint(h, s, ".venv/bin/python", ".venv/bin/python")
	if !strings.Contains(got, "is outside the sandbox: add --ro "+l.home+"/.pyenv/versions/3.12.1 or --toolchain auto") {
		t.Errorf("venv hint %q", got)
	}
	// a venv's pip: its #! names the venv's python, a symlink in the workspace; the hint
	// names the symlink's target, which is what is outside (trial finding 8)
	os.WriteFile(venv+"/pip", []byte("#!"+venv+"/python\n"), 0o755)
	want = ".venv/bin/pip: its #! interpreter " + venv + "/python is a symlink to " + l.home + "/.pyenv/versions/3.12.1/bin/python3.12, which is outside the sandbox: add --ro " + l.home + "/.pyenv/versions/3.12.1 or --toolchain auto"
	if got := p.NotFoundHint(h, s, ".venv/bin/pip", ".venv/bin/pip"); got != want {
		t.Errorf("venv pip hint\n%q; want\n%q", got, want)
	}
	// From an attack review: a path in the workspace is the sandbox's choice: a hint
	// names only roots auto binds for the caller's PATH, and says the same whether the
	// host path exists or not (no oracle)
	os.WriteFile(l.ws+"/script", []byte("#!"+l.home+"/apps/tool-1/bin/tool -x\n"), 0o755)
	if got := p.NotFoundHint(h, s, "./script", "./script"); got != "" {
		t.Errorf("#! hint %q for a root auto does not bind", got)
	}
	h2 := l.host("~/.local/bin:~/.pyenv/shims:/usr/bin") // ~/.local/bin/tool leads to tool-1
	if got := p.NotFoundHint(h2, s, "./script", "./script"); !strings.Contains(got, "#! interpreter "+l.home+"/apps/tool-1/bin/tool is outside the sandbox: add --ro "+l.home+"/apps/tool-1") {
		t.Errorf("#! hint %q", got)
	}
	mkdirs(t, l.home+"/private")
	os.WriteFile(l.home+"/private/hist", []byte("x"), 0o644)
	os.Symlink(l.home+"/private/hist", l.ws+"/tool")
	os.Symlink(l.home+"/private/nope", l.ws+"/tool2")
	for _, n := range []string{"./tool", "./tool2"} {
		if got := p.NotFoundHint(h2, s, n, n); got != "" {
			t.Errorf("%s: hint %q for a workspace link onto a host path", n, got)
		}
	}
}

func TestToolchainListed(t *testing.T) {
	l := newToolchainLab(t)
	h := l.host("/usr/bin")
	p := l.effective(h, "~/apps/tool-1")
	if got := boundPaths(p); !slices.Equal(got, []string{l.home + "/apps/tool-1"}) {
		t.Fatalf("bound %q", got)
	}
	if !slices.Contains(p.Environment.PathPrepend, l.home+"/apps/tool-1/bin") {
		t.Errorf("its bin is not first on PATH: %q", p.Environment.PathPrepend)
	}
	// a root named that cannot be bound stops the launch, as a required --ro does
	for _, bad := range []string{"~/.ssh", "~", "~/missing", filepath.Dir(l.ws)} {
		_, err := Effective(Options{Workspace: l.ws, Toolchains: []string{bad}}, h)
		policyError(t, err, "toolchain")
	}
}

func TestToolchainRefused(t *testing.T) {
	tr := &tcResolver{h: toolchainHost{home: "/u/h/me", homes: []string{"/u/h/me", "/home/me"}, writable: []string{"/w/app"}, written: []string{"/w/app", "/c/x/gosbx"},
		creds: []string{"/u/h/me/.ssh"}, environ: map[string]string{"XDG_RUNTIME_DIR": "/x/run/1000"}}}
	for p, bad := range map[string]bool{"/": true, "/opt": true, "/u/h": true, "/u/h/me": true, "/home/me": true,
		"/u/h/me/.ssh": true, "/u/h/me/.ssh/keys": true, "/w": true, "/w/app": true, "/proc/self": true, "/run/user/1000/x": true,
		"/x/run": true, "/c/x": true, "/u/h/me/.pyenv/versions/3.12.1": false, "/opt/go": false, "/w/tools": false} {
		if got := tr.refused(p) != ""; got != bad {
			t.Errorf("refused(%s) = %q; want refused %v", p, tr.refused(p), bad)
		}
	}
}

// The hint a session's supervisor gives from the context it was handed as JSON is the
// one gosbx exec gives from the policy itself.
func TestNotFoundContextJSON(t *testing.T) {
	l := newToolchainLab(t)
	h := l.host("~/.pyenv/shims:/usr/bin")
	os.WriteFile(l.home+"/.pyenv/shims/python3.12", []byte("#!/bin/sh\n"), 0o755)
	venv := l.ws + "/.venv/bin"
	mkdirs(t, venv)
	l.symlink(l.home+"/.pyenv/versions/3.12.1/bin/python3", venv+"/python")
	for _, tc := range [][]string{nil, {ToolchainAuto}} {
		o := Options{Workspace: l.ws, Args: []string{"python3"}, Toolchains: tc}
		p, err := Effective(o, h)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Build(p, o.Args, h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(p.NotFoundContext(h))
		if err != nil {
			t.Fatal(err)
		}
		var c NotFoundContext
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"python3", "python3.12", ".venv/bin/python", "nosuch"} {
			want := p.NotFoundHint(h, s, name, name)
			if got := c.NotFoundHint(s, name, name); got != want {
				t.Errorf("toolchain %q, %s: from the JSON context %q; from the policy %q", tc, name, got, want)
			}
			if (name == "python3" && tc == nil || name == ".venv/bin/python") && want == "" {
				t.Errorf("toolchain %q: no hint for %s to compare", tc, name)
			}
		}
	}
}

// In git commit mode a linked worktree's common git dir (<repo>/.git, outside the
// workspace) is bound read-write: a sandbox writes it, so it counts among the written
// trees: a link there on the way (~/.local/bin/wt-tool -> <repo>/.git/refs/wt-tool ->
// an app elsewhere, a link a sandbox could have planted) chooses no root. With git
// readonly the git dir is read-only and the link is followed as any other.
func TestToolchainLinkedWorktreeGitDir(t *testing.T) {
	l := newToolchainLab(t)
	repo := filepath.Join(l.root, "src", "main")
	newRepo(t, repo)
	gitCmd(t, repo, "worktree", "add", "-q", l.ws)
	common := filepath.Join(repo, ".git")
	app := filepath.Join(l.home, "apps", "tool-2")
	mkdirs(t, app+"/bin")
	l.write("apps/tool-2/bin/tool", "#!/bin/sh\n")
	l.symlink(app+"/bin/tool", common+"/refs/wt-tool")
	l.symlink(common+"/refs/wt-tool", ".local/bin/wt-tool")
	for _, mode := range []string{GitCommit, GitReadOnly} {
		p, err := Effective(Options{Policy: gitPolicy(t, mode), Workspace: l.ws, Toolchains: []string{"auto"}}, l.host("~/.local/bin:/usr/bin"))
		if err != nil {
			t.Fatal(err)
		}
		bound := slices.ContainsFunc(boundPaths(p), func(b string) bool { return under(app, b) })
		if mode == GitCommit && bound {
			t.Errorf("%s: bound %q: %s, reached through a link in the linked worktree's git dir %s (written in commit mode)", mode, boundPaths(p), app, common)
		}
		if mode == GitReadOnly && !bound {
			t.Errorf("%s: bound %q; want %s (the git dir is read-only there)", mode, boundPaths(p), app)
		}
	}
	if c := linkedCommonDir(l.ws); c != common {
		t.Errorf("linkedCommonDir(%s) = %q, want %s", l.ws, c, common)
	}
	if c := linkedCommonDir(repo); c != "" {
		t.Errorf("linkedCommonDir of the main checkout = %q, want none", c)
	}
}

// --toolchain auto binds a bin directory's parent by its layout, never a project's other
// files: a project's VERSION beside src/, a go.env, pyvenv.cfg or conda-meta/ alone make
// no known root, and a file named README.something is no release document; a known root
// (a Go release, a venv) shows its layout, not a secret beside it; a link in a PATH bin
// directory to a file that is not executable binds nothing (from an attack review:
// each bound a directory of secrets whole).
func TestToolchainPrefixKeepsSecrets(t *testing.T) {
	l := newToolchainLab(t)
	h := l.home
	prefixes := map[string][]string{
		"proj":   {"bin/r10tool", "src/", "VERSION", "private/creds"},
		"r10b":   {"bin/r10b", "lib/", "README.ssh-key"},
		"goenv":  {"bin/gofake", "go.env", "private/creds"},
		"goroot": {"bin/go", "src/runtime/", "pkg/tool/", "VERSION", "go.env", "lib/time/", "private/creds"},
		"pyvcfg": {"bin/pytool", "pyvenv.cfg", "private/creds"},
		"venv":   {"bin/python3", "lib/python3.12/", "pyvenv.cfg", "private/creds"},
		"conda":  {"bin/ctool", "conda-meta/", "private/creds"},
		"docs":   {"bin/dtool", "lib/", "README.md", "LICENSE"},
	}
	var path []string
	for name, ents := range prefixes {
		for _, e := range ents {
			p := filepath.Join(h, "t", name, e)
			if strings.HasSuffix(e, "/") {
				mkdirs(t, p)
				continue
			}
			mkdirs(t, filepath.Dir(p))
			l.write(filepath.Join("t", name, e), "#!/bin/sh\n")
		}
		path = append(path, "~/t/"+name+"/bin")
	}
	// a link to a key beside the programs of a PATH bin directory
	mkdirs(t, h+"/keys", h+"/lbin")
	if err := os.WriteFile(h+"/keys/deploy", []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.symlink(h+"/keys/deploy", "lbin/cfg")
	path = append(path, "~/lbin", "/usr/bin")
	p := l.effective(l.host(strings.Join(path, ":")), "auto")
	got := boundPaths(p)
	for _, bad := range []string{"t/proj", "t/r10b", "t/r10b/lib", "t/goenv", "t/goroot", "t/pyvcfg", "t/venv", "t/conda", "keys",
		"t/proj/private", "t/goroot/private", "t/venv/private"} {
		for _, b := range got {
			if b == filepath.Join(h, bad) || under(filepath.Join(h, bad, "private"), b) || under(filepath.Join(h, bad), b) && bad == "t/r10b/lib" {
				t.Errorf("bound %s, which shows %s (all bound: %q)", b, bad, got)
			}
		}
	}
	for _, want := range []string{"t/proj/bin", "t/r10b/bin", "t/goroot/bin", "t/goroot/src", "t/goroot/pkg",
		"t/goroot/lib", "t/goroot/VERSION", "t/goroot/go.env", "t/venv/bin", "t/venv/lib", "t/venv/pyvenv.cfg", "t/docs"} {
		if !slices.Contains(got, filepath.Join(h, want)) {
			t.Errorf("%s is not bound: %q", want, got)
		}
	}
}

// --toolchain auto binds only the bin directory of a PATH entry's parent that is not an
// installation prefix: a work directory's etc/ and share/ (its config and data, named as
// a prefix's are) stay out, its other entries too, while a real prefix (bin, etc, share
// and nothing else) is still bound whole (from an attack review, review12 F3).
func TestToolchainNonPrefixBinOnly(t *testing.T) {
	l := newToolchainLab(t)
	h := l.home
	mkdirs(t, h+"/work/bin", h+"/work/etc", h+"/work/share", h+"/work/projects", h+"/pfx/bin", h+"/pfx/etc", h+"/pfx/share")
	l.write("work/bin/wt", "#!/bin/sh\n")
	l.write("work/etc/db.conf", "S1")
	l.write("work/share/notes", "S2")
	l.write("work/projects/p", "S3")
	l.write("pfx/bin/pt", "#!/bin/sh\n")
	l.write("pfx/etc/pt.conf", "c")
	got := boundPaths(l.effective(l.host("~/work/bin:~/pfx/bin:/usr/bin"), "auto"))
	for _, b := range got {
		for _, bad := range []string{"work/etc", "work/share", "work/projects"} {
			if under(filepath.Join(h, bad), b) || under(b, filepath.Join(h, bad)) {
				t.Errorf("bound %s, which shows ~/%s (all bound: %q)", b, bad, got)
			}
		}
	}
	for _, want := range []string{"work/bin", "pfx"} {
		if !slices.Contains(got, filepath.Join(h, want)) {
			t.Errorf("~/%s is not bound: %q", want, got)
		}
	}
}
