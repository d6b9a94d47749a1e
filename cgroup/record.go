package cgroup

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The owner's lock file records where its group is: one absolute path a line, the
// group's directory in every hierarchy (v1) or the v2 group, written while the file is
// locked and before the first mkdir (ownerLock). A later launch of the same user that
// finds the lock free removes exactly those directories, wherever they are, and then
// the file (sweepOwnerLocks): a launcher in another cgroup (v1 groups are made under
// the caller's own group) would never find them in its own parents. A file without a
// record (made by an older gosbx of this boot, or by one killed between its lock and
// its write) has its group looked for by name in the whole hierarchy (findGroup).

// maxRecord bounds a record read: four v1 paths, or one v2 path, are far below it.
const maxRecord = 64 << 10

// recordText is the lock file's content for the group's directories dirs.
func recordText(dirs []string) []byte {
	if len(dirs) == 0 {
		return nil
	}
	return []byte(strings.Join(dirs, "\n") + "\n")
}

// writeRecord writes the record of dirs to the owner's lock file fd, from offset 0,
// after dropping anything it held (a file made anew in ownerLock's fallback). Errors
// name the file.
func writeRecord(fd int, p string, dirs []string) error {
	b := recordText(dirs)
	if err := unix.Ftruncate(fd, 0); err != nil {
		return &os.PathError{Op: "truncate", Path: p, Err: err}
	}
	for off := 0; off < len(b); {
		n, err := unix.Pwrite(fd, b[off:], int64(off))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: p, Err: err}
		}
		off += n
	}
	return nil
}

// recordRoots are the cgroup mounts a group of kind may be recorded under: each v1
// hierarchy gosbx uses (v1Root/<controller>), or the unified hierarchy (v2Mount).
func recordRoots(kind Kind) []string {
	if kind == V2 {
		return []string{v2Mount}
	}
	out := make([]string, 0, len(v1Subsystems))
	for _, sub := range v1Subsystems {
		out = append(out, filepath.Join(v1Root, sub))
	}
	return out
}

// readRecord reads the record in the lock file fd of the group name: its directories,
// each absolute, clean, below one of kind's mounts (recordRoots), and ending in name.
// ok is false when the file holds no record, or one that cannot be read or has a line
// that is not such a path: the group is then looked for by name (findGroup).
func readRecord(fd int, name string, kind Kind) (dirs []string, ok bool) {
	b := make([]byte, maxRecord+1)
	n, err := unix.Pread(fd, b, 0)
	if err != nil || n == 0 || n > maxRecord {
		return nil, false
	}
	roots := recordRoots(kind)
	for _, line := range strings.Split(strings.TrimSuffix(string(b[:n]), "\n"), "\n") {
		if !validRecorded(line, name, roots) {
			return nil, false
		}
		dirs = append(dirs, line)
	}
	return dirs, true
}

// validRecorded reports whether p may be the group name's directory: absolute, clean,
// its last element name, strictly below one of roots.
func validRecorded(p, name string, roots []string) bool {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || filepath.Base(p) != name {
		return false
	}
	for _, r := range roots {
		if strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// findGroup looks for the directories named name in the whole of kind's hierarchies
// (each mount resolved once: cpu and cpuacct are one where co-mounted), not below a
// gosbx group (a sandbox's group has no children). For a lock file without a record:
// its group may be below any caller's group. Cost: a listing of every group of the
// host, paid once for such a file (it is removed once its group is gone).
func findGroup(name string, kind Kind) []string {
	var out []string
	seen := map[string]bool{}
	for _, root := range recordRoots(kind) {
		r, err := filepath.EvalSymlinks(root)
		if err != nil || seen[r] {
			continue
		}
		seen[r] = true
		filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != r && strings.HasPrefix(d.Name(), "gosbx-") {
				if d.Name() == name {
					out = append(out, p)
				}
				return filepath.SkipDir
			}
			return nil
		})
	}
	return out
}

// removeRecorded removes the directories dirs of a group whose owner is gone, as the
// sweep removes one it finds (removeDirV1; v2 killRemoveV2), except those in tried
// (parents this sweep has just gone through), and reports whether all are gone. A
// path that is not a directory (a symlink) is not followed and counts as left.
func removeRecorded(dirs []string, kind Kind, tried []string) bool {
	gone := true
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); errors.Is(err, unix.ENOENT) {
			continue
		} else if err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			gone = false
			continue
		}
		if !inParents(d, tried) {
			if kind == V2 {
				killRemoveV2(d, 300*time.Millisecond)
			} else {
				removeDirV1(d)
			}
		}
		if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
			gone = false
		}
	}
	return gone
}

// inParents reports whether dir is directly in one of parents.
func inParents(dir string, parents []string) bool {
	for _, p := range parents {
		if filepath.Dir(dir) == filepath.Clean(p) {
			return true
		}
	}
	return false
}
