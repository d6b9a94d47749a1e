package cgroup

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/namehash"
)

// sweptPrefix starts the name of a marker in the caller's lock directory (ownerLockDir),
// made once a whole sweep of a set of parent groups has run (sweptMarker): from then on
// a group of this gosbx in them whose owner is gone always leaves its owner's lock file
// there, free (owner.go: taken before the mkdir, removed only once every directory of
// the group is gone), so a launch that makes no group sweeps only when one is free
// (sweepNeeded). A sweep covers only its caller's own groups (gcV1: one per hierarchy),
// so the marker is per set of parents: a launcher in another cgroup still makes its
// own first whole sweep, which collects the groups an older gosbx left there (they have
// no lock file; attack review 18, F4). The lock directory is on /run (tmpfs): the
// markers go with the boot, as do the groups. The name does not start with "gosbx-" or
// recordPrefix, so sweepOwnerLocks never takes it for a lock file.
const sweptPrefix = "swept."

// sweptMarker is the marker's name for a sweep of parents (directories, any order):
// sweptPrefix and the first 32 hex digits of the SHA-256 of the sorted paths, one a
// line. A bounded name for any path length; one file per set of parents used.
func sweptMarker(parents []string) string {
	p := slices.Clone(parents)
	slices.Sort(p)
	sum := namehash.Sum256([]byte(strings.Join(p, "\n")))
	return sweptPrefix + hex.EncodeToString(sum[:16])
}

// sweepNeeded reports whether a sweep of parents could find a group to remove: no
// whole sweep of them ran yet (no regular file at sweptMarker(parents): groups an older
// gosbx made, which have no lock file, are collected by that first sweep), or a lock
// file in the caller's lock directory is free (under either of its names: owner.go
// recordName) (its owner is gone: a killed launcher's group, or a lock file left by one
// killed before its mkdir). A lock file held is a live owner's; an entry there that is
// not a regular file is no lock file (openLockFile), and never opened so that it could
// block. Anything that cannot be read says yes: the sweep then decides, as before.
// Costs one directory listing and a flock(2) try per lock file, against the sweep's
// listing of every hierarchy's parent group (docs/decisions.md "Speed, seventh
// attempt: the launcher's CPU").
func sweepNeeded(parents []string) bool {
	dfd, _, err := openLockDirMaybe(false) // missing: no sweep made it yet
	if err != nil {
		return true
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstatat(dfd, sweptMarker(parents), &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return true // a marker that is not a regular file is replaced by markSwept
	}
	names, err := readNames(dfd)
	if err != nil {
		return true
	}
	for _, name := range lockFileGroups(names) {
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

// markSwept makes sweptMarker(parents) after a whole sweep of parents (errors ignored:
// without it, the next launch sweeps again). Made with O_EXCL and O_NOFOLLOW, so that
// nothing at the name is opened (a FIFO would block open(2) for good: attack review
// 18, F3); a regular file there is the marker already. Anything else at the name (only
// the directory's owner can put it there: it is 0700) is removed and the marker made
// in its place, once: otherwise every launch would sweep and find it again.
func markSwept(parents []string) {
	dfd, dir, err := openLockDir()
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	name := sweptMarker(parents)
	for try := 0; try < 2; try++ {
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err == nil {
			unix.Close(fd)
			return
		}
		var st unix.Stat_t
		if !errors.Is(err, unix.EEXIST) || unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFREG {
			return
		}
		os.RemoveAll(filepath.Join(dir, name)) // follows no symbolic link
	}
}
