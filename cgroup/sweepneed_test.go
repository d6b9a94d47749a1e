package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tempLockDir points ownerLockDir at a directory of the test's own.
func tempLockDir(t *testing.T) string {
	t.Helper()
	old := ownerLockDir
	locks := t.TempDir()
	ownerLockDir = func(uid int) string { return filepath.Join(locks, strconv.Itoa(uid)) }
	t.Cleanup(func() { ownerLockDir = old })
	return ownerLockDir(os.Geteuid())
}

// A launch that makes no group sweeps when a sweep could find something: before any
// whole sweep (no marker: groups of an older gosbx have no lock file), and whenever a
// lock file is free (its owner gone: a killed launcher's group); not while every lock
// file is held by a live owner.
func TestSweepNeeded(t *testing.T) {
	dir := tempLockDir(t)
	if !sweepNeeded(nil) {
		t.Error("no lock directory yet: no sweep")
	}
	markSwept(nil)
	if _, err := os.Stat(filepath.Join(dir, sweptDir, sweptMarker(nil))); err != nil {
		t.Fatalf("no marker after markSwept: %v", err)
	}
	if sweepNeeded(nil) {
		t.Error("a sweep with no lock file at all")
	}
	live, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(live)
	if sweepNeeded(nil) {
		t.Error("a sweep with every lock file held by its owner")
	}
	dead, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close() // its owner killed: the file left, unlocked
	if !sweepNeeded(nil) {
		t.Error("no sweep with a killed owner's lock file left free")
	}
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the live owner lost its lock to the check: %v", err)
	}
	os.Remove(dead.Name()) // an older gosbx's sweep removed its first name (owner.go recordName)
	if !sweepNeeded(nil) {
		t.Error("no sweep with a killed owner's lock file left free under its second name")
	}
	os.Remove(filepath.Join(dir, recordName(filepath.Base(dead.Name())))) // a sweep removed it
	if sweepNeeded(nil) {
		t.Error("a sweep once the free lock file is gone")
	}
	if err := os.Remove(filepath.Join(dir, sweptDir, sweptMarker(nil))); err != nil {
		t.Fatal(err)
	}
	if !sweepNeeded(nil) {
		t.Error("no sweep without the marker (an older gosbx's groups have no lock file)")
	}
	if err := os.Mkdir(filepath.Join(dir, sweptDir, sweptMarker(nil)), 0o700); err != nil {
		t.Fatal(err)
	}
	if !sweepNeeded(nil) {
		t.Error("no sweep with a directory in place of the marker")
	}
	markSwept(nil) // replaces it: not a sweep at every launch
	if sweepNeeded(nil) {
		t.Error("a sweep at every launch: markSwept kept the directory in place of the marker")
	}
}

// promptly fails the test when f does not return within 5 s (a FIFO's open(2) without
// O_NONBLOCK waits for a writer for good).
func promptly(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked (still running after 5 s)", what)
	}
}

// plant makes a FIFO, a socket, a directory (0700 or 0755) or a symbolic link to a
// directory at path.
func plant(t *testing.T, kind, path string) {
	t.Helper()
	var err error
	switch kind {
	case "fifo":
		err = unix.Mkfifo(path, 0o600)
	case "socket":
		var fd int
		var dfd int
		if dfd, err = unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
			break
		}
		defer unix.Close(dfd)
		if fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err == nil {
			// through the directory's descriptor: a sun_path of at most 108 bytes
			err = unix.Bind(fd, &unix.SockaddrUnix{Name: "/proc/self/fd/" + strconv.Itoa(dfd) + "/" + filepath.Base(path)})
			unix.Close(fd) // the socket file stays
		}
	case "dir":
		err = os.Mkdir(path, 0o700)
	case "dir0755": // a directory others may open
		if err = os.Mkdir(path, 0o700); err == nil {
			err = os.Chmod(path, 0o755)
		}
	case "symlink": // to a directory of the caller's, 0700: still not followed
		err = os.Symlink(t.TempDir(), path)
	}
	if err != nil {
		t.Fatalf("make a %s at %s: %v", kind, path, err)
	}
}

// Nothing in the lock directory blocks a launch (attack review 18, F3): a FIFO, a
// socket or a directory under the marker's name, a lock file's name (gosbx-<id>) or its
// second name (record.gosbx-<id>), leaves sweepNeeded, markSwept, sweepOwnerLocks and
// ownerAlive returning at once; it is no lock file (not counted free, not removed), and
// the marker's name is taken back, so a launch does not sweep every time. Before, a
// FIFO blocked markSwept's open (O_WRONLY) and the lock files' (O_RDONLY) for good.
func TestLockDirEntriesNeverBlock(t *testing.T) {
	for _, c := range []struct{ kind, at string }{
		{"fifo", "marker"}, {"socket", "marker"}, {"dir", "marker"},
		{"fifo", sweptDir}, {"socket", sweptDir}, {"symlink", sweptDir}, {"dir0755", sweptDir},
	} {
		kind := c.kind
		t.Run(kind+"-at-"+c.at, func(t *testing.T) {
			dir := tempLockDir(t)
			root := fakeV1(t)
			parents := []string{filepath.Join(root, "memory", "a")}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			first, second := groupName(NewID()), groupName(NewID())
			// first's group exists, owned by nobody but the planted entry
			group := filepath.Join(root, "memory", "a", first)
			fakeGroup(t, group)
			if c.at == sweptDir {
				plant(t, kind, filepath.Join(dir, sweptDir))
			} else {
				if err := os.Mkdir(filepath.Join(dir, sweptDir), 0o700); err != nil {
					t.Fatal(err)
				}
				plant(t, kind, filepath.Join(dir, sweptDir, sweptMarker(parents)))
			}
			plant(t, kind, filepath.Join(dir, first))
			plant(t, kind, filepath.Join(dir, recordName(second)))
			var needed bool
			promptly(t, "sweepNeeded", func() { needed = sweepNeeded(parents) })
			if !needed {
				t.Errorf("no sweep with a %s as the marker", kind)
			}
			promptly(t, "markSwept", func() { markSwept(parents) })
			var st unix.Stat_t
			if err := unix.Lstat(filepath.Join(dir, sweptDir, sweptMarker(parents)), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
				t.Errorf("the %s at %s was not replaced by the marker (%v, mode %#o)", kind, c.at, err, st.Mode)
			}
			if err := unix.Lstat(filepath.Join(dir, sweptDir), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o077 != 0 {
				t.Errorf("%s is not a 0700 directory after markSwept (%v, mode %#o)", sweptDir, err, st.Mode)
			}
			promptly(t, "sweepNeeded", func() { needed = sweepNeeded(parents) })
			if needed {
				t.Errorf("a sweep at every launch: a %s at a lock file's name counted as a free lock file", kind)
			}
			promptly(t, "ownerAlive", func() { ownerAlive(filepath.Dir(group), first) })
			promptly(t, "sweepOwnerLocks", func() { sweepOwnerLocks(parents, V1) })
			for _, n := range []string{first, recordName(second)} {
				if err := unix.Lstat(filepath.Join(dir, n), &st); err != nil {
					t.Errorf("the %s at %s, no lock file of gosbx's, was removed: %v", kind, n, err)
				}
			}
			promptly(t, "ownerLock", func() {
				if f, err := ownerLock(first); err == nil {
					f.Close()
					t.Errorf("ownerLock took a %s as its lock file", kind)
				}
			})
		})
	}
}

// The marker is per set of parents (attack review 18, F4): after a whole sweep by a
// launcher in cgroup "a", one in "b" still makes its own first whole sweep, which
// removes the group an older gosbx left in b (no lock file: judged by the lock on its
// directory, free), and then no more. Before, one marker for the lock directory meant
// b's launches never swept b.
func TestSweptPerParents(t *testing.T) {
	tempLockDir(t)
	root := fakeV1(t)
	own := func(cg string) []v1Dir {
		var out []v1Dir
		for _, sub := range []string{"memory", "pids", "cpu"} {
			d := filepath.Join(root, sub, cg)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			out = append(out, v1Dir{sub, d})
		}
		return out
	}
	a, b := own("a"), own("b")
	name := groupName(NewID())
	var old []string // an older gosbx's group in b, its owner gone
	for _, o := range b {
		old = append(old, filepath.Join(o.dir, name))
	}
	fakeGroup(t, old...)
	collectV1(a)
	if sweepNeeded(ownDirs(a)) {
		t.Error("a sweep still needed in a after its whole sweep")
	}
	for _, d := range old {
		if !exists(d) {
			t.Fatalf("a's sweep reached b's group %s", d)
		}
	}
	if !sweepNeeded(ownDirs(b)) {
		t.Error("no sweep needed in b, never swept, after a's sweep")
	}
	collectV1(b)
	for _, d := range old {
		if exists(d) {
			t.Errorf("the older gosbx's group %s in b was kept: b's first launch did not sweep", d)
		}
	}
	if sweepNeeded(ownDirs(b)) {
		t.Error("a sweep still needed in b after its whole sweep")
	}
}

// An owner lets go of its lock file only once its group's directories are gone: a
// group left behind (a removal that failed) keeps a free lock file, which makes the
// next launch sweep (sweepNeeded), where a removed one would leave a directory it does
// not look for.
func TestReleaseOwnerIfGone(t *testing.T) {
	tempLockDir(t)
	markSwept(nil)
	left := t.TempDir() // a group directory still there
	f, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	name := f.Name()
	releaseOwnerIfGone(f, filepath.Join(left, "gone"), left)
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("the lock file of a group left behind was removed: %v", err)
	}
	if !sweepNeeded(nil) {
		t.Error("no sweep with the lock file of a group left behind")
	}
	f, err = ownerLock(filepath.Base(name)) // the file free: taken again
	if err != nil {
		t.Fatal(err)
	}
	releaseOwnerIfGone(f, filepath.Join(left, "gone"))
	for _, n := range []string{name, filepath.Join(filepath.Dir(name), recordName(filepath.Base(name)))} {
		if _, err := os.Stat(n); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the lock file %s of a group gone was kept (%v)", n, err)
		}
	}
}
