package policy

import (
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
