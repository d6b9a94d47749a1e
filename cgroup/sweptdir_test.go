package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// entries counts the entries of the directory dir but "." and "..", from outside
// (os.ReadDir).
func entries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// The markers are out of the lock directory that every launch lists (sweepNeeded,
// lockFileGroups): after whole sweeps from 3,000 sets of parents the lock directory
// holds what it held after the first (its lock files and sweptDir), each getdents64(2)
// listing of it returns as many bytes, sweptDir never holds more than sweptMax markers,
// the set marked last is still marked (looked up by name: no sweep), and a killed
// launcher's lock file still makes the next launch sweep. Before, each set left a
// swept.<hash> in the lock directory, read by every launch.
func TestSweptMarkersBounded(t *testing.T) {
	dir := tempLockDir(t)
	live, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(live)
	set := func(i int) []string {
		return []string{fmt.Sprintf("/sys/fs/cgroup/memory/user.slice/session-%d.scope", i)}
	}
	markSwept(set(0))
	before, bytes0 := entries(t, dir), listedBytes(t, dir)
	for i := 1; i < 3000; i++ {
		markSwept(set(i))
		if n := entries(t, filepath.Join(dir, sweptDir)); n > sweptMax {
			t.Fatalf("%d markers after %d sets of parents, past the bound %d", n, i+1, sweptMax)
		}
		if i == 1000 && sweepNeeded(set(i)) {
			t.Errorf("a sweep needed for the set of parents marked last")
		}
	}
	if after := entries(t, dir); after != before {
		t.Errorf("the lock directory went from %d to %d entries after 3,000 sets of parents", before, after)
	}
	if b := listedBytes(t, dir); b != bytes0 {
		t.Errorf("a listing of the lock directory went from %d to %d bytes after 3,000 sets of parents", bytes0, b)
	}
	if sweepNeeded(set(2999)) {
		t.Error("a sweep needed for the set of parents marked last")
	}
	if !sweepNeeded(set(3000)) {
		t.Error("no sweep for a set of parents never swept")
	}
	dead, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close() // its launcher killed
	if !sweepNeeded(set(2999)) {
		t.Error("no sweep with a killed launcher's lock file free")
	}
}

// listedBytes is what getdents64(2) returns, in all, for a listing of dir.
func listedBytes(t *testing.T, dir string) int {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf, total := make([]byte, 8192), 0
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n <= 0 {
			return total
		}
		total += n
	}
}

// Markers an older gosbx left in the lock directory itself (swept.<hash>) are not read:
// a set of parents marked only there is swept once more; the first markSwept, which
// makes sweptDir, removes them (regular files of that name form only), so a
// launch's listing no longer reads them.
func TestOldSweptMarkers(t *testing.T) {
	dir := tempLockDir(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	parents := []string{"/sys/fs/cgroup/memory/a"}
	mk(t, filepath.Join(dir, oldSweptPrefix+sweptMarker(parents)))
	for i := range 2000 {
		mk(t, filepath.Join(dir, fmt.Sprintf("%s%032x", oldSweptPrefix, i)))
	}
	if err := os.Mkdir(filepath.Join(dir, oldSweptPrefix+"dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	live, err := ownerLock(groupName(NewID())) // a live owner's lock file, two names
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(live)
	if !sweepNeeded(parents) {
		t.Error("no sweep for a set of parents marked only by an older gosbx")
	}
	markSwept(parents)
	if sweepNeeded(parents) {
		t.Error("a sweep needed after markSwept")
	}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // the lock file's two names, sweptDir, the directory swept.dir
		want := []string{filepath.Base(live.Name()), recordName(filepath.Base(live.Name())), sweptDir, oldSweptPrefix + "dir"}
		t.Errorf("the lock directory after markSwept holds %d entries (first %q), want %q", len(names), names[:min(6, len(names))], want)
	}
}
