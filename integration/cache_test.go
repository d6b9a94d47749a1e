package integration

// Issue 19 item 2: warm caches in the workspace's own trust domain. --cache binds
// $XDG_CACHE_HOME/gosbx/<id>/cache (made without following links) as the sandbox's
// ~/.cache with GOCACHE in it; each workspace has its own; `gosbx cache ls|rm`. Effects
// checked on the host: the entry's files, go's reuse of them, what another workspace's
// sandbox sees.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cacheSandbox is a sandbox whose caller has its own XDG_CACHE_HOME under s.base.
type cacheSandbox struct {
	*sandbox
	xdg string
}

func newCacheSandbox(t *testing.T, c caller) *cacheSandbox {
	s := newSandbox(t, c)
	xdg := filepath.Join(s.base, "xdg")
	must(t, os.Mkdir(xdg, 0o700))
	s.chown(xdg)
	return &cacheSandbox{s, xdg}
}

// gosbx runs gosbx with args (no implied exec) as the caller, XDG_CACHE_HOME set,
// within limit.
func (s *cacheSandbox) gosbx(limit time.Duration, args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(limit)
	cmd := s.rawCommand(ctx, args...)
	cmd.Env = s.env("XDG_CACHE_HOME=" + s.xdg)
	return s.runCmd(ctx, cmd)
}

// entries lists the cache root's entries on the host.
func (s *cacheSandbox) entries() []string {
	s.t.Helper()
	list, err := os.ReadDir(filepath.Join(s.xdg, "gosbx"))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Name())
	}
	return out
}

// entryFor is the id of the entry whose metadata names ws.
func (s *cacheSandbox) entryFor(ws string) string {
	s.t.Helper()
	for _, id := range s.entries() {
		b, err := os.ReadFile(filepath.Join(s.xdg, "gosbx", id, "workspace.json"))
		if err == nil && strings.Contains(string(b), `"workspace":"`+ws+`"`) {
			return id
		}
	}
	s.t.Fatalf("no cache entry names %s (entries %v)", ws, s.entries())
	return ""
}

// The second go build of a module reuses the first's compiled packages from the host's
// cache entry: no compile step runs (go build -x lists each tool it runs).
func TestCacheGoBuildReused(t *testing.T) {
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		if _, err := exec.LookPath("go"); err != nil {
			t.Skip("go is not installed (/usr/local/go/bin/go)")
		}
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		s.writeWS("go.mod", "module example.com/cachetest\n\ngo 1.21\n", 0o644)
		s.writeWS("main.go", "package main\n\nfunc main() { println(\""+s.id+"\") }\n", 0o644)
		build := []string{"exec", "--policy", "build", "--workspace", s.ws, "--env", "GOTOOLCHAIN=local", "--", shellPath, "-c",
			`echo "GOCACHE=$GOCACHE"; go build -x -o /tmp/prog . 2>&1 | grep -c '/compile ' ; exit 0`}
		first := s.gosbx(4*time.Minute, build...)
		mustSucceed(t, first, "first go build under build")
		id := s.entryFor(s.ws)
		gocache := filepath.Join(s.xdg, "gosbx", id, "cache", "go-build")
		if !strings.Contains(first.stdout, "GOCACHE=") || !strings.HasSuffix(strings.Fields(first.stdout)[0], "/.cache/go-build") {
			t.Errorf("GOCACHE inside is not in ~/.cache:\n%v", first)
		}
		n := countFiles(t, gocache)
		if n < 10 {
			t.Fatalf("the first build left %d files in the host's %s; want the build cache there", n, gocache)
		}
		if compiles := strings.Fields(first.stdout)[1]; compiles == "0" {
			t.Fatalf("the first build compiled nothing: the check below would prove nothing\n%v", first)
		}
		second := s.gosbx(4*time.Minute, build...)
		mustSucceed(t, second, "second go build under build")
		if compiles := strings.Fields(second.stdout)[1]; compiles != "0" {
			t.Errorf("the second build ran the compiler %s times: the cache was not reused\n%v", compiles, second)
		}
		// the same build with --no-cache starts cold again
		cold := s.gosbx(4*time.Minute, append([]string{"exec", "--no-cache"}, build[1:]...)...)
		mustSucceed(t, cold, "go build --no-cache")
		if compiles := strings.Fields(cold.stdout)[1]; compiles == "0" {
			t.Errorf("--no-cache still reused a cache:\n%v", cold)
		}
		// entries made private, owned by the caller
		for _, d := range []string{filepath.Join(s.xdg, "gosbx"), filepath.Join(s.xdg, "gosbx", id), filepath.Join(s.xdg, "gosbx", id, "cache")} {
			st, err := os.Lstat(d)
			must(t, err)
			if st.Mode().Perm() != 0o700 || !st.IsDir() {
				t.Errorf("%s: mode %v, want a 0700 directory", d, st.Mode())
			}
			if o, _ := ownerOf(t, d); o != c.uid {
				t.Errorf("%s: owned by %d, want the caller %d", d, o, c.uid)
			}
		}
	})
}

func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// Two workspaces get two entries; one's sandbox neither sees nor writes the other's.
func TestCachePerWorkspace(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		ws2 := filepath.Join(s.base, "ws2")
		must(t, os.Mkdir(ws2, 0o755))
		s.chown(ws2)
		r := s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", shellPath, "-c", `echo A > "$XDG_CACHE_HOME/mark-a" && echo "$GOCACHE"`)
		mustSucceed(t, r, "writing workspace A's cache")
		idA := s.entryFor(s.ws)
		if b, _ := os.ReadFile(filepath.Join(s.xdg, "gosbx", idA, "cache", "mark-a")); string(b) != "A\n" {
			t.Fatalf("A's write did not reach its entry on the host:\n%v", r)
		}
		r = s.gosbx(runLimit, "exec", "--cache", "--workspace", ws2, "--", shellPath, "-c",
			`ls -a "$XDG_CACHE_HOME"; test -e "$1" && echo SEES-A-BY-PATH; echo B > "$XDG_CACHE_HOME/mark-b"; echo poison > "$1/cache/mark-a" 2>/dev/null && echo WROTE-A; exit 0`,
			"_", filepath.Join(s.xdg, "gosbx", idA))
		mustSucceed(t, r, "workspace B's sandbox")
		if strings.Contains(r.stdout, "mark-a") || strings.Contains(r.stdout, "SEES-A") || strings.Contains(r.stdout, "WROTE-A") {
			t.Errorf("B's sandbox reaches A's cache:\n%v", r)
		}
		idB := s.entryFor(ws2)
		if idA == idB {
			t.Fatalf("two workspaces share the cache entry %s", idA)
		}
		if b, _ := os.ReadFile(filepath.Join(s.xdg, "gosbx", idA, "cache", "mark-a")); string(b) != "A\n" {
			t.Errorf("A's cache changed after B's run: %q", b)
		}
		if _, err := os.Stat(filepath.Join(s.xdg, "gosbx", idB, "cache", "mark-b")); err != nil {
			t.Errorf("B's write is not in its own entry: %v", err)
		}

		// cache ls names both, with their workspaces; rm WORKSPACE and rm ID act on disk
		r = s.gosbx(runLimit, "cache", "ls", "--json")
		mustSucceed(t, r, "cache ls --json")
		var list []struct{ ID, Workspace, Path string }
		must(t, json.Unmarshal([]byte(r.stdout), &list))
		got := map[string]string{}
		for _, e := range list {
			got[e.ID] = e.Workspace
		}
		if got[idA] != s.ws || got[idB] != ws2 || len(got) != 2 {
			t.Errorf("cache ls: %v, want %s→%s and %s→%s", got, idA, s.ws, idB, ws2)
		}
		// a link the command left in its cache is removed, never followed
		victim := filepath.Join(s.base, "victim")
		must(t, os.Mkdir(victim, 0o755))
		must(t, os.WriteFile(filepath.Join(victim, "keep"), []byte("k"), 0o644))
		s.chown(victim)
		r = s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", shellPath, "-c",
			`ln -s "$1" "$XDG_CACHE_HOME/link" && mkdir -p "$XDG_CACHE_HOME/ro/sub" && touch "$XDG_CACHE_HOME/ro/sub/f" && chmod 0555 "$XDG_CACHE_HOME/ro/sub" "$XDG_CACHE_HOME/ro"`, "_", victim)
		mustSucceed(t, r, "planting a link and read-only dirs in A's cache")
		r = s.gosbx(runLimit, "cache", "rm", s.ws)
		mustSucceed(t, r, "cache rm WORKSPACE")
		if _, err := os.Lstat(filepath.Join(s.xdg, "gosbx", idA)); err == nil {
			t.Errorf("cache rm %s left %s", s.ws, idA)
		}
		if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
			t.Errorf("cache rm followed a link out of the cache: %v", err)
		}
		if _, err := os.Stat(filepath.Join(s.xdg, "gosbx", idB)); err != nil {
			t.Errorf("cache rm of A removed B's entry: %v", err)
		}
		// a directory with no entry is a workspace with nothing to remove (exit 0 and a
		// note, as a second `cache rm` of one gets); nothing is removed outside the cache
		for _, bad := range []string{"..", "../xdg", "/etc"} {
			if r := s.gosbx(runLimit, "cache", "rm", bad); r.code == 0 && !strings.Contains(r.stderr, "nothing to remove") {
				t.Errorf("cache rm %s: exit 0 without \"nothing to remove\"\n%v", bad, r)
			}
		}
		if _, err := os.Stat(filepath.Join(s.xdg, "gosbx", idB)); err != nil {
			t.Errorf("cache rm of directories outside the cache removed B's entry: %v", err)
		}
		// an entry already gone: nothing to do, exit 0 with a note (trial finding: a
		// second `cache rm PATH` exited 125), not a sandbox setup failure; job ls of no
		// session is refused with what failed
		r = s.gosbx(runLimit, "cache", "rm", s.ws)
		if r.code != 0 || strings.Contains(r.stderr, "sandbox setup") || !strings.Contains(r.stderr, "gosbx: cache rm "+s.ws) ||
			!strings.Contains(r.stderr, "nothing to remove") {
			t.Errorf("cache rm of a workspace with no entry: %v; want 0 and a note", r)
		}
		r = s.gosbx(runLimit, "job", "ls", "nosuch-"+s.id)
		if r.code != 125 || strings.Contains(r.stderr, "sandbox setup") || !strings.Contains(r.stderr, "session") {
			t.Errorf("job ls of no session: %v; want 125 naming the missing session", r)
		}
		r = s.gosbx(runLimit, "cache", "rm", idB)
		mustSucceed(t, r, "cache rm ID")
		if e := s.entries(); len(e) != 0 {
			t.Errorf("entries left after rm: %v", e)
		}
		// --all
		mustSucceed(t, s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", "/bin/true"), "recreating A")
		mustSucceed(t, s.gosbx(runLimit, "exec", "--cache", "--workspace", ws2, "--", "/bin/true"), "recreating B")
		mustSucceed(t, s.gosbx(runLimit, "cache", "rm", "--all"), "cache rm --all")
		if e := s.entries(); len(e) != 0 {
			t.Errorf("entries left after rm --all: %v", e)
		}
	})
}

// A symlink planted at the cache root, at an entry or at its bound directory is never
// followed: 125 naming it, nothing made at its target.
func TestCachePlantedLinks(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		mustSucceed(t, s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", "/bin/true"), "making the entry")
		id := s.entryFor(s.ws)
		target := filepath.Join(s.base, "elsewhere")
		must(t, os.Mkdir(target, 0o700))
		s.chown(target)
		root := filepath.Join(s.xdg, "gosbx")
		for _, at := range []string{filepath.Join(root, id, "cache"), filepath.Join(root, id), root} {
			must(t, os.Rename(at, at+".moved"))
			must(t, os.Symlink(target, at))
			must(t, os.Lchown(at, c.uid, c.gid))
			m := s.marker("planted")
			r := s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", "/usr/bin/touch", m)
			wantRefused(t, "a symlink at "+at, r, m, "symlink", at)
			if list, _ := os.ReadDir(target); len(list) != 0 {
				t.Errorf("a symlink at %s was followed: %s holds %d entries", at, target, len(list))
			}
			must(t, os.Remove(at))
			must(t, os.Rename(at+".moved", at))
		}
		// and with them back, it works again
		mustSucceed(t, s.gosbx(runLimit, "exec", "--cache", "--workspace", s.ws, "--", "/bin/true"), "entry restored")
	})
}

// A cache root inside the workspace (a sandbox could write every workspace's cache) is
// refused; so is --cache where no home of the caller's own exists (uid 65534's
// /nonexistent), with the fix named, while the build profile's own cache is then off
// with a note.
func TestCacheRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		inWS := filepath.Join(s.ws, "xdg")
		must(t, os.Mkdir(inWS, 0o700))
		s.chown(inWS)
		m := s.marker("cache-in-ws")
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--cache", "--", "/usr/bin/touch", m)
		cmd.Env = s.env("XDG_CACHE_HOME=" + inWS)
		wantRefused(t, "a cache root in the workspace", s.runCmd(ctx, cmd), m, "cache", "XDG_CACHE_HOME")
		if _, err := os.Lstat(filepath.Join(inWS, "gosbx")); err == nil {
			t.Errorf("the cache root was made inside the workspace")
		}
		home := filepath.Join(s.base, "nohome") // does not exist
		ctx = s.limitCtx(runLimit)
		cmd = s.command(ctx, "--cache", "--", "/usr/bin/touch", m)
		cmd.Env = s.env("HOME=" + home)
		wantRefused(t, "--cache without a home", s.runCmd(ctx, cmd), m, "HOME", "XDG_CACHE_HOME", "--no-cache")
		ctx = s.limitCtx(runLimit)
		cmd = s.command(ctx, "--policy", "build", "--", "/usr/bin/touch", m)
		cmd.Env = s.env("HOME=" + home)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "build without a home: runs without its cache")
		if !strings.Contains(r.stderr, "without a cache") {
			t.Errorf("build without a home: no note that the cache is off:\n%v", r)
		}
		// strict allows no extra read-write bind: --cache is one
		m2 := s.marker("strict-cache")
		wantRefused(t, "strict --cache", s.gosbx(runLimit, "exec", "--policy", "strict", "--cache", "--workspace", s.ws, "--", "/usr/bin/touch", m2), m2, "allow_extra_read_write")
		// a session's command cannot add a cache
		r = s.gosbx(runLimit, "exec", "--session", "nosuch-"+s.id, "--cache", "--", "/bin/true")
		if r.code == 0 || !strings.Contains(r.stderr, "cache") {
			t.Errorf("exec --session --cache: want refused naming --cache\n%v", r)
		}
		if e := s.entries(); len(e) != 0 {
			t.Errorf("refused launches made cache entries: %v", e)
		}
	})
}

// Entries of workspaces that no longer exist (removed, or removed and made again) are
// marked gone by cache ls; cache rm takes such a workspace's path (the entries that
// record it); a name that is neither an id nor a recorded workspace points at the ID
// column; cache rm --gone removes exactly the gone ones (checked on disk).
func TestCacheGoneWorkspaces(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newCacheSandbox(t, c)
		mk := func(name string) string {
			ws := filepath.Join(s.base, name)
			must(t, os.Mkdir(ws, 0o755))
			s.chown(ws)
			mustSucceed(t, s.gosbx(runLimit, "exec", "--cache", "--workspace", ws, "--", "/bin/true"), "making "+name+"'s entry")
			return ws
		}
		removed, remade, kept, pruned := mk("removed"), mk("remade"), mk("kept"), mk("pruned")
		idRemoved, idRemade, idKept, idPruned := s.entryFor(removed), s.entryFor(remade), s.entryFor(kept), s.entryFor(pruned)
		// the same path, another directory (made before the old one goes: another inode),
		// so another id: the entry is not its
		must(t, os.Mkdir(remade+".new", 0o755))
		s.chown(remade + ".new")
		for _, ws := range []string{removed, remade, pruned} {
			must(t, os.Remove(ws))
		}
		must(t, os.Rename(remade+".new", remade))

		r := s.gosbx(runLimit, "cache", "ls", "--json")
		mustSucceed(t, r, "cache ls --json")
		var list []struct {
			ID   string
			Gone bool
		}
		must(t, json.Unmarshal([]byte(r.stdout), &list))
		gone := map[string]bool{}
		for _, e := range list {
			gone[e.ID] = e.Gone
		}
		want := map[string]bool{idRemoved: true, idRemade: true, idPruned: true, idKept: false}
		if !reflect.DeepEqual(gone, want) {
			t.Errorf("cache ls gone: %v, want %v", gone, want)
		}
		r = s.gosbx(runLimit, "cache", "ls")
		mustSucceed(t, r, "cache ls")
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, idRemoved+" ") && !strings.HasSuffix(l, removed+" (gone)") || strings.HasPrefix(l, idKept+" ") && strings.Contains(l, "(gone)") {
				t.Errorf("cache ls line %q: want the gone marker only on the removed workspaces", l)
			}
		}
		if !strings.Contains(r.stdout, removed+" (gone)") {
			t.Errorf("cache ls: no gone marker on %s:\n%s", removed, r.stdout)
		}

		// a path that is neither: refused, pointing at the ID column; nothing removed
		r = s.gosbx(runLimit, "cache", "rm", filepath.Join(s.base, "never-was"))
		if r.code != 125 || !strings.Contains(r.stderr, "ID column of `gosbx cache ls`") {
			t.Errorf("cache rm of an unknown path: %v; want 125 and the ID column named", r)
		}
		if n := len(s.entries()); n != 4 {
			t.Errorf("%d entries after a refused rm, want 4", n)
		}
		// the removed workspace's path removes its entry, and only it
		mustSucceed(t, s.gosbx(runLimit, "cache", "rm", removed), "cache rm of a removed workspace's path")
		if _, err := os.Lstat(filepath.Join(s.xdg, "gosbx", idRemoved)); err == nil {
			t.Errorf("cache rm %s left %s", removed, idRemoved)
		}
		// the remade one's path: no entry under its new id, so the one recorded for it
		mustSucceed(t, s.gosbx(runLimit, "cache", "rm", remade), "cache rm of a remade workspace's path")
		if _, err := os.Lstat(filepath.Join(s.xdg, "gosbx", idRemade)); err == nil {
			t.Errorf("cache rm %s left %s", remade, idRemade)
		}
		// --gone: the pruned one, not the kept one
		mustSucceed(t, s.gosbx(runLimit, "cache", "rm", "--gone"), "cache rm --gone")
		if e := s.entries(); !reflect.DeepEqual(e, []string{idKept}) {
			t.Errorf("entries after rm --gone: %v, want only %s", e, idKept)
		}
	})
}
