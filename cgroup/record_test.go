package cgroup

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeV1 points v1Root at a directory of the test's, with the caller's group parent
// made in each hierarchy (a plain directory); it returns the root.
func fakeV1(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	old := v1Root
	v1Root = root
	t.Cleanup(func() { v1Root = old })
	return root
}

// fakeGroup makes a stand-in group directory (with an empty cgroup.procs, as the
// sweep's removal reads it) at each of dirs.
func fakeGroup(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// deadOwner makes the lock file of the group name recording dirs, as ownerLock does,
// and lets it go, as a SIGKILLed owner does: its path.
func deadOwner(t *testing.T, name string, dirs ...string) string {
	t.Helper()
	f, err := ownerLock(name, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return f.Name()
}

// A killed owner's group made under another caller's cgroup (the parents "b") is
// removed by a sweep whose parents ("a") do not hold it, through the record in the lock
// file, and the lock file after it; a live owner's group there is kept with its file.
// Before the record, the sweep removed the free lock file because its parents held no
// such group, and left the group to no later launch (sweepNeeded looks at lock files).
func TestSweepRemovesRecordedGroup(t *testing.T) {
	locks := tempLockDir(t)
	root := fakeV1(t)
	var mine, other []string // the sweeper's parents, the dead owner's
	for _, sub := range []string{"memory", "pids", "cpu"} {
		mine = append(mine, filepath.Join(root, sub, "a"))
		other = append(other, filepath.Join(root, sub, "b"))
	}
	fakeGroup(t, mine...)
	deadName, liveName := groupName(NewID()), groupName(NewID())
	var deadDirs, liveDirs []string
	for _, o := range other {
		deadDirs = append(deadDirs, filepath.Join(o, deadName))
		liveDirs = append(liveDirs, filepath.Join(o, liveName))
	}
	fakeGroup(t, append(deadDirs, liveDirs...)...)
	dead := deadOwner(t, deadName, deadDirs...)
	live, err := ownerLock(liveName, liveDirs...)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwner(live)
	if b, err := os.ReadFile(dead); err != nil || string(b) != string(recordText(deadDirs)) {
		t.Fatalf("the lock file records %q (%v); want %q", b, err, recordText(deadDirs))
	}
	if !sweepNeeded(nil) {
		t.Fatal("no sweep with a free lock file")
	}
	sweepOwnerLocks(mine, V1)
	for _, d := range deadDirs {
		if exists(d) {
			t.Errorf("the dead owner's group %s was kept", d)
		}
	}
	if exists(dead) || exists(filepath.Join(locks, recordName(deadName))) {
		t.Errorf("the dead owner's lock file %s was kept", dead)
	}
	for _, d := range liveDirs {
		if !exists(d) {
			t.Errorf("the live owner's group %s was removed", d)
		}
	}
	if !exists(live.Name()) || !exists(filepath.Join(locks, recordName(liveName))) {
		t.Error("the live owner's lock file was removed")
	}
	markSwept(nil)
	if sweepNeeded(nil) {
		t.Error("a sweep is still needed once the dead owner's group and file are gone")
	}
	if _, err := os.Stat(filepath.Join(locks, sweptDir, sweptMarker(nil))); err != nil {
		t.Error(err)
	}
}

// A lock file without a record (an older gosbx of this boot, or an owner killed before
// it wrote one) has its group looked for by name in the whole hierarchy: removed
// wherever it is, then the file. A record naming anything but the group's directory
// below a cgroup mount is not followed: nothing outside the mounts is touched.
func TestSweepUnrecordedGroup(t *testing.T) {
	tempLockDir(t)
	root := fakeV1(t)
	outside := t.TempDir()
	mine := []string{filepath.Join(root, "memory", "a")}
	fakeGroup(t, mine...)

	bare := groupName(NewID())
	bareDirs := []string{filepath.Join(root, "memory", "x", "y", bare), filepath.Join(root, "pids", "z", bare)}
	fakeGroup(t, bareDirs...)
	bareLock := deadOwner(t, bare)

	bad := groupName(NewID())
	badDir := filepath.Join(outside, bad)
	fakeGroup(t, badDir)
	badLock := deadOwner(t, bad, badDir)

	sweepOwnerLocks(mine, V1)
	for _, d := range bareDirs {
		if exists(d) {
			t.Errorf("the group %s of a lock file without a record was kept", d)
		}
	}
	if exists(bareLock) {
		t.Error("the lock file without a record was kept once its group was gone")
	}
	if !exists(badDir) {
		t.Errorf("a directory outside the cgroup mounts (%s), named in a record, was removed", badDir)
	}
	if exists(badLock) {
		t.Error("the lock file with a bad record was kept: no group of its name is in the hierarchies")
	}
}

// A recorded directory that is left (here a symlink, which is not followed) keeps the
// lock file, free: the next launch sees it and tries again, so the group is never
// forgotten.
func TestSweepKeepsFileWhileGroupLeft(t *testing.T) {
	tempLockDir(t)
	root := fakeV1(t)
	name := groupName(NewID())
	target := filepath.Join(t.TempDir(), "target")
	fakeGroup(t, target)
	link := filepath.Join(root, "memory", "b", name)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	lock := deadOwner(t, name, link)
	sweepOwnerLocks(nil, V1)
	if !exists(target) {
		t.Error("the sweep followed a recorded symlink")
	}
	if !exists(lock) {
		t.Error("the lock file was removed while a recorded path is left")
	}
	if !sweepNeeded(nil) {
		t.Error("no sweep needed while the free lock file is left")
	}
}

// v2: a killed owner's group under a --cgroup-parent is removed by the sweep of the
// default parent, through the record.
func TestV2SweepRecordedParent(t *testing.T) {
	root := fakeV2(t, DefaultParent, "/other")
	name := groupName(NewID())
	dir := filepath.Join(root, "other", name)
	fakeGroup(t, dir)
	lock := deadOwner(t, name, dir)
	gcV2(DefaultParent, 0)
	if exists(dir) {
		t.Errorf("the dead owner's group %s was kept", dir)
	}
	if exists(lock) {
		t.Error("the dead owner's lock file was kept")
	}
}

// What a record may name: the group's directory, absolute and clean, strictly below a
// mount of its kind.
func TestReadRecord(t *testing.T) {
	tempLockDir(t)
	root := fakeV1(t)
	name := groupName(NewID())
	good := filepath.Join(root, "memory", "a", name)
	for _, c := range []struct {
		dirs []string
		kind Kind
		ok   bool
	}{
		{[]string{good, filepath.Join(root, "cpuacct", name)}, V1, true},
		{[]string{good}, V2, false},                                    // not below the v2 mount
		{[]string{filepath.Join(root, "memory", name+"x")}, V1, false}, // another name
		{[]string{root + "/memory/a/../" + name}, V1, false},           // not clean
		{[]string{"memory/" + name}, V1, false},                        // relative
		{[]string{filepath.Join(root, "freezer", name)}, V1, false},    // not a hierarchy gosbx uses
		{[]string{good, "/etc/" + name}, V1, false},                    // one bad line spoils it
		{[]string{filepath.Join(root, "memory")}, V1, false},           // the mount itself
		{nil, V1, false}, // no record
	} {
		f, err := ownerLock(name, c.dirs...)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := readRecord(int(f.Fd()), name, c.kind)
		releaseOwner(f)
		if ok != c.ok || (ok && !slices.Equal(got, c.dirs)) {
			t.Errorf("record %q (%s): %q, %v; want ok %v", c.dirs, c.kind, got, ok, c.ok)
		}
	}
}

// An older gosbx's sweep (before records) removes a free gosbx-<id> whose group is not
// in its parents; the file's second name (recordName) keeps it, its record and its
// lock for this one: the next sweep still removes the group, then the second name.
func TestSweepAfterOlderSweep(t *testing.T) {
	locks := tempLockDir(t)
	root := fakeV1(t)
	name := groupName(NewID())
	dirs := []string{filepath.Join(root, "memory", "b", name), filepath.Join(root, "pids", "b", name)}
	fakeGroup(t, dirs...)
	lock := deadOwner(t, name, dirs...)
	second := filepath.Join(locks, recordName(name))
	var a, b unix.Stat_t
	if err := unix.Stat(lock, &a); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(second, &b); err != nil || a.Ino != b.Ino {
		t.Fatalf("the lock file's second name %s: %v (inode %d, want %d)", second, err, b.Ino, a.Ino)
	}
	if err := os.Remove(lock); err != nil { // what the older sweep does
		t.Fatal(err)
	}
	markSwept(nil)
	if !sweepNeeded(nil) {
		t.Fatal("no sweep with the second name left free")
	}
	sweepOwnerLocks(nil, V1)
	for _, d := range dirs {
		if exists(d) {
			t.Errorf("the dead owner's group %s was kept", d)
		}
	}
	if exists(second) {
		t.Error("the second name was kept once the group was gone")
	}
}
