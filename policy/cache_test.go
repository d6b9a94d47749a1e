package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// cacheHost is the calling user with a home of its own (a temp dir) and a workspace.
func cacheHost(t *testing.T) (Host, string) {
	t.Helper()
	dir := canonTempDir(t)
	home, ws := filepath.Join(dir, "home"), filepath.Join(dir, "ws")
	mkdirs(t, home, ws)
	return Host{UID: os.Getuid(), GID: os.Getgid(), Home: home, Homes: []string{home}, Cwd: ws,
		Environ: []string{"PATH=/usr/bin:/bin"}}, ws
}

func envOf(env []string, k string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, k+"="); ok {
			return v, true
		}
	}
	return "", false
}

func TestCacheBuildProfile(t *testing.T) {
	h, ws := cacheHost(t)
	build, _ := Builtin("build")
	cfg := mustCompile(t, Options{Policy: build, Workspace: ws}, h)
	id, err := WorkspaceID(ws)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(h.Home, ".cache")
	i := slices.IndexFunc(cfg.Mounts, func(m specs.Mount) bool { return m.Destination == dst })
	if i < 0 {
		t.Fatalf("no mount at %s: %+v", dst, cfg.Mounts)
	}
	m := cfg.Mounts[i]
	if want := filepath.Join(h.Home, ".cache/gosbx", id, "cache"); m.Source != want || m.Type != "bind" || slices.Contains(m.Options, "ro") {
		t.Errorf("cache mount %+v; want a read-write bind of %s", m, want)
	}
	for k, want := range map[string]string{"GOCACHE": dst + "/go-build", "XDG_CACHE_HOME": dst, "PIP_CACHE_DIR": dst + "/pip",
		"npm_config_cache": dst + "/npm", "GOMODCACHE": filepath.Join(h.Home, "go/pkg/mod")} {
		if v, _ := envOf(cfg.Process.Env, k); v != want {
			t.Errorf("%s=%q, want %q", k, v, want)
		}
	}
	if _, err := os.Lstat(dst); err == nil {
		t.Errorf("Build made %s: it must write nothing (Prepare does)", dst)
	}
	// --no-cache: none of it
	off := false
	cfg = mustCompile(t, Options{Policy: build, Workspace: ws, Cache: &off}, h)
	if slices.ContainsFunc(cfg.Mounts, func(m specs.Mount) bool { return m.Destination == dst }) {
		t.Errorf("--no-cache still mounts %s", dst)
	}
	if _, ok := envOf(cfg.Process.Env, "GOCACHE"); ok {
		t.Errorf("--no-cache still sets GOCACHE")
	}
}

func TestCacheFlagAndXDG(t *testing.T) {
	h, ws := cacheHost(t)
	xdg := filepath.Join(filepath.Dir(ws), "xdg")
	mkdirs(t, xdg)
	h.Environ = append(h.Environ, "XDG_CACHE_HOME="+xdg)
	on := true
	p, err := Effective(Options{Workspace: ws, Cache: &on}, h)
	if err != nil {
		t.Fatal(err)
	}
	c := p.CacheDir()
	if c == nil || c.Root() != filepath.Join(xdg, "gosbx") || c.Workspace != ws {
		t.Fatalf("cache %+v; want under %s for %s", c, xdg, ws)
	}
	cfg, err := Build(p, []string{"true"}, h)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := envOf(cfg.Process.Env, "GOMODCACHE"); v != filepath.Join(h.Home, ".cache/go-mod") {
		t.Errorf("agent --cache: GOMODCACHE=%q, want it in the cache", v)
	}
	// refused: a cache root in the workspace, and --cache under strict
	h2 := h
	h2.Environ = []string{"XDG_CACHE_HOME=" + ws}
	_, err = Compile(Options{Workspace: ws, Cache: &on, Args: []string{"true"}}, h2)
	policyError(t, err, "cache")
	strict, _ := Builtin("strict")
	_, err = Compile(Options{Policy: strict, Workspace: ws, Cache: &on, Args: []string{"true"}}, h)
	policyError(t, err, "cache")
}

// No home of the caller's own: the profile's cache is off with a note; --cache fails.
func TestCacheUnavailable(t *testing.T) {
	h, ws := cacheHost(t)
	h.Home = "/nonexistent"
	build, _ := Builtin("build")
	p, err := Effective(Options{Policy: build, Workspace: ws}, h)
	if err != nil {
		t.Fatal(err)
	}
	if p.CacheDir() != nil || !strings.Contains(p.CacheNote(), "XDG_CACHE_HOME") {
		t.Errorf("cache %+v, note %q; want none, and a note naming the fix", p.CacheDir(), p.CacheNote())
	}
	on := true
	_, err = Effective(Options{Policy: build, Workspace: ws, Cache: &on}, h)
	pe := policyError(t, err, "cache")
	if !strings.Contains(pe.Error(), "/nonexistent") {
		t.Errorf("message %q does not name HOME", pe.Error())
	}
}

func TestWorkspaceID(t *testing.T) {
	dir := canonTempDir(t)
	a, b := filepath.Join(dir, "a b"), filepath.Join(dir, "b")
	mkdirs(t, a, b)
	ia, _ := WorkspaceID(a)
	ia2, _ := WorkspaceID(a)
	ib, _ := WorkspaceID(b)
	if ia != ia2 || ia == ib || !strings.HasPrefix(ia, "a_b-") || !ValidCacheID(ia) {
		t.Errorf("ids %q %q %q: want stable, distinct, named for the directory", ia, ia2, ib)
	}
	for _, bad := range []string{"", ".", "..", "a/b", "../x", strings.Repeat("x", 65)} {
		if ValidCacheID(bad) {
			t.Errorf("ValidCacheID(%q) = true", bad)
		}
	}
}

// Prepare, ListCaches and RemoveCache on disk; a link at the root is never followed.
func TestCacheDirOnDisk(t *testing.T) {
	h, ws := cacheHost(t)
	c, err := CacheRoot(h)
	if err != nil {
		t.Fatal(err)
	}
	c.ID, _ = WorkspaceID(ws)
	c.Workspace = ws
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{c.Root(), c.Dir(), c.Source()} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
			t.Errorf("%s: %v %v; want a 0700 directory", d, st, err)
		}
	}
	list, err := ListCaches(c)
	if err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].Workspace != ws || list[0].LastUse.IsZero() {
		t.Fatalf("ListCaches: %+v %v", list, err)
	}
	// more entries, made in an order their names do not sort in: listed by workspace
	for _, w := range []string{"zz", "aa", "mm"} {
		d := filepath.Join(filepath.Dir(ws), w)
		mkdirs(t, d)
		e := *c
		e.ID, _ = WorkspaceID(d)
		e.Workspace = d
		if err := e.Prepare(); err != nil {
			t.Fatal(err)
		}
	}
	list, err = ListCaches(c)
	if err != nil || len(list) != 4 || !slices.IsSortedFunc(list, func(a, b CacheEntry) int { return strings.Compare(a.Workspace, b.Workspace) }) {
		t.Errorf("ListCaches not sorted by workspace: %+v %v", list, err)
	}
	for _, e := range list[:] {
		if e.ID != c.ID {
			RemoveCache(c, e.ID)
		}
	}
	ro := filepath.Join(c.Source(), "mod", "x")
	mkdirs(t, ro)
	os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o444)
	os.Chmod(ro, 0o555)
	os.Chmod(filepath.Dir(ro), 0o555)
	if err := RemoveCache(c, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(c.Dir()); err == nil {
		t.Errorf("%s left after RemoveCache", c.Dir())
	}
	if err := RemoveCache(c, "../home"); err == nil {
		t.Errorf("RemoveCache(../home) succeeded")
	}
	// a link planted at the root
	other := filepath.Join(filepath.Dir(ws), "other")
	mkdirs(t, other)
	os.RemoveAll(c.Root())
	if err := os.Symlink(other, c.Root()); err != nil {
		t.Fatal(err)
	}
	if err := c.Prepare(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("Prepare through a planted link: %v; want refused naming it", err)
	}
	if list, _ := os.ReadDir(other); len(list) != 0 {
		t.Errorf("Prepare followed the link: %s holds %d entries", other, len(list))
	}
}

// From an attack review: a tree deeper than a descriptor per level allows (one a
// sandbox made in its cache, 2000 levels, some 0555) is removed by RemoveCache under a
// soft RLIMIT_NOFILE of 256, and ListCaches says its size is unknown (-1) rather than a
// smaller one.
func TestCacheDeepTree(t *testing.T) {
	h, ws := cacheHost(t)
	c, err := CacheRoot(h)
	if err != nil {
		t.Fatal(err)
	}
	c.ID, _ = WorkspaceID(ws)
	c.Workspace = ws
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(c.Source(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		unix.Mknodat(fd, "fifo", unix.S_IFIFO|0o644, 0)
		sub, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if i%300 == 299 {
			unix.Fchmod(fd, 0o555)
		}
		unix.Close(fd)
		fd = sub
	}
	unix.Close(fd)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 256
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	list, err := ListCaches(c)
	if err != nil || len(list) != 1 || list[0].Size != -1 {
		t.Errorf("ListCaches of a 2000-level tree: %+v %v, want size -1 (unknown)", list, err)
	}
	if err := RemoveCache(c, c.ID); err != nil {
		t.Fatalf("RemoveCache of a 2000-level tree: %v", err)
	}
	if _, err := os.Lstat(c.Dir()); err == nil {
		t.Errorf("%s left after RemoveCache", c.Dir())
	}
}

// A cache of a workspace whose path is not UTF-8 is listed under that path and not as
// gone (`cache rm --gone` removes gone ones): its meta file's JSON alone made the path
// another, missing one.
func TestCacheWorkspaceNotUTF8(t *testing.T) {
	h, ws := cacheHost(t)
	c, err := CacheRoot(h)
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(filepath.Dir(ws), "caf\xe9")
	mkdirs(t, d)
	c.ID, _ = WorkspaceID(d)
	c.Workspace = d
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	list, err := ListCaches(c)
	if err != nil || len(list) != 1 {
		t.Fatalf("ListCaches: %+v %v", list, err)
	}
	if list[0].Workspace != d || list[0].Gone {
		t.Errorf("ListCaches: workspace %q gone %v, want %q, not gone", list[0].Workspace, list[0].Gone, d)
	}
}
