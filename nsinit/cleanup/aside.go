package cleanup

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxAsideTries bounds the names tried for a file moved aside.
const maxAsideTries = 16

// moveAside moves the entry name of the directory dir (p its path, for the message)
// to a fresh name beside it, name+".gosbx-aside" or name+".gosbx-aside-N", never over
// what is there (renameat2 RENAME_NOREPLACE): the command may have made that name
// first, a directory the rename would fail on or a link it would follow (attack review
// 31 F6). When every name is taken, the entry is removed instead (fail closed: git must
// not read it). It returns what was done, for the caller's report: "moved aside to
// <path>" or "removed (…)".
func moveAside(dir int, name, p string) (string, error) {
	for i := 0; i < maxAsideTries; i++ {
		to := name + asideSuffix
		if i > 0 {
			to = fmt.Sprintf("%s-%d", to, i)
		}
		err := unix.Renameat2(dir, name, dir, to, unix.RENAME_NOREPLACE)
		if err == nil {
			return "moved aside to " + filepath.Join(filepath.Dir(p), to), nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return "", err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return "", err
	}
	if err := removeAt(dir, name, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
		return "", fmt.Errorf("every name to move it aside to is taken, and removing it: %w", err)
	}
	return "removed (every name to move it aside to was taken)", nil
}
