package cgroup

import (
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A sandbox's group is named gosbx-<id> by the sandbox's id (NewID), never by a pid: a
// pid is reused. Whether its owner (the process that made it and holds the sandbox)
// is alive is a lock the kernel keeps for it: the owner holds an exclusive flock(2) on
// the group's directory (in v1, on its directory in each hierarchy) for the group's
// life, and the kernel drops it when the owner dies, however it dies. A sweep (gcV1,
// gcV2) removes a directory whose lock it can take.
//
// The owner takes its lock just after the directory exists; a sweep in between would
// take the new group for a dead one. So a creator holds a shared lock on the parent
// directory from before the mkdir to after its own lock, and a sweep runs only under an
// exclusive lock of the parent, taken without waiting (a sweep skipped for a launch in
// progress is done by the next launch).

// NewID returns a new sandbox id: 16 random hex digits (getrandom(2), the kernel's
// generator crypto/rand reads too: crypto/rand would link the FIPS module, whose 16
// package inits every start paid), the first a letter, so that no older gosbx takes
// gosbx-<id> for gosbx-<pid> (a dead launcher's).
func NewID() string {
	var b [8]byte
	for n := 0; n < len(b); {
		m, err := unix.Getrandom(b[n:], 0)
		if err != nil && err != unix.EINTR {
			panic("getrandom: " + err.Error()) // Linux 3.17; crypto/rand.Read panics too
		}
		n += max(m, 0)
	}
	b[0] |= 0xa0
	return hex.EncodeToString(b[:])
}

// groupName is the group of the sandbox id: gosbx-<id>.
func groupName(id string) string { return "gosbx-" + id }

// lockDir takes a flock(2) of how (unix.LOCK_SH, or LOCK_EX|LOCK_NB) on the directory
// dir; the returned file holds it until closed. nil when dir cannot be opened or the
// lock is held by another.
func lockDir(dir string, how int) *os.File {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	for {
		err = unix.Flock(fd, how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), dir)
}

// sweepLock takes the exclusive lock of a sweep on the parent directory dir, trying
// again every 2 ms for up to wait while a launch making a group there (its shared lock)
// or another sweep holds it. nil when it was not taken.
func sweepLock(dir string, wait time.Duration) *os.File {
	deadline := time.Now().Add(wait)
	for {
		if f := lockDir(dir, unix.LOCK_EX|unix.LOCK_NB); f != nil || !time.Now().Before(deadline) {
			return f
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ownerAlive reports whether the owner of the group name in the directory parent
// still holds it: its lock cannot be taken. A group whose directory is gone (a partial
// removal in v1) has no owner; one that cannot be opened for another reason is kept.
// Groups named by an older gosbx (gosbx-<pid>-<seq>-<time>) are judged by that pid.
func ownerAlive(parent, name string) bool {
	if legacyName(name) {
		return launcherAlive(name)
	}
	fd, err := unix.Open(parent+"/"+name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false
	}
	if err != nil {
		return true
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil
}

// legacyName reports whether name is gosbx-<pid>-<seq>-<time>, as gosbx named groups
// before sandbox ids.
func legacyName(name string) bool {
	parts := strings.Split(name, "-")
	if len(parts) != 4 || parts[0] != "gosbx" {
		return false
	}
	for _, p := range parts[1:] {
		if _, err := strconv.ParseUint(p, 10, 64); err != nil {
			return false
		}
	}
	return true
}
