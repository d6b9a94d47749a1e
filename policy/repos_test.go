package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func touch(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		mkdirs(t, filepath.Dir(p))
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, rel string
		want         bool
	}{
		{".git", ".git", true},
		{".git", "a/.git", false},
		{"config/*.key", "config/a.key", true},
		{"config/*.key", "config/sub/a.key", false},
		{"config/*.key", "x/config/a.key", false},
		{"config/*.key", "config/a.pem", false},
		{"**/secrets", "secrets", true},
		{"**/secrets", "a/secrets", true},
		{"**/secrets", "a/b/secrets", true},
		{"**/secrets", "a/b/secrets/x", false},
		{"**/secrets", "a/b/notsecrets", false},
		{"**/.git/hooks", ".git/hooks", true},
		{"**/.git/hooks", "sub/mod/.git/hooks", true},
		{"**/.git/hooks", "sub/.git", false},
		{"a/**", "a", true},
		{"a/**", "a/b/c", true},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "a/b/c/y", false},
		{"**", "anything/at/all", true},
		{"**/**/x", "x", true},
		{"*/x", "a/x", true},
		{"*/x", "a/b/x", false},
		{"?.env", "a.env", true},
		{"?.env", "ab.env", false},
		{"[ab].txt", "b.txt", true},
		{"[ab].txt", "c.txt", false},
		{"[", "[", false}, // a bad pattern matches nothing
		{"a/b", "a", false},
		{"a", "a/b", false},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.pattern, tt.rel); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v; want %v", tt.pattern, tt.rel, got, tt.want)
		}
	}
}

func TestProtectedIn(t *testing.T) {
	ws := canonTempDir(t)
	touch(t,
		filepath.Join(ws, ".env"),
		filepath.Join(ws, "a", ".env"),
		filepath.Join(ws, "a", "b", ".env"),
		filepath.Join(ws, "a", "b", "c", ".env"), // depth 3: still scanned
		filepath.Join(ws, "config", "tls.key"),
		filepath.Join(ws, "config", "tls.crt"),
		filepath.Join(ws, "config", "sub", "x.key"), // not config/*.key
		filepath.Join(ws, "x", "config", "y.key"),   // not anchored at the root
		filepath.Join(ws, "node_modules", "p", ".env"),
		filepath.Join(ws, "node_modules", "secrets", "s"),
		filepath.Join(ws, ".venv", ".env"),
		filepath.Join(ws, "1", "2", "3", "4", ".env"), // below the scan, but on the way to cwd
		filepath.Join(ws, "1", "2", "3", "4", "5", "f"),
		filepath.Join(ws, "m", "n", "o", "p", "q", ".env"), // below the scan
	)
	mkdirs(t,
		filepath.Join(ws, "p", "q", "secrets"), // **/secrets at depth 2
		filepath.Join(ws, "secrets"),
		filepath.Join(ws, "p", "notsecrets"),
	)
	// A symlink to a directory is not followed.
	if err := os.Symlink(filepath.Join(ws, "a"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	patterns := []string{".env", "config/*.key", "**/secrets"}
	got := scan(t, ws, filepath.Join(ws, "1", "2", "3", "4", "5"), patterns)
	want := []string{
		".env", "a/.env", "a/b/.env", "a/b/c/.env",
		"config/tls.key",
		"p/q/secrets", "secrets",
		"1/2/3/4/.env",
	}
	for _, w := range want {
		if !slices.Contains(got, filepath.Join(ws, w)) {
			t.Errorf("protectedIn lacks %s; got %q", w, got)
		}
	}
	for _, n := range []string{"config/tls.crt", "config/sub/x.key", "x/config/y.key", "node_modules/p/.env",
		"node_modules/secrets", ".venv/.env", "m/n/o/p/q/.env", "p/notsecrets", "link/.env"} {
		if slices.Contains(got, filepath.Join(ws, n)) {
			t.Errorf("protectedIn lists %s", n)
		}
	}
	// Stable, without duplicates.
	again := scan(t, ws, filepath.Join(ws, "1", "2", "3", "4", "5"), patterns)
	if !slices.Equal(got, again) {
		t.Errorf("order differs between runs:\n%q\n%q", got, again)
	}
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p] {
			t.Errorf("%s listed twice", p)
		}
		seen[p] = true
	}
	// Without the deep cwd, the deep one is out of reach.
	if slices.Contains(scan(t, ws, "", patterns), filepath.Join(ws, "1", "2", "3", "4", ".env")) {
		t.Error("a path below the scan depth was found without a cwd leading there")
	}
	// A cwd outside the tree adds nothing.
	if slices.Contains(scan(t, ws, "/usr/bin", patterns), "/usr/bin/.env") {
		t.Error("a cwd outside the tree was scanned")
	}
	// Nothing matches: nothing listed (a missing .git is not invented).
	if got := scan(t, ws, "", []string{".git"}); len(got) != 0 {
		t.Errorf("scan(t, .git) = %q in a tree without one", got)
	}
}

// TestProtectedDeepChdir: a .git on the way from the workspace to a deep --chdir is
// protected though it lies below the scan depth.
func TestProtectedDeepChdir(t *testing.T) {
	ws := canonTempDir(t)
	deep := filepath.Join(ws, "1", "2", "3", "4")
	mkdirs(t, filepath.Join(deep, ".git"), filepath.Join(deep, "5", "6"))
	s := mustCompile(t, Options{Workspace: ws, Chdir: "1/2/3/4/5/6"}, fakeHost(ws))
	if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(deep, ".git")) {
		t.Errorf("ReadonlyPaths %q lack the .git on the way to --chdir", s.Linux.ReadonlyPaths)
	}
	s = mustCompile(t, Options{Workspace: ws}, fakeHost(ws))
	if slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(deep, ".git")) {
		t.Errorf("the scan reached depth 5 without a --chdir leading there")
	}
	// The caller's cwd leads there too.
	s = mustCompile(t, Options{Workspace: ws}, fakeHost(filepath.Join(deep, "5")))
	if !slices.Contains(s.Linux.ReadonlyPaths, filepath.Join(deep, ".git")) {
		t.Errorf("ReadonlyPaths %q lack the .git on the way to the caller's cwd", s.Linux.ReadonlyPaths)
	}
}

func TestProtectedPatternsCompiled(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	rw := filepath.Join(base, "rw")
	touch(t,
		filepath.Join(ws, "deploy", "prod.pem"),
		filepath.Join(ws, "config", "a.key"),
		filepath.Join(rw, "x", "y", "secrets", "s"),
		filepath.Join(rw, "config", "b.key"),
	)
	p := mustParse(t, "extends: agent\nfilesystem:\n  protected: [\"*.pem\", \"config/*.key\", \"**/secrets\"]\n")
	s := mustCompile(t, Options{Policy: p, Workspace: ws, ReadWrite: []string{rw}}, fakeHost(ws))
	for _, want := range []string{
		filepath.Join(ws, "deploy", "prod.pem"),
		filepath.Join(ws, "config", "a.key"),
		filepath.Join(rw, "x", "y", "secrets"),
		filepath.Join(rw, "config", "b.key"),
	} {
		if !slices.Contains(s.Linux.ReadonlyPaths, want) {
			t.Errorf("ReadonlyPaths %q lack %s", s.Linux.ReadonlyPaths, want)
		}
	}
}

// TestProtectedPins: every directory between a writable tree's root and a protected
// path is bound onto itself (so it cannot be renamed away), read-write as it was.
func TestProtectedPins(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	rw := filepath.Join(base, "rw")
	mkdirs(t, filepath.Join(ws, ".git"), filepath.Join(ws, "a", "b", ".git"), filepath.Join(rw, "c", ".git"))
	s := mustCompile(t, Options{Workspace: ws, ReadWrite: []string{rw}}, fakeHost(ws))
	for _, d := range []string{filepath.Join(ws, "a"), filepath.Join(ws, "a", "b"), filepath.Join(rw, "c")} {
		_, m := findMount(s, d)
		if m == nil || m.Source != d || slices.Contains(m.Options, "ro") {
			t.Errorf("%s: pin %+v; want a read-write bind onto itself", d, m)
		}
	}
	for _, d := range []string{filepath.Join(ws, ".git"), filepath.Join(ws, "a", "b", ".git")} {
		if _, m := findMount(s, d); m != nil {
			t.Errorf("the protected %s is pinned: %+v", d, *m)
		}
	}
	checkParentsFirst(t, s)
	if n := slices.IndexFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == ws }); n < 0 {
		t.Fatal("no workspace bind")
	}
}

// TestProtectedPinsKeepReadOnly: a pin inside a read-only bind (an --ro of a part of the
// workspace) must not make that part writable again.
func TestProtectedPinsKeepReadOnly(t *testing.T) {
	ws := canonTempDir(t)
	vendor := filepath.Join(ws, "vendor")
	mkdirs(t, filepath.Join(vendor, "lib", ".git"), filepath.Join(vendor, "lib", "src"))
	s := mustCompile(t, Options{Workspace: ws, ReadOnly: []string{vendor}}, fakeHost(ws))
	if _, m := findMount(s, vendor); m == nil || !slices.Contains(m.Options, "ro") {
		t.Fatalf("--ro %s: %+v", vendor, m)
	}
	for _, m := range s.Mounts {
		if strings.HasPrefix(m.Destination, vendor+"/") && !slices.Contains(m.Options, "ro") {
			t.Errorf("a read-write mount inside the read-only bind %s: %+v", vendor, m)
		}
	}
}

func TestProtectedSymlinkRefused(t *testing.T) {
	base := canonTempDir(t)
	ws := filepath.Join(base, "ws")
	elsewhere := filepath.Join(base, "elsewhere")
	mkdirs(t, ws, elsewhere)
	if err := os.Symlink(elsewhere, filepath.Join(ws, ".git")); err != nil {
		t.Fatal(err)
	}
	_, err := Compile(Options{Args: []string{"true"}, Workspace: ws}, fakeHost(ws))
	effError(t, err, "protected", "symlink")
}

// scan is protectedIn with the default limit, failing the test on an error.
func scan(t *testing.T, root, cwd string, patterns []string) []string {
	t.Helper()
	got, err := protectedIn(root, cwd, patterns, 0)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A tree that needs more directories than the limit is refused, never half protected.
func TestProtectedScanLimit(t *testing.T) {
	ws := t.TempDir()
	for i := 0; i < 20; i++ {
		if err := os.Mkdir(filepath.Join(ws, fmt.Sprintf("a%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(ws, "zz", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := protectedIn(ws, "", []string{".git"}, 10); err == nil || !strings.Contains(err.Error(), "scan_limit") {
		t.Fatalf("protectedIn with limit 10 over 22 directories = %v; want a scan_limit error", err)
	}
	got, err := protectedIn(ws, "", []string{".git"}, 100)
	if err != nil || !slices.Contains(got, filepath.Join(ws, "zz", ".git")) {
		t.Fatalf("protectedIn with limit 100 = %v, %v; want zz/.git", got, err)
	}
}
