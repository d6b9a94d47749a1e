package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gosbx/gosbx/mounts"
)

func TestBuildOptionalBinds(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	there := filepath.Join(base, "there")
	mkdirs(t, ws, there)
	missing := filepath.Join(base, "missing")

	tests := []struct {
		name    string
		fs      string // filesystem section
		refused string // want an *Error with this field; "" = compiles
	}{
		{"optional missing ro skipped", "read_only: [{path: " + missing + ", optional: true}, " + there + "]", ""},
		{"optional missing rw skipped", "read_write: [{path: " + missing + ", optional: true}]", ""},
		{"required missing ro", "read_only: [" + missing + "]", "ro"},
		{"required missing rw", "read_write: [" + missing + "]", "rw"},
		{"optional variable path missing", "read_only: [{path: \"${workspace}/nope\", optional: true}]", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "extends: agent\nfilesystem:\n  "+tt.fs+"\n")
			s, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}}, fakeHost(ws))
			if tt.refused != "" {
				effError(t, err, tt.refused, "does not exist")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range s.Mounts {
				if m.Source == missing || m.Destination == missing {
					t.Errorf("missing optional source bound: %+v", m)
				}
			}
		})
	}
}

func TestBuildSymlinkedReadOnly(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	real := filepath.Join(base, "tools", "v1")
	mkdirs(t, ws, real)
	rel := filepath.Join(base, "tool")      // -> tools/v1 (relative)
	abs := filepath.Join(base, "toolabs")   // -> base/tools/v1 (absolute)
	chain := filepath.Join(base, "chain")   // -> tool -> tools/v1
	file := filepath.Join(base, "cfg")      // a file
	fileLink := filepath.Join(base, "cfgl") // -> cfg
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for l, target := range map[string]string{rel: "tools/v1", abs: real, chain: "tool", fileLink: "cfg"} {
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
	}
	p := mustParse(t, "extends: agent\nfilesystem:\n  read_only: ["+rel+", "+abs+", "+chain+", "+fileLink+"]\n")
	s := mustCompile(t, Options{Policy: p, Workspace: ws}, fakeHost(ws))

	if _, m := findMount(s, real); m == nil || m.Source != real || !slices.Contains(m.Options, "ro") {
		t.Errorf("the target %s is not bound read-only: %+v", real, m)
	}
	if _, m := findMount(s, file); m == nil || !slices.Contains(m.Options, "ro") {
		t.Errorf("the file target %s is not bound read-only: %+v", file, m)
	}
	for _, l := range []string{rel, abs, chain, fileLink} {
		if _, m := findMount(s, l); m != nil {
			t.Errorf("the symlink %s is a mount destination: %+v", l, *m)
		}
	}
	links := annotationLinks(t, s)
	for _, want := range []mounts.Symlink{
		{Path: rel, Target: "tools/v1"}, // the host's own text
		{Path: abs, Target: real},
		{Path: chain, Target: "tool"},
		{Path: fileLink, Target: "cfg"},
	} {
		if !slices.Contains(links, want) {
			t.Errorf("links %+v lack %+v", links, want)
		}
	}
	// The target bound once, though three names lead to it.
	n := 0
	for _, m := range s.Mounts {
		if m.Destination == real {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s bound %d times", real, n)
	}
}

// TestBuildReadOnlyDeduplicated: --ro of a path already bound read-only (a system root,
// a path inside one, the same path twice) is accepted and bound once.
func TestBuildReadOnlyDeduplicated(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	dir := filepath.Join(base, "dir")
	mkdirs(t, ws, filepath.Join(dir, "sub"))
	for _, ro := range [][]string{{"/usr"}, {"/usr/share"}, {"/usr", "/usr/"}, {dir, dir + "/"}, {dir, filepath.Join(dir, "sub")}} {
		s, err := Compile(Options{Args: []string{"true"}, Workspace: ws, ReadOnly: ro}, fakeHost(ws))
		if err != nil {
			t.Errorf("--ro %q: %v", ro, err)
			continue
		}
		count := map[string]int{}
		for _, m := range s.Mounts {
			count[m.Destination]++
		}
		for d, n := range count {
			if n > 1 {
				t.Errorf("--ro %q: %s mounted %d times", ro, d, n)
			}
		}
		if count[filepath.Join(dir, "sub")] != 0 || count["/usr/share"] != 0 {
			t.Errorf("--ro %q: a path inside another read-only bind is bound on its own", ro)
		}
	}
}

// TestBuildCollisions: a read-write bind over a read-only one, a tmpfs or the workspace
// is still an error.
func TestBuildCollisions(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	dir := filepath.Join(base, "dir")
	mkdirs(t, ws, dir)
	tests := []struct {
		name string
		pol  string
		o    Options
	}{
		{"rw over a policy tmpfs", "filesystem:\n  tmpfs: [" + dir + "]\n", Options{ReadWrite: []string{dir}}},
		{"policy rw over a policy tmpfs", "filesystem:\n  tmpfs: [" + dir + "]\n  read_write: [" + dir + "]\n", Options{}},
		{"tmpfs over the workspace", "filesystem:\n  tmpfs: [\"${workspace}\"]\n", Options{}},
		{"ro and rw", "", Options{ReadOnly: []string{dir}, ReadWrite: []string{dir}}},
		{"ro of the workspace", "", Options{ReadOnly: []string{ws}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, "extends: agent\n"+tt.pol)
			tt.o.Policy, tt.o.Workspace, tt.o.Args = p, ws, []string{"true"}
			_, err := Compile(tt.o, fakeHost(ws))
			effError(t, err, "mount", "already")
		})
	}
}

func TestBuildNeedsEffective(t *testing.T) {
	p, _ := Builtin("agent")
	_, err := Build(p, []string{"true"}, fakeHost("/"))
	policyError(t, err, "workspace")
}

func TestBuildSecretMasksOnlyExisting(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	secret := filepath.Join(base, "etc")
	mkdirs(t, ws, secret)
	for _, f := range []string{"a_key", "b_key", "c.pub"} {
		if err := os.WriteFile(filepath.Join(secret, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p := mustParse(t, "extends: agent\nfilesystem:\n  masked: [\""+secret+"/*_key\", \""+secret+"/none\"]\n")
	s := mustCompile(t, Options{Policy: p, Workspace: ws}, fakeHost(ws))
	for _, f := range []string{"a_key", "b_key"} {
		if !slices.Contains(s.Linux.MaskedPaths, filepath.Join(secret, f)) {
			t.Errorf("MaskedPaths lack %s", f)
		}
	}
	for _, f := range []string{"c.pub", "none"} {
		if slices.Contains(s.Linux.MaskedPaths, filepath.Join(secret, f)) {
			t.Errorf("MaskedPaths list %s", f)
		}
	}
}
