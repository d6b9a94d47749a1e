package cleanup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// removeStrayCommondirs removes, in each directory entry of dir (a git dir's
// worktrees/), a commondir that is not what git worktree add writes: a regular file
// holding "../.." (less trailing CR and LF, as setup.c's get_common_dir_noenv reads
// it), which names dir's parent. Any other sends the host's git in that linked
// worktree to a git dir of the command's making, config and hooks included (attack
// review 33 F2: one written into a worktree the user added between a session's
// requests): it is removed and git's "../.." written in its place. In an entry not
// named in known (the entries at launch), config.worktree (the entry's own config,
// core.fsmonitor included) and a gitdir that does not lead back to the entry (git
// worktree remove deletes the checkout it names) are removed too (attack review 35 F8).
// The entries themselves, and their other files, are left. A directory of more than
// maxFanoutEntries entries is reported unchecked, never checked in part.
func removeStrayCommondirs(dir string, known []string) (removed, failed []string) {
	dfd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	f := os.NewFile(uintptr(dfd), dir)
	defer f.Close()
	n := 0
	err = eachName(f, func(name string) {
		if n++; n > maxFanoutEntries {
			return
		}
		if n == maxFanoutEntries+1 {
			failed = append(failed, fmt.Sprintf("%s: holds more than %d entries; those past them are not checked", dir, maxFanoutEntries))
		}
		wfd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EACCES) && ownerRWX(dfd, name) == nil {
			wfd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			if !unreachable(err) {
				failed = report(failed, filepath.Join(dir, name)+": its commondir is not checked: "+err.Error())
			}
			return // not a directory: git takes it for no worktree
		}
		defer unix.Close(wfd)
		if !slices.Contains(known, name) {
			r, f := newEntryPointers(wfd, filepath.Join(dir, name))
			removed, failed = append(removed, r...), append(failed, f...)
		}
		p := filepath.Join(dir, name, "commondir")
		ok, err := gitsCommondir(wfd)
		switch {
		case errors.Is(err, unix.ENOENT):
			return
		case err != nil:
			failed = report(failed, p+": not checked: "+err.Error())
			return
		case ok:
			return
		}
		var st unix.Stat_t
		if err := unix.Fstatat(wfd, "commondir", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return
		}
		if err := removeAt(wfd, "commondir", st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
			failed = report(failed, p+": it does not name this git dir (git writes ../..); removing it: "+err.Error())
			return
		}
		// git's own back, so that the user's checkout still works (git worktree add
		// writes no other); made anew, never through what is there
		if err := writeNew(wfd, "commondir", "../..\n"); err != nil {
			failed = report(failed, p+": removed (it did not name this git dir); writing git's ../.. back: "+err.Error())
		}
		removed = report(removed, p)
	})
	if err != nil {
		failed = append(failed, dir+": not all its worktrees' commondirs are checked: "+err.Error())
	}
	return removed, failed
}

// newEntryPointers removes, in the worktree entry wfd (at path p) the launch did not
// see, its config.worktree and a gitdir that does not lead back to it.
func newEntryPointers(wfd int, p string) (removed, failed []string) {
	var st unix.Stat_t
	if unix.Fstatat(wfd, "config.worktree", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if err := removeAt(wfd, "config.worktree", st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
			failed = append(failed, filepath.Join(p, "config.worktree")+": in a linked worktree made during the run; removing it: "+err.Error())
		} else {
			removed = append(removed, filepath.Join(p, "config.worktree"))
		}
	}
	if unix.Fstatat(wfd, "gitdir", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || gitdirLeadsBack(wfd, p) {
		return removed, failed
	}
	if err := removeAt(wfd, "gitdir", st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
		failed = append(failed, filepath.Join(p, "gitdir")+": it does not lead back to its entry; removing it: "+err.Error())
	} else {
		removed = append(removed, filepath.Join(p, "gitdir"))
	}
	return removed, failed
}

// gitdirLeadsBack reports whether the gitdir of the worktree entry wfd (at path p) is
// a regular file naming a checkout's .git file (absolute, or relative to p) whose
// "gitdir: " line names the entry back (the same directory: device and inode), as
// git worktree add writes them (gitrepository-layout(5)).
func gitdirLeadsBack(wfd int, p string) bool {
	b, err := readSmallAt(wfd, "gitdir", true)
	if err != nil {
		return false
	}
	dotgit := strings.TrimRight(string(b), "\r\n")
	if !filepath.IsAbs(dotgit) {
		dotgit = filepath.Join(p, dotgit)
	}
	b, err = readSmallAt(unix.AT_FDCWD, dotgit, false)
	if err != nil {
		return false
	}
	back, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok {
		return false
	}
	if !filepath.IsAbs(back) {
		back = filepath.Join(filepath.Dir(dotgit), back)
	}
	var a, e unix.Stat_t
	return unix.Stat(back, &a) == nil && unix.Fstat(wfd, &e) == nil && a.Dev == e.Dev && a.Ino == e.Ino
}

// readSmallAt reads name (at dfd) when it is a regular file of at most 4 KiB, opened
// without blocking (a FIFO) and, when noFollow, without following a symlink.
func readSmallAt(dfd int, name string, noFollow bool) ([]byte, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if noFollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dfd, name, flags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > 4096 {
		return nil, fmt.Errorf("%s: not a regular file of at most 4 KiB", name)
	}
	return io.ReadAll(io.LimitReader(f, 4096))
}

// gitsCommondir reports whether the commondir of the directory wfd is a regular file
// whose content, less trailing CR and LF, is "../..".
func gitsCommondir(wfd int) (bool, error) {
	cfd, err := unix.Openat(wfd, "commondir", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return false, nil // a symlink
	}
	if err != nil {
		return false, err
	}
	c := os.NewFile(uintptr(cfd), "commondir")
	defer c.Close()
	var st unix.Stat_t
	if err := unix.Fstat(cfd, &st); err != nil {
		return false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, nil
	}
	b, err := io.ReadAll(io.LimitReader(c, 64))
	if err != nil {
		return false, err
	}
	return strings.TrimRight(string(b), "\r\n") == "../..", nil
}

// writeNew creates name in the directory dfd, which must not exist (O_EXCL, no symlink
// followed), holding s, mode 0644 less the umask.
func writeNew(dfd int, name, s string) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
