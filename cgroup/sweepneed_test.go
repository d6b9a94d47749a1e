package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

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
	if !sweepNeeded() {
		t.Error("no lock directory yet: no sweep")
	}
	markSwept()
	if _, err := os.Stat(filepath.Join(dir, sweptMarker)); err != nil {
		t.Fatalf("no marker after markSwept: %v", err)
	}
	if sweepNeeded() {
		t.Error("a sweep with no lock file at all")
	}
	live, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(live)
	if sweepNeeded() {
		t.Error("a sweep with every lock file held by its owner")
	}
	dead, err := ownerLock(groupName(NewID()))
	if err != nil {
		t.Fatal(err)
	}
	dead.Close() // its owner killed: the file left, unlocked
	if !sweepNeeded() {
		t.Error("no sweep with a killed owner's lock file left free")
	}
	if err := unix.Flock(int(live.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the live owner lost its lock to the check: %v", err)
	}
	os.Remove(dead.Name()) // an older gosbx's sweep removed its first name (owner.go recordName)
	if !sweepNeeded() {
		t.Error("no sweep with a killed owner's lock file left free under its second name")
	}
	os.Remove(filepath.Join(dir, recordName(filepath.Base(dead.Name())))) // a sweep removed it
	if sweepNeeded() {
		t.Error("a sweep once the free lock file is gone")
	}
	if err := os.Remove(filepath.Join(dir, sweptMarker)); err != nil {
		t.Fatal(err)
	}
	if !sweepNeeded() {
		t.Error("no sweep without the marker (an older gosbx's groups have no lock file)")
	}
	if err := os.Mkdir(filepath.Join(dir, sweptMarker), 0o700); err != nil {
		t.Fatal(err)
	}
	if !sweepNeeded() {
		t.Error("no sweep with a directory in place of the marker")
	}
}

// An owner lets go of its lock file only once its group's directories are gone: a
// group left behind (a removal that failed) keeps a free lock file, which makes the
// next launch sweep (sweepNeeded), where a removed one would leave a directory it does
// not look for.
func TestReleaseOwnerIfGone(t *testing.T) {
	tempLockDir(t)
	markSwept()
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
	if !sweepNeeded() {
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
