package cgroup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// sweptMarker is a file in the caller's lock directory (ownerLockDir) made once a
// whole sweep has run: from then on a group of this gosbx whose owner is gone always
// leaves its owner's lock file there, free (owner.go: taken before the mkdir, removed
// only once every directory of the group is gone), so a launch that makes no group
// sweeps only when one is free (sweepNeeded). The lock directory is on /run (tmpfs):
// the marker goes with the boot, as do the groups. Its name does not start with
// "gosbx-", so sweepOwnerLocks never takes it for a lock file.
const sweptMarker = "swept"

// sweepNeeded reports whether a sweep could find a group to remove: no whole sweep ran
// yet (no sweptMarker: groups an older gosbx made, which have no lock file, are
// collected by that first sweep), or a lock file in the caller's lock directory is
// free (under either of its names: owner.go recordName) (its owner is gone: a killed launcher's group, or a lock file left by one
// killed before its mkdir). A lock file held is a live owner's. Anything that cannot
// be read says yes: the sweep then decides, as before. Costs one directory listing and
// a flock(2) try per lock file, against the sweep's listing of every hierarchy's
// parent group (docs/decisions.md "Speed, seventh attempt: the launcher's CPU").
func sweepNeeded() bool {
	dfd, _, err := openLockDirMaybe(false) // missing: no sweep made it yet
	if err != nil {
		return true
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if unix.Fstatat(dfd, sweptMarker, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return true
	}
	names, err := readNames(dfd)
	if err != nil {
		return true
	}
	for _, name := range lockFileGroups(names) {
		fd, err := openLockFile(dfd, name)
		if errors.Is(err, unix.ENOENT) {
			continue // released meanwhile: its group is gone
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

// markSwept makes sweptMarker after a whole sweep (errors ignored: without it, the next
// launch sweeps again).
func markSwept() {
	dfd, _, err := openLockDir()
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	if fd, err := unix.Openat(dfd, sweptMarker, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600); err == nil {
		unix.Close(fd)
	}
}
