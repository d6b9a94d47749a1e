package policy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// A policy file without extends: warned of when it binds no system library directory
// (the trial's `filesystem: {git: commit}`), not when it extends a profile or binds them.
func TestEmptyRootNote(t *testing.T) {
	for _, c := range []struct {
		yaml string
		warn bool
	}{
		{"filesystem:\n  git: commit\n", true},
		{"filesystem:\n  read_only: [/usr/bin]\n", true},
		{"extends: agent\nfilesystem:\n  git: commit\n", false},
		{"filesystem:\n  read_only: [/usr, /lib64]\n", false},
		// the trial's: /usr alone shows no /lib64, where ls names its ELF interpreter
		{"filesystem:\n  read_only: [/usr]\n", true},
		{"filesystem:\n  read_only: [/usr/lib, /usr/bin]\n", true},
		{"filesystem:\n  read_only: [/usr, /lib]\n", false},
		{"filesystem:\n  read_only: [/]\n", false},
	} {
		p, err := Parse([]byte(c.yaml), "t.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := p.EmptyRootNote() != ""; got != c.warn {
			t.Errorf("%q: warned %v, want %v", c.yaml, got, c.warn)
		}
	}
	for _, name := range []string{"agent", "strict", "build"} {
		b, _ := Builtin(name)
		if n := b.EmptyRootNote(); n != "" {
			t.Errorf("built-in %s: %q", name, n)
		}
	}
}

// The 127 hint for a program that is shown but cannot start (its ELF interpreter and
// libraries are not there) names them and what to bind, and a different thing after
// each step: never the "add --ro /usr/bin" it started from.
func TestLoaderHint(t *testing.T) {
	interp, needed, ok := elfDeps("/usr/bin/ls")
	if !ok || interp != "/lib64/ld-linux-x86-64.so.2" || len(needed) == 0 {
		t.Skipf("/usr/bin/ls is not the dynamic x86-64 executable this test expects (%q %v)", interp, needed)
	}
	bind := func(p string) specs.Mount { return specs.Mount{Type: "bind", Source: p, Destination: p} }
	p, err := Parse([]byte("filesystem:\n  git: commit\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := Host{Homes: []string{"/root"}, Home: "/root", Environ: []string{"PATH=/usr/bin"}}
	spec := &config.Config{Mounts: []specs.Mount{bind("/usr/bin")}, Process: &specs.Process{Args: []string{"ls"}, Cwd: "/"}}
	first := p.NotFoundHint(h, spec, "ls", "/usr/bin/ls")
	for _, w := range []string{"ELF interpreter /lib64/ld-linux-x86-64.so.2", "--ro /lib64", "libc.so.6", "extends: agent"} {
		if !strings.Contains(first, w) {
			t.Errorf("/usr/bin bound: hint %q lacks %q", first, w)
		}
	}
	if strings.Contains(first, "--ro /usr/bin") {
		t.Errorf("hint repeats the bind already made: %q", first)
	}
	// the interpreter's directory bound (and its link): the libraries are what is left
	spec.Mounts = append(spec.Mounts, bind("/usr/lib64"))
	spec.Symlinks = []config.Symlink{{Path: "/lib64", Target: "usr/lib64"}}
	if got := p.NotFoundHint(h, spec, "ls", "/usr/bin/ls"); got == "" || got == first || strings.Contains(got, "--ro /lib64") {
		t.Errorf("/lib64 bound too: hint %q, want one naming the library directory only", got)
	}
	// the system's binds: nothing missing, no hint
	spec.Mounts = []specs.Mount{bind("/usr")}
	spec.Symlinks = []config.Symlink{{Path: "/lib64", Target: "usr/lib64"}, {Path: "/lib", Target: "usr/lib"}, {Path: "/bin", Target: "usr/bin"}}
	if got := p.NotFoundHint(h, spec, "ls", "/usr/bin/ls"); got != "" {
		t.Errorf("/usr bound: hint %q, want none", got)
	}
}

// Shown quotes exactly the strings that hold a rune that is not printable.
func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/lib64/ld-linux-x86-64.so.2": "/usr/lib64/ld-linux-x86-64.so.2",
		"/home/u/My Projects/é/bin":       "/home/u/My Projects/é/bin",
		"/a\ngosbx: note: x":              `"/a\ngosbx: note: x"`,
		"/a\rb":                           `"/a\rb"`,
		"/x\x1b[2K":                       `"/x\x1b[2K"`,
		"/x\x7f":                          `"/x\x7f"`,
		"/x\xff":                          `"/x\xff"`,
		"/x\u202egnp.exe":                 `"/x\u202egnp.exe"`,
		"/x\ty":                           `"/x\ty"`,
	} {
		if got := Shown(in); got != want {
			t.Errorf("Shown(%q) = %s, want %s", in, got, want)
		}
	}
}

// The 127 hint quotes the paths it reads from a file the sandbox may have written: an
// ELF's PT_INTERP, a script's #! line (from an attack review: they printed lines of
// their own, "gosbx: note: …", and terminal escapes).
func TestNotFoundHintQuotesFilePaths(t *testing.T) {
	orig, _, ok := elfDeps("/usr/bin/ls")
	if !ok || orig != "/lib64/ld-linux-x86-64.so.2" {
		t.Skipf("/usr/bin/ls is not the dynamic x86-64 executable this test expects (%q)", orig)
	}
	dir := t.TempDir()
	b, err := os.ReadFile("/usr/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	fake := "/lib64/\ngosbx: note: pwned!" // as long as the original
	if len(fake) != len(orig) || bytes.Count(b, []byte(orig+"\x00")) != 1 {
		t.Fatal("cannot patch the interpreter in place")
	}
	tool := filepath.Join(dir, "tool")
	if err := os.WriteFile(tool, bytes.Replace(b, []byte(orig), []byte(fake), 1), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/lib64/x\x1b[2K\x1b[1Agosbx:\x1b[Cexit\x1b[C0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bind := func(p string) specs.Mount { return specs.Mount{Type: "bind", Source: p, Destination: p} }
	p, err := Parse([]byte("filesystem:\n  read_only: [/usr/bin]\n"), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	h := Host{Homes: []string{"/root"}, Home: "/root", Environ: []string{"PATH=/usr/bin"}}
	spec := &config.Config{Mounts: []specs.Mount{bind("/usr/bin"), bind(dir)}, Process: &specs.Process{Args: []string{"x"}, Cwd: dir}}
	for _, c := range []struct{ path, want string }{
		{tool, `ELF interpreter "/lib64/\ngosbx: note: pwned!"`},
		{script, `#! interpreter "/lib64/x\x1b[2K\x1b[1Agosbx:\x1b[Cexit\x1b[C0"`},
	} {
		got := p.NotFoundHint(h, spec, c.path, c.path)
		if !strings.Contains(got, c.want) || strings.ContainsAny(got, "\n\x1b") {
			t.Errorf("hint for %s: %q, want %s in it and no raw control byte", c.path, got, c.want)
		}
	}
}
