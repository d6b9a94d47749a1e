package cgroup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/namehash"
)

// sweptDir is the directory, inside the caller's lock directory (ownerLockDir), of the
// markers made once a whole sweep of a set of parent groups has run (sweptMarker): from
// then on a group of this gosbx in them whose owner is gone always leaves its owner's
// lock file in the lock directory, free (owner.go: taken before the mkdir, removed only
// once every directory of the group is gone), so a launch that makes no group sweeps
// only when one is free (sweepNeeded). A sweep covers only its caller's own groups
// (gcV1: one per hierarchy), so the marker is per set of parents: a launcher in another
// cgroup still makes its own first whole sweep, which collects the groups an older
// gosbx left there (they have no lock file; attack review 18, F4).
//
// A directory of their own, looked up by name only, so that the listing every launch
// makes of the lock directory (lockFileGroups) reads lock files alone: the markers of
// every cgroup a launcher ever ran from (2,188 on this machine after a day of tests)
// made it O(markers) a launch. There are at most sweptMax of them (markSwept). The
// name starts with neither "gosbx-" nor recordPrefix: no sweep, this gosbx's or an
// older one's, takes it for a lock file. The lock directory is on /run (tmpfs): the
// markers go with the boot, as do the groups. docs/decisions.md "Sweep markers in
// their own directory".
const sweptDir = "swept"

// oldSweptPrefix starts the name of a marker an older gosbx made in the lock directory
// itself. This one never reads them: a parent set swept only by an older gosbx is swept
// once more. markSwept removes them when it makes sweptDir or clears it.
const oldSweptPrefix = "swept."

// sweptMax bounds the markers in sweptDir: past it, markSwept removes every other one.
// A marker removed costs one more whole sweep of its parent set by its next launch,
// never a group left (its owner's lock file, free, still makes a launch sweep). 256:
// far more sets of parents in use at once than a host has (a login session, a service,
// a container each), and 256 names of 32 bytes are ~14 KiB, two getdents64(2) calls,
// read only by markSwept, which follows a whole sweep.
const sweptMax = 256

// sweptMarker is the marker's name in sweptDir for a sweep of parents (directories,
// any order): the first 32 hex digits of the SHA-256 of the sorted paths, one a line.
// A bounded name for any path length; one file per set of parents used.
func sweptMarker(parents []string) string {
	p := slices.Clone(parents)
	slices.Sort(p)
	sum := namehash.Sum256([]byte(strings.Join(p, "\n")))
	return hex.EncodeToString(sum[:16])
}

// openSweptDir opens sweptDir in the lock directory dfd if it is a directory of the
// caller's alone (mode 0700 or stricter), as openLockDir checks the lock directory:
// O_NOFOLLOW and O_DIRECTORY, so that a symbolic link, a FIFO or a socket there is
// refused without being opened (a FIFO would block open(2): attack review 18, F3).
// ENOTDIR for anything else at the name, which only the lock directory's owner could
// have put there.
func openSweptDir(dfd int) (int, error) {
	fd, err := unix.Openat(dfd, sweptDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		err = unix.ENOTDIR
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return -1, unix.ENOTDIR
	}
	return fd, nil
}

// sweepNeeded reports whether a sweep of parents could find a group to remove: no
// whole sweep of them ran yet (no regular file sweptMarker(parents) in sweptDir: groups an older
// gosbx made, which have no lock file, are collected by that first sweep), or a lock
// file in the caller's lock directory is free (under either of its names: owner.go
// recordName) (its owner is gone: a killed launcher's group, or a lock file left by one
// killed before its mkdir). A lock file held is a live owner's; an entry there that is
// not a regular file is no lock file (openLockFile), and never opened so that it could
// block. Anything that cannot be read says yes: the sweep then decides, as before.
// Costs a lookup of the marker by name, one listing of the lock directory (lock files
// only: the markers are in sweptDir) and a flock(2) try per lock file, against the sweep's
// listing of every hierarchy's parent group (docs/decisions.md "Speed, seventh
// attempt: the launcher's CPU").
func sweepNeeded(parents []string) bool {
	dfd, _, err := openLockDirMaybe(false) // missing: no sweep made it yet
	if err != nil {
		return true
	}
	defer unix.Close(dfd)
	sfd, err := openSweptDir(dfd)
	if err != nil {
		return true // missing: no sweep made a marker yet; not ours: markSwept replaces it
	}
	var st unix.Stat_t
	err = unix.Fstatat(sfd, sweptMarker(parents), &st, unix.AT_SYMLINK_NOFOLLOW)
	unix.Close(sfd)
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return true // a marker that is not a regular file is replaced by markSwept
	}
	names, err := lockFileGroups(dfd)
	if err != nil {
		return true
	}
	for _, name := range names {
		fd, err := openLockFile(dfd, name)
		if errors.Is(err, unix.ENOENT) {
			continue // released meanwhile (its group is gone), or no lock file
		}
		if err != nil {
			return true
		}
		free := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil
		unix.Close(fd)
		if free {
			return true
		}
	}
	return false
}

// markSwept makes sweptMarker(parents) in sweptDir after a whole sweep of parents
// (errors ignored: without it, the next launch sweeps again). sweptDir is made 0700 if
// missing; anything else at its name than a directory of the caller's alone (only the
// lock directory's owner can put it there: that one is 0700) is removed and the
// directory made in its place, once. The marker is made with O_EXCL and O_NOFOLLOW, so
// that nothing at its name is opened (a FIFO would block open(2) for good: attack
// review 18, F3); a regular file there is the marker already; anything else is removed
// and the marker made in its place, once: otherwise every launch would sweep and find
// it again. A marker made anew may take sweptDir past sweptMax: then every other one
// is removed (clearSwept).
func markSwept(parents []string) {
	dfd, dir, err := openLockDir()
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	sfd, made := -1, false
	for try := 0; try < 2 && sfd < 0; try++ {
		if err := unix.Mkdirat(dfd, sweptDir, 0o700); err == nil {
			made = true
		} else if !errors.Is(err, unix.EEXIST) {
			return
		}
		if sfd, err = openSweptDir(dfd); err != nil {
			os.RemoveAll(filepath.Join(dir, sweptDir)) // follows no symbolic link
		}
	}
	if sfd < 0 {
		return
	}
	defer unix.Close(sfd)
	if made {
		clearOldMarkers(dfd)
	}
	name := sweptMarker(parents)
	sub := filepath.Join(dir, sweptDir)
	for try := 0; try < 2; try++ {
		fd, err := unix.Openat(sfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err == nil {
			unix.Close(fd)
			if n, err := countEntries(sfd); err == nil && n > sweptMax {
				clearSwept(sfd, name)
				clearOldMarkers(dfd)
			}
			return
		}
		var st unix.Stat_t
		if !errors.Is(err, unix.EEXIST) || unix.Fstatat(sfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFREG {
			return
		}
		os.RemoveAll(filepath.Join(sub, name)) // follows no symbolic link
	}
}

// countEntries counts the entries of the directory dfd but "." and "..", read from its
// start with getdents64(2). Errors are lseek's and getdents64's.
func countEntries(dfd int) (int, error) {
	n := 0
	err := eachEntry(dfd, func(name []byte) {
		if string(name) != "." && string(name) != ".." {
			n++
		}
	})
	return n, err
}

// clearSwept removes every marker in the markers' directory sfd but keep. unlinkat(2)
// opens nothing: a FIFO there blocks nothing; a directory is left (EISDIR).
func clearSwept(sfd int, keep string) {
	var names []string
	eachEntry(sfd, func(name []byte) {
		if string(name) != keep && string(name) != "." && string(name) != ".." {
			names = append(names, string(name))
		}
	})
	for _, n := range names {
		unix.Unlinkat(sfd, n, 0)
	}
}

// clearOldMarkers removes the markers an older gosbx made in the lock directory dfd
// itself (oldSweptPrefix): this gosbx never reads them, and each was a name every
// launch's listing read. Only names of that form are touched, and unlinked, never
// opened.
func clearOldMarkers(dfd int) {
	var names []string
	eachEntry(dfd, func(name []byte) {
		if bytes.HasPrefix(name, []byte(oldSweptPrefix)) {
			names = append(names, string(name))
		}
	})
	for _, n := range names {
		unix.Unlinkat(dfd, n, 0)
	}
}
