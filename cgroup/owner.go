package cgroup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/dirent"
	"github.com/gosbx/gosbx/internal/rundir"
)

// A sandbox's group is named gosbx-<id> by the sandbox's id (NewID), never by a pid: a
// pid is reused. Whether its owner (the process that made it and holds the sandbox)
// is alive is a lock the kernel keeps for it: the owner holds an exclusive flock(2) on
// the group's lock file, <ownerLockDir>/gosbx-<id>, for the group's life, and the
// kernel drops it when the owner dies, however it dies. The lock file is taken before
// the group's directory is made and removed after it is gone, so a sweep (gcV1, gcV2)
// that finds a directory finds its owner's lock held, or free for good: it removes
// a directory whose lock it can take, then the lock file. The file records where the
// group's directories are (record.go), so that a sweep from any cgroup removes them.
//
// Never a lock on the cgroup directories themselves: they are mode 0755, any user may
// open one and flock(2) it, and so stall every launch that waits for it, keep a dead
// group alive, or fail a launch (review7 F1). The lock files live in a directory only
// the owner may open (mode 0700), and no lock is waited for.

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

// ownerLockDir is the directory of the owners' lock files of the groups the user uid
// makes: cgroups/ in uid's runtime directory of gosbx by the rule that does not read
// the environment (internal/rundir, with no XDG_RUNTIME_DIR: a sweep by root finds
// another user's there): root's /run/gosbx/cgroups (beside /run/gosbx/ids), another
// user's /run/user/<uid>/gosbx/cgroups (pam_systemd's runtime directory: a user makes
// groups only in a v2 subtree delegated to its login session) or, with none,
// /tmp/gosbx-<uid>/cgroups. A variable so that tests can point it at a directory of
// their own.
var ownerLockDir = func(uid int) string {
	d, _ := rundir.Path(uid, "") // no error without XDG_RUNTIME_DIR
	return filepath.Join(d, "cgroups")
}

// ownerLockBase checks the private directory ownerLockDir lies in where that is
// /tmp/gosbx-<uid> (not a test's directory), made 0700 first with create: one another
// user made first is refused (rundir.Make); /run/gosbx and /run/user/<uid> are
// root's and uid's alone already.
func ownerLockBase(uid int, dir string, create bool) error {
	base, _ := rundir.Path(uid, "")
	if uid == 0 || filepath.Dir(dir) != base || filepath.Dir(base) != "/tmp" {
		return nil
	}
	if create {
		_, err := rundir.Make(uid, "")
		return err
	}
	return rundir.Check(base, uid)
}

// openLockDir opens the caller's lock directory (ownerLockDir), made 0700 if missing,
// and checks that it is the caller's alone: a directory another user could open, that
// user could flock(2) files in. Errors name the path and the fix.
func openLockDir() (int, string, error) { return openLockDirMaybe(true) }

// openLockDirMaybe is openLockDir, which makes a missing directory only when create.
func openLockDirMaybe(create bool) (int, string, error) {
	uid := os.Geteuid()
	dir := ownerLockDir(uid)
	if err := ownerLockBase(uid, dir, create); err != nil {
		return -1, dir, err
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return -1, dir, fmt.Errorf("create %s: %w", dir, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, dir, fmt.Errorf("open %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, dir, fmt.Errorf("stat %s: %w", dir, err)
	}
	if int(st.Uid) != uid || st.Mode&0o077 != 0 {
		unix.Close(fd)
		if rundir.Unmapped(st.Uid) {
			return -1, dir, fmt.Errorf("%s is not a directory of uid %d's alone (owner %s, mode %#o): %s",
				dir, uid, rundir.Owner(st.Uid), st.Mode&0o7777, rundir.LeaveFix)
		}
		return -1, dir, fmt.Errorf("%s is not a directory of uid %d's alone (owner %d, mode %#o): make it so with `chown %d %s && chmod 0700 %s`",
			dir, uid, st.Uid, st.Mode&0o7777, uid, dir, dir)
	}
	return fd, dir, nil
}

// ownerLock takes the owner's lock of the group name (owner.go): its lock file in the
// caller's lock directory, made locked (bornLocked), or an existing one locked without
// waiting (a sweep may hold an orphan one for an instant, and removes it: then the file
// is made anew). The file records dirs, the group's directories to be (record.go),
// written while it is locked: a later launch finding it free removes them. The
// returned file holds the lock until releaseOwner. Errors name the file.
func ownerLock(name string, dirs ...string) (*os.File, error) {
	dfd, dir, err := openLockDir()
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	p := filepath.Join(dir, name)
	if f := bornLocked(dfd, name, p, dirs); f != nil {
		return f, nil
	}
	for again := 0; again < 8; again++ {
		fd, err := unix.Openat(dfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", p, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue // a sweep's instant on an orphan file: it removes it
			}
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(fd, &held) != nil || unix.Fstatat(dfd, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			held.Ino != now.Ino || held.Dev != now.Dev {
			unix.Close(fd) // removed by a sweep between the open and the lock
			continue
		}
		if held.Mode&unix.S_IFMT != unix.S_IFREG { // gosbx makes only regular files there
			unix.Close(fd)
			return nil, fmt.Errorf("lock %s: not a regular file (mode %#o): remove it", p, held.Mode)
		}
		if err := writeRecord(fd, p, dirs); err != nil {
			unix.Close(fd) // left free, without a record: a sweep looks for its group by name
			return nil, fmt.Errorf("record the group in %s: %w", p, err)
		}
		unix.Linkat(dfd, name, dfd, recordName(name), 0) // best effort, as in bornLocked
		return os.NewFile(uintptr(fd), p), nil
	}
	return nil, fmt.Errorf("lock %s: held or removed by another process again and again", p)
}

// bornLocked makes the lock file name in the directory dfd already locked and holding
// the record of dirs: an unnamed file (open(2) O_TMPFILE), locked, written, then linked
// at name and at recordName(name) (linkat(2) through /proc/self/fd, AT_SYMLINK_FOLLOW;
// the second name is best effort: without it the file is found by the first, only not
// kept from an older gosbx's sweep). A file created at its name and locked after would
// look orphaned to a sweep between the two (sweepOwnerLocks: no group yet, lock free),
// which then held it while it removed it; under load, for longer than ownerLock's
// retries ("held or removed by another process again and again": docs/decisions.md "A
// raw launch's descriptors closed twice"). nil when the name exists already or the
// file system or a missing /proc refuses: ownerLock then creates and locks the file.
func bornLocked(dfd int, name, p string, dirs []string) *os.File {
	fd, err := unix.Openat(dfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil || writeRecord(fd, p, dirs) != nil ||
		unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dfd, name, unix.AT_SYMLINK_FOLLOW) != nil {
		unix.Close(fd)
		return nil
	}
	unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dfd, recordName(name), unix.AT_SYMLINK_FOLLOW)
	return os.NewFile(uintptr(fd), p)
}

// recordPrefix starts the lock file's second name, recordName: one that does not start
// with "gosbx-". A sweep of an older gosbx (before records) removes a free gosbx-<id>
// whose group is not in its own parents, and with it, before the second name, the only
// trace a later launch looked for (sweepNeeded); it never touches a name of another
// form, so the file, its record and its lock stay reachable by this one.
const recordPrefix = "record."

// recordName is the second name of the lock file of the group name.
func recordName(name string) string { return recordPrefix + name }

// lockFileGroups lists the groups that have a lock file in the lock directory dfd
// (read from its start), under either of its names, once each. The entries are read
// with getdents64(2) into one buffer and judged in place (eachEntry): only a group's
// name becomes a string. Every launch reads the directory (sweepNeeded), and an idle
// session's supervisor keeps what that allocates for its life (no collection runs
// below a 4 MiB heap; docs/decisions.md, "Memory: idle sessions"); an older gosbx's
// markers (oldSweptPrefix) may still be there, a thousand after a day of tests. Errors
// are lseek's and getdents64's.
func lockFileGroups(dfd int) ([]string, error) {
	var out []string
	var seen map[string]bool // once out has listedMax names
	err := eachEntry(dfd, func(name []byte) {
		name = bytes.TrimPrefix(name, []byte(recordPrefix))
		if bytes.HasPrefix(name, []byte("gosbx-")) && !seen[string(name)] && !listed(out, name, seen) {
			out = append(out, string(name))
			if seen != nil {
				seen[out[len(out)-1]] = true
			} else if len(out) == listedMax {
				// many groups alive at once: a map from here on, not a scan per name
				seen = make(map[string]bool, 2*listedMax)
				for _, g := range out {
					seen[g] = true
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachEntry calls f with the name of each entry of the directory dfd but "." and "..",
// read from its start with getdents64(2) into one 8 KiB buffer (internal/dirent); name
// is valid only during the call. Errors are lseek's and getdents64's, and a malformed
// record's.
func eachEntry(dfd int, f func(name []byte)) error {
	if _, err := unix.Seek(dfd, 0, io.SeekStart); err != nil {
		return err
	}
	buf := make([]byte, 8192)
	return dirent.Each(dfd, buf, func(name []byte, _ uint8) error {
		f(name)
		return nil
	})
}

// listed reports whether name is among names (no string made of it), by a scan while
// there is no map seen of them.
func listed(names []string, name []byte, seen map[string]bool) bool {
	if seen != nil {
		return false // seen was asked
	}
	for _, n := range names {
		if n == string(name) {
			return true
		}
	}
	return false
}

// listedMax is how many names lockFileGroups compares a name with before it keeps a map.
const listedMax = 32

// openLockFile opens the lock file of the group name in the lock directory dfd by its
// second name, or by its first when that is gone (an older gosbx's file has only the
// first); ENOENT when it has neither (openRegular: a name holding other than a regular
// file holds no lock file).
func openLockFile(dfd int, name string) (int, error) {
	fd, err := openRegular(dfd, recordName(name))
	if errors.Is(err, unix.ENOENT) {
		fd, err = openRegular(dfd, name)
	}
	return fd, err
}

// openRegular opens name in the directory dfd (unix.AT_FDCWD: a path) read-only if it
// is a regular file; ENOENT when it is anything else (a FIFO, a socket, a directory, a
// symbolic link, a device): not a lock file of gosbx's, which makes only regular files
// there, and nothing a sweep uses or removes. O_NONBLOCK: a FIFO whose type changed
// between the fstatat and the open does not block open(2) waiting for a writer (attack
// review 18, F3); a lock file is never read in a way O_NONBLOCK changes.
func openRegular(dfd int, name string) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return -1, unix.ENOENT
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENXIO) {
		return -1, unix.ENOENT // replaced meanwhile by a symbolic link or a socket
	}
	if err != nil {
		return -1, err
	}
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, unix.ENOENT
	}
	return fd, nil
}

// releaseOwner removes the owner's lock file, then unlocks it (after the group is
// gone: a sweep never sees the group without its lock). nil is a no-op.
func releaseOwner(f *os.File) {
	if f != nil {
		os.Remove(filepath.Join(filepath.Dir(f.Name()), recordName(filepath.Base(f.Name()))))
		os.Remove(f.Name())
		f.Close()
	}
}

// releaseOwnerIfGone is releaseOwner once none of dirs exists; otherwise it only
// unlocks the lock file (closes it) and leaves it: a group directory with no lock file
// would be judged by the lock on the directory, as an older gosbx's, which sweepNeeded
// does not look for, while a free lock file makes the next launch sweep.
func releaseOwnerIfGone(f *os.File, dirs ...string) {
	if f == nil {
		return
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return
		}
	}
	releaseOwner(f)
}

// holdDir takes, without waiting, an exclusive flock(2) on a group's directory, as
// the owner's lock was before lock files: so that an older gosbx's sweep, which judges
// a group by it, keeps this one. Not taken (another holds it) is no error: nothing of
// this gosbx reads it. nil when not taken.
func holdDir(dir string) *os.File {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), dir)
}

// ownerAlive reports whether the owner of the group name in the directory parent
// still holds it: its lock file's lock cannot be taken. A group whose directory is gone
// (a partial removal in v1) has no owner; one that cannot be judged is kept: another
// user's (a sweep by other than root), one whose lock file cannot be opened. A group
// without a lock file was made by an older gosbx, whose owner held the directory
// itself (or its removal failed after its owner let go): it is judged by that lock.
// Groups named by an older gosbx (gosbx-<pid>-<seq>-<time>) are judged by that pid.
func ownerAlive(parent, name string) bool {
	if legacyName(name) {
		return launcherAlive(name)
	}
	dir := filepath.Join(parent, name)
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return !errors.Is(err, unix.ENOENT)
	}
	if euid := os.Geteuid(); euid != 0 && int(st.Uid) != euid {
		return true
	}
	fd, err := openRegular(unix.AT_FDCWD, filepath.Join(ownerLockDir(int(st.Uid)), name))
	if errors.Is(err, unix.ENOENT) { // an older gosbx's sweep removed the first name
		fd, err = openRegular(unix.AT_FDCWD, filepath.Join(ownerLockDir(int(st.Uid)), recordName(name)))
	}
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return false
		}
		if err != nil {
			return true
		}
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil
}

// sweepOwnerLocks removes the groups of the caller's lock files no owner holds, and
// then each such file once its group is gone (a sweep of kind's hierarchies runs it
// after going through parents; a launcher killed before its mkdir left a file too).
// The group is where the file's record says (record.go), or, without one, wherever a
// directory of its name is in the hierarchies (findGroup); never judged by parents
// alone: the dead owner may have run in another cgroup, and a file removed while its
// group is left would leave the group to no later launch (sweepNeeded looks at lock
// files only). Each file is locked while its group is removed, and unlinked only while
// the path still leads to the file locked (ownerLock makes a file anew when a sweep
// removed it under it).
func sweepOwnerLocks(parents []string, kind Kind) {
	dfd, _, err := openLockDir()
	if err != nil {
		return
	}
	defer unix.Close(dfd)
	names, err := lockFileGroups(dfd)
	if err != nil {
		return
	}
	for _, name := range names {
		fd, err := openLockFile(dfd, name)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			dirs, ok := readRecord(fd, name, kind)
			if !ok {
				dirs = findGroup(name, kind)
			}
			var held unix.Stat_t
			if removeRecorded(dirs, kind, parents) && unix.Fstat(fd, &held) == nil {
				for _, n := range []string{recordName(name), name} {
					var now unix.Stat_t
					if unix.Fstatat(dfd, n, &now, unix.AT_SYMLINK_NOFOLLOW) == nil && held.Ino == now.Ino && held.Dev == now.Dev {
						unix.Unlinkat(dfd, n, 0)
					}
				}
			}
		}
		unix.Close(fd)
	}
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
