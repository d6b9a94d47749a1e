package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// removeNoFollow removes the file or tree at the canonical path p without following a
// symlink anywhere: its parent is opened with openat2(2) RESOLVE_NO_SYMLINKS (a
// component the command replaced by a symlink leads nowhere, and nothing is removed),
// and a tree is removed through descriptors, never by path. It reports whether p was
// there and is gone, and an error when it is there and could not be removed. The
// sandbox has ended: nothing races the removal, and a directory the command made
// unwritable or unsearchable (chmod 0555) is given back its owner's rwx first.
func removeNoFollow(p string) (bool, error) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := removeAt(dir, filepath.Base(p), st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
		return false, err
	}
	return true, nil
}

// openDirNoFollow opens the directory p (O_RDONLY) without following a symlink; a
// directory on the way its owner cannot search or read gets u+rwx (see removeNoFollow).
func openDirNoFollow(p string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, how)
	if errors.Is(err, unix.ENOSYS) {
		// the init's own cleanup, under a root caller's seccomp filter (openat2's mode
		// cannot be inspected, so it is refused): component by component, O_NOFOLLOW
		fd, err = openComponents(p)
	}
	if !errors.Is(err, unix.EACCES) || p == "/" {
		return fd, err
	}
	parent, perr := openDirNoFollow(filepath.Dir(p))
	if perr != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if perr := ownerRWX(parent, filepath.Base(p)); perr != nil {
		return -1, err
	}
	return unix.Openat(parent, filepath.Base(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openComponents opens the canonical directory p one component at a time from /, each
// with O_NOFOLLOW: a symlink anywhere on the way is refused (ELOOP or ENOTDIR).
func openComponents(p string) (int, error) {
	if strings.Trim(p, "/") == "" {
		return unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	cs := strings.Split(strings.Trim(p, "/"), "/")
	for i, c := range cs {
		if c == ".." || c == "." {
			unix.Close(fd)
			return -1, unix.EINVAL
		}
		flags := unix.O_PATH // search permission is enough on the way
		if i == len(cs)-1 {
			flags = unix.O_RDONLY // the directory itself is read
		}
		next, err := unix.Openat(fd, c, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// ownerRWX gives the directory name in dir its owner's rwx, through a descriptor of
// that very directory (O_PATH|O_NOFOLLOW, chmod through /proc/self/fd), never by name:
// a directory swapped for a symlink meanwhile (another sandbox on the same workspace may
// still run) is not followed, so nothing outside is touched.
func ownerRWX(dir int, name string) error {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777|0o700)
	if errors.Is(err, unix.EPERM) {
		// the init's own cleanup runs under the command's seccomp filter, which for a
		// root caller refuses a mode with set-ID bits: without them
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o1777|0o700)
	}
	return err
}

// removeAt removes name in the directory dir: a directory with everything in it, by
// descriptor (64 levels recursively, below that by removeFlat, at any depth). A directory in the way that its owner cannot
// write, search or read gets u+rwx (removeNoFollow).
func removeAt(dir int, name string, isDir bool, depth int) error {
	err := removeOne(dir, name, isDir, depth)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		var st unix.Stat_t
		if unix.Fstat(dir, &st) == nil && unix.Fchmod(dir, st.Mode&0o7777|0o700) == nil {
			err = removeOne(dir, name, isDir, depth)
		}
	}
	return err
}

func removeOne(dir int, name string, isDir bool, depth int) error {
	if !isDir {
		return unix.Unlinkat(dir, name, 0)
	}
	if depth > 64 {
		return removeFlat(dir, name)
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) && ownerRWX(dir, name) == nil {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	eachName(f, func(n string) {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			removeAt(fd, n, st.Mode&unix.S_IFMT == unix.S_IFDIR, depth+1)
		}
	})
	f.Close()
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// removeFlat removes the directory name in dir with everything in it, however deep,
// holding a bounded number of descriptors: each subdirectory's entries are moved up
// into the top directory (renameat2 RENAME_NOREPLACE, under a new name) and the emptied
// subdirectory removed, pass after pass, until the top directory is empty. Every entry
// is moved at most once per level above it, and nothing is followed. It fails when a
// pass removes nothing.
func removeFlat(dir int, name string) error {
	ownerRWX(dir, name)
	top, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	serial := 0
	for {
		done, left, err := flattenPass(top, &serial)
		if left == 0 {
			break
		}
		if done == 0 {
			if err == nil {
				err = unix.ENOTEMPTY
			}
			return err
		}
	}
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// flattenPass is one pass of removeFlat over top: it returns how many entries it
// removed, how many it saw, and the first error.
func flattenPass(top int, serial *int) (done, seen int, first error) {
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	rd, err := unix.Openat(top, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 1, err
	}
	f := os.NewFile(uintptr(rd), ".")
	defer f.Close()
	err = eachName(f, func(n string) {
		seen++
		var st unix.Stat_t
		if err := unix.Fstatat(top, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			fail(err)
			return
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(top, n, 0); err != nil {
				fail(err)
			} else {
				done++
			}
			return
		}
		ownerRWX(top, n)
		sub, err := unix.Openat(top, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			fail(err)
			return
		}
		sf := os.NewFile(uintptr(sub), n)
		if err := eachName(sf, func(e string) {
			var est unix.Stat_t
			if unix.Fstatat(sub, e, &est, unix.AT_SYMLINK_NOFOLLOW) == nil && est.Mode&unix.S_IFMT == unix.S_IFDIR {
				ownerRWX(sub, e) // moving a directory writes its ".."
			}
			for {
				*serial++
				err := unix.Renameat2(sub, e, top, ".gosbx-rm-"+strconv.Itoa(*serial), unix.RENAME_NOREPLACE)
				if !errors.Is(err, unix.EEXIST) {
					if err != nil {
						fail(err)
					}
					return
				}
			}
		}); err != nil {
			fail(err)
		}
		sf.Close()
		if err := unix.Unlinkat(top, n, unix.AT_REMOVEDIR); err != nil {
			fail(err)
		} else {
			done++
		}
	})
	if err != nil {
		fail(err)
	}
	return done, seen, first
}
