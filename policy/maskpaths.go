package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// dirChecks remembers, over one launch's masked patterns, which directories
// unsearchableDirs found unsearchable (/etc is on the way of /etc/ssh/*_key and of
// /etc/sudoers*); those fresh names (the writable trees) are checked each time.
type dirChecks struct {
	fresh func(string) bool
	seen  map[string]bool
}

// maskPaths are the host paths a masked pattern hides: its matches (filepath.Glob's),
// and, since a command can chmod a directory of a writable tree it owns, what cannot be
// looked at: a plain path that exists but cannot be stat'ed (a parent without search
// permission) is masked anyway (the init reaches it with its capabilities), and a
// directory on a pattern's way that the caller cannot read or search is masked whole,
// as it may hide matches (a/b/*.key with b made 000 by an earlier run). Each
// directory is checked once over the patterns dc serves.
func (dc *dirChecks) maskPaths(pattern string) []string {
	if !globMeta(pattern) {
		if _, err := os.Lstat(pattern); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return []string{pattern}
		}
		return nil
	}
	matches, _ := globPaths(pattern)
	return append(matches, dc.unsearchableDirs(filepath.Dir(pattern))...)
}

// unsearchableDirs are the directories matching the pattern dir, or lying on its way,
// that the caller owns (so a command of its could have chmod'ed them) but cannot read
// and search (faccessat2(2), effective ids).
func (dc *dirChecks) unsearchableDirs(dir string) []string {
	if dir == "/" || dir == "." {
		return nil
	}
	out := dc.unsearchableDirs(filepath.Dir(dir))
	ds := []string{dir}
	if globMeta(dir) {
		ds, _ = globPaths(dir)
	}
	for _, d := range ds {
		if u, ok := dc.seen[d]; ok {
			if u {
				out = append(out, d)
			}
			continue
		}
		if dc.unsearchable(d) {
			out = append(out, d)
		}
	}
	return out
}

// unsearchable is d's check (unsearchableDirs), remembered unless fresh names d.
func (dc *dirChecks) unsearchable(d string) bool {
	u := unsearchable(d)
	if memoFS && (dc.fresh == nil || !dc.fresh(d)) {
		if dc.seen == nil {
			dc.seen = map[string]bool{}
		}
		dc.seen[d] = u
	}
	return u
}

// unsearchable reports whether d is a directory the caller owns but cannot read and
// search (unsearchableDirs).
func unsearchable(d string) bool {
	var st unix.Stat_t
	if unix.Lstat(d, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() {
		return false
	}
	return unix.Faccessat2(unix.AT_FDCWD, d, unix.R_OK|unix.X_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) != nil
}
