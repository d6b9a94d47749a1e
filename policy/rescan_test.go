package policy

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestProtectedScanAdded: the scan kept at a session's start finds nothing new while the
// trees are unchanged, and finds a .git that appears in the workspace or in a --rw tree
// until it is accepted; one that was there at the start is known. The refusal names it
// and the restart.
func TestProtectedScanAdded(t *testing.T) {
	base := t.TempDir()
	ws, rw := filepath.Join(base, "ws"), filepath.Join(base, "rw")
	for _, d := range []string{filepath.Join(ws, "old", ".git"), rw} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := Host{UID: os.Getuid(), Home: "/home/u", Cwd: base}
	p, _ := Builtin("agent")
	eff, err := Effective(Options{Policy: p, Workspace: ws, ReadWrite: []string{rw}}, h)
	if err != nil {
		t.Fatal(err)
	}
	s, err := eff.ScanProtected(ws, h)
	if err != nil || len(s.Trees) != 2 || len(s.Known) != 1 {
		t.Fatalf("scan at the start: %+v, %v; want 2 trees, old/.git known", s, err)
	}
	if added, err := s.Rescan(); err != nil || len(added) != 0 {
		t.Fatalf("nothing new: %v, %v", added, err)
	}
	for _, d := range []string{filepath.Join(ws, "a", "b", ".git"), filepath.Join(rw, "dep", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		found, err := s.Rescan()
		added := Paths(found)
		if err != nil || !slices.Equal(added, []string{d}) {
			t.Errorf("after %s appeared: %q, %v; want it", d, added, err)
		}
		if again, _ := s.Rescan(); !slices.Equal(Paths(again), added) {
			t.Errorf("rescan before Accept: %v, want %q again", again, added)
		}
		s.Accept(found)
		if again, _ := s.Rescan(); len(again) != 0 {
			t.Errorf("rescan after Accept: %v, want nothing", again)
		}
		if msg := NewProtectedError("n", added).Error(); !strings.Contains(msg, d) || !strings.Contains(msg, "gosbx session stop n") {
			t.Errorf("the refusal %q names neither %s nor the restart", msg, d)
		}
	}
}

// TestRescanIdentity: a repository known at the start, removed and made again at its
// path (rm -rf dep; git init dep), is found as new: its read-only bind covered the old
// one (attack review 15, F1). A known path that is gone is forgotten, so one made there
// later, even by a moved-back directory, is judged again. Without identity (paths only)
// the new one is taken as the bound one.
func TestRescanIdentity(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	git := filepath.Join(ws, "dep", ".git")
	mkdirs(t, git)
	h := Host{UID: os.Getuid(), Home: "/home/u", Cwd: ws}
	p, _ := Builtin("agent")
	eff, err := Effective(Options{Policy: p, Workspace: ws}, h)
	if err != nil {
		t.Fatal(err)
	}
	s, err := eff.ScanProtected(ws, h)
	if err != nil || len(s.Known) != 1 {
		t.Fatalf("scan at the start: %+v, %v", s, err)
	}
	if added, err := s.Rescan(); err != nil || len(added) != 0 {
		t.Fatalf("nothing new: %v, %v", added, err)
	}
	if err := os.RemoveAll(filepath.Join(ws, "dep")); err != nil {
		t.Fatal(err)
	}
	if added, err := s.Rescan(); err != nil || len(added) != 0 || len(s.Known) != 0 {
		t.Fatalf("after rm -rf dep: %v, %v, known %v; want nothing found, dep forgotten", added, err, s.Known)
	}
	mkdirs(t, git)
	added, err := s.Rescan()
	if err != nil || !slices.Equal(Paths(added), []string{git}) || !added[0].Born || time.Since(added[0].BirthTime()) > time.Minute {
		t.Fatalf("dep made again: %+v, %v; want it new, with its birth time", added, err)
	}
	// removed and made again with no search between: ext4 gives the new .git the
	// inode number just freed, its birth time tells them apart
	s.Accept(added)
	for i := 0; i < 3; i++ {
		if err := os.RemoveAll(filepath.Join(ws, "dep")); err != nil {
			t.Fatal(err)
		}
		mkdirs(t, git)
		if again, err := s.Rescan(); err != nil || len(again) != 1 {
			t.Fatalf("dep made again, no search between (inode %d then %d): %+v, %v; want it new", added[0].Ino, s.Known[0].Ino, again, err)
		}
	}
}

// TestRescanMovedRW: a --rw SRC:DST tree is searched at SRC: a repository made there
// after the start is found (attack review 15, F7). Without it SRC was never searched.
func TestRescanMovedRW(t *testing.T) {
	base := t.TempDir()
	ws, src := filepath.Join(base, "ws"), filepath.Join(base, "src")
	mkdirs(t, ws)
	mkdirs(t, src)
	h := Host{UID: os.Getuid(), Home: "/home/u", Cwd: base}
	p, _ := Builtin("agent")
	eff, err := Effective(Options{Policy: p, Workspace: ws, ReadWrite: []string{src + ":/data"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	s, err := eff.ScanProtected(ws, h)
	if err != nil {
		t.Fatal(err)
	}
	git := filepath.Join(src, "repo", ".git")
	mkdirs(t, git)
	if added, err := s.Rescan(); err != nil || !slices.Equal(Paths(added), []string{git}) {
		t.Fatalf("a repository made in the moved --rw tree: %v, %v; want %s", added, err, git)
	}
}

// TestRescanChain: a request's working directory deeper than the scan, off the start's
// chain, has the protected paths on its chain found (Chain), as the start's search finds
// its own (attack review 15, F3); a search without it does not reach them.
func TestRescanChain(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	deep := filepath.Join(ws, "a", "b", "c", "d", "e")
	mkdirs(t, filepath.Join(deep, ".git"))
	mkdirs(t, filepath.Join(ws, "a", "b", "c", "d", ".git"))
	s := ProtectedScan{Trees: []string{ws}, Cwd: ws, Patterns: []string{".git"}}
	if added, err := s.Rescan(); err != nil || len(added) != 0 {
		t.Fatalf("the trees alone: %v, %v; want nothing (deeper than the scan)", added, err)
	}
	added, err := s.Rescan(deep)
	want := []string{filepath.Join(ws, "a", "b", "c", "d", ".git"), filepath.Join(deep, ".git")}
	if err != nil || !slices.Equal(Paths(added), want) || !added[0].Chain || !added[1].Chain {
		t.Fatalf("with the request's cwd: %+v, %v; want %q on its chain", added, err, want)
	}
}

// TestWatchCap: the watches one cache holds are a share such that every inotify
// instance of the user being a session's cache still leaves half the user's watches
// (attack review 15, F4: 1/16 each, 16 sessions took them all); a tree with more
// directories than the cap is watched up to it, the rest by state, with the same
// result. Without the cap per instance the cache holds a watch for each directory.
func TestWatchCap(t *testing.T) {
	for _, l := range [][2]int{{8192, 128}, {192530, 128}, {65536, 8192}, {100, 1}} {
		if c := watchCap(l[0], l[1]); c*l[1] > l[0]/2 {
			t.Errorf("max_user_watches %d, max_user_instances %d: cap %d, all instances take %d", l[0], l[1], c, c*l[1])
		}
	}
	capNow := watchCap(inotifyLimit("max_user_watches", 8192), inotifyLimit("max_user_instances", 128))
	ws := filepath.Join(t.TempDir(), "ws")
	n := 0
	for i := 0; n <= capNow+10; i++ {
		for j := 0; j < 30; j++ {
			mkdirs(t, filepath.Join(ws, strconv.Itoa(i), strconv.Itoa(j)))
			n++
		}
	}
	mkdirs(t, filepath.Join(ws, "0", "0", ".git"))
	s := ProtectedScan{Trees: []string{ws}, Patterns: []string{".git"}, Limit: 2 * n}
	for i := 0; i < 2; i++ {
		if added, err := s.Rescan(); err != nil || len(added) != 1 {
			t.Fatalf("search %d: %v, %v", i, added, err)
		}
	}
	if s.cache.ifd < 0 {
		t.Skip("no inotify instance")
	}
	if got := len(s.cache.watches); got > capNow || s.cache.maxWatches != capNow {
		t.Errorf("%d directories: %d watches held, cap %d (cache's %d)", n, got, capNow, s.cache.maxWatches)
	}
	mkdirs(t, filepath.Join(ws, "5", "7", ".git"))
	if added, err := s.Rescan(); err != nil || len(added) != 2 {
		t.Errorf("a .git past the watched directories: %v, %v; want it found", added, err)
	}
}

// TestBoundsCwd: a request without --chdir starts in the caller's directory when it
// lies in the workspace (through a symlink too), else in the workspace; a policy's own
// cwd stays.
func TestBoundsCwd(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	sub := filepath.Join(ws, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	b := Bounds{Workspace: ws}
	for _, c := range []struct{ cwd, want string }{{sub, sub}, {link, sub}, {ws, ws}, {base, ws}, {"", ""}, {"rel", ""}} {
		if got, err := b.Check(Request{Cwd: c.cwd}); err != nil || got != c.want {
			t.Errorf("cwd %q: got %q, %v; want %q", c.cwd, got, err, c.want)
		}
	}
	b.Cwd = ws
	if got, _ := b.Check(Request{Cwd: sub}); got != "" {
		t.Errorf("with the policy's own cwd: got %q, want it kept", got)
	}
	if got, _ := b.Check(Request{Cwd: sub, Chdir: "/tmp"}); got != "/tmp" {
		t.Errorf("--chdir: got %q", got)
	}
}

// TestRescanRacedFailsClosed: while a process swaps a directory holding a .git with an
// empty one (renameat2 RENAME_EXCHANGE, in a loop), every search either finds the .git
// or fails (ErrChangedMidSearch), never succeeds without it: a change the watches saw
// during the walk, or a directory gone between its listing and its open, fails it
// (attack review 15, F5 repro B). Without it some searches skip the .git and succeed.
func TestRescanRacedFailsClosed(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkdirs(t, filepath.Join(ws, "a", "r", ".git"), filepath.Join(ws, "z", "r"))
	for i := 0; i < 40; i++ {
		mkdirs(t, filepath.Join(ws, "f"+strconv.Itoa(i)))
	}
	s := ProtectedScan{Trees: []string{ws}, Patterns: []string{".git"}}
	stop := make(chan struct{})
	done := make(chan struct{})
	defer func() {
		close(stop)
		<-done
	}()
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "a"), unix.AT_FDCWD, filepath.Join(ws, "z"), unix.RENAME_EXCHANGE)
		}
	}()
	var found, failed, missed int
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		added, err := s.Rescan()
		switch {
		case errors.Is(err, ErrChangedMidSearch):
			failed++
		case err != nil:
			t.Fatal(err)
		case len(added) == 1:
			found++
		default:
			missed++
		}
	}
	t.Logf("found %d, failed closed %d, missed %d", found, failed, missed)
	if missed > 0 {
		t.Errorf("%d searches succeeded without the .git", missed)
	}
}

// TestRescanSwappedDirs: two directories swapped between searches (RENAME_EXCHANGE:
// their parent has the event, not the watches of what lies below them) are read again
// below them: the .git is found at its new path. Without the identity check of a
// re-read directory's children the cache answered for the old inodes by path and the
// search missed it (the rescan then named a path that is gone).
func TestRescanSwappedDirs(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkdirs(t, filepath.Join(ws, "a", "r", ".git"), filepath.Join(ws, "z", "r"))
	s := ProtectedScan{Trees: []string{ws}, Patterns: []string{".git"}}
	for i, want := range []string{"a", "z", "a"} {
		if i > 0 {
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "a"), unix.AT_FDCWD, filepath.Join(ws, "z"), unix.RENAME_EXCHANGE); err != nil {
				t.Fatal(err)
			}
		}
		git := filepath.Join(ws, want, "r", ".git")
		if added, err := s.Rescan(); err != nil || !slices.Equal(Paths(added), []string{git}) {
			t.Errorf("swap %d: %v, %v; want %s", i, added, err, git)
		}
	}
}
