package cleanup

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// removeStrayCommondirs removes, in each directory entry of dir (a git dir's
// worktrees/), a commondir that is not what git worktree add writes: a regular file
// holding "../.." (less trailing CR and LF, as setup.c's get_common_dir_noenv reads
// it), which names dir's parent. Any other sends the host's git in that linked
// worktree to a git dir of the command's making, config and hooks included (attack
// review 33 F2: one written into a worktree the user added between a session's
// requests): it is removed and git's "../.." written in its place. The entries
// themselves, and their other files, are left.
func removeStrayCommondirs(dir string) (removed, failed []string) {
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
