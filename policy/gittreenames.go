package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/dirent"
)

// gitTreeNames are the files git reads from a working tree with a blocking open(2):
// .gitignore and .gitattributes in every directory it looks at (dir.c,
// add_patterns_from_file_to_list; attr.c, read_attr_from_file), .mailmap at the top
// (mailmap.c, read_mailmap_file: git log and shortlog, log.mailmap on by default since
// git 2.29) and .gitmodules at the top (submodule-config.c: git status with
// submodules). A FIFO at one of them hangs the host's git status or git log for good;
// a socket or device fails it (attack review 33 F5; r29 F18 closed the config-named
// ones). git 2.32 and later open the first three without following a symlink, older
// ones follow it, so a symlink that leads to such a file counts too.
var gitTreeNames = []string{".gitignore", ".gitattributes", ".mailmap", ".gitmodules"}

// gitTreeName reports whether name (a directory entry's) is one of gitTreeNames.
func gitTreeName(name []byte) bool {
	if len(name) < 8 || name[0] != '.' {
		return false
	}
	for _, n := range gitTreeNames {
		if string(name) == n {
			return true
		}
	}
	return false
}

// treeSpecial returns what the entry name of the directory fd (d_type typ) is when git
// must not open it (a FIFO, a socket, a device, or a symlink that leads to one), "" when
// it is a regular file, a directory, a dangling symlink or gone.
func treeSpecial(fd int, name string, typ uint8) string {
	switch typ {
	case unix.DT_REG, unix.DT_DIR:
		return ""
	case unix.DT_FIFO:
		return "a FIFO"
	case unix.DT_SOCK:
		return "a socket"
	case unix.DT_CHR, unix.DT_BLK:
		return "a device"
	}
	var st unix.Stat_t
	if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	what := ""
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// stat(2) of the target opens nothing: no hang here
		if unix.Fstatat(fd, name, &st, 0) != nil {
			return ""
		}
		what = "a symlink to "
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return what + "a FIFO"
	case unix.S_IFSOCK:
		return what + "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return what + "a device"
	}
	return ""
}

// treeSpecialError is the launch's refusal of the entries found (path, what it is) at
// one of gitTreeNames: left by an earlier sandbox whose launcher was killed before its
// after-run removal (RemoveGitTreeSpecials), or by a session's background process.
// Refused, not removed: planning only reads the host.
func treeSpecialError(found [][2]string) error {
	var named []string
	for _, f := range found[:min(len(found), 3)] {
		named = append(named, Shown(f[0])+" ("+f[1]+")")
	}
	return errorf("protected", found[0][0], nil, "is not a regular file, at a name git opens in the working tree (%s): the host's git status or git log would hang on it; an earlier command may have left it: remove it (rm) and launch again",
		strings.Join(named, ", "))
}

// treeSpecialSuffix ends each path RemoveGitTreeSpecials reports removed:
// "<path> (a FIFO at a name git opens)".
const treeSpecialSuffix = " at a name git opens)"

// RemoveGitTreeSpecials removes, after a command ran, each FIFO, socket or device (or
// symlink leading to one) named as one of the files git reads from a working tree
// (gitTreeNames) in the directories the protected-path search walks in each of trees
// (canonical): each tree to scanDepth levels, not entering the directories it skips
// (scanSkip: .git, node_modules…), and each directory from the first tree down to cwd.
// At most limit directories are read (0: DefaultScanLimit); past that, the rest is
// reported in failed, as a tree's root it cannot read. It returns "<path> (<what> at a
// name git opens)" per removal, for GitTreeNote; failed is "<path>: <reason>". It
// reads by descriptor, never following a symlink to a directory.
func RemoveGitTreeSpecials(trees []string, cwd string, limit int) (removed, failed []string) {
	if limit <= 0 {
		limit = DefaultScanLimit
	}
	check := func(fd int, dir string, name []byte, typ uint8) {
		if !gitTreeName(name) {
			return
		}
		n := string(name)
		what := treeSpecial(fd, n, typ)
		if what == "" {
			return
		}
		p := filepath.Join(dir, n)
		if err := unix.Unlinkat(fd, n, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			failed = append(failed, p+": "+what+" at a name git opens, which cannot be removed: "+err.Error())
			return
		}
		removed = append(removed, p+" ("+what+treeSpecialSuffix)
	}
	pooled := direntBufs.Get().(*[direntBufSize]byte)
	defer direntBufs.Put(pooled)
	buf := pooled[:]
	type level struct {
		fd    int
		path  string
		depth int
	}
	for i, t := range trees {
		fd, err := unix.Open(t, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone: nothing there for git to open
		}
		// breadth first: what the budget leaves unread is the deepest
		budget := limit
		queue := []level{{fd, t, 0}}
		for len(queue) > 0 {
			d := queue[0]
			queue = queue[1:]
			if budget == 0 {
				unix.Close(d.fd)
				for _, q := range queue {
					unix.Close(q.fd)
				}
				queue = nil
				failed = append(failed, fmt.Sprintf("%s: not searched for FIFOs at the names git opens: more than %d directories within %d levels", t, limit, scanDepth))
				break
			}
			budget--
			err := dirent.Each(d.fd, buf, func(nb []byte, typ uint8) error {
				check(d.fd, d.path, nb, typ)
				if d.depth >= scanDepth || scanSkip(string(nb)) {
					return nil
				}
				if isDir, err := isDirAt(d.fd, nb, typ); err != nil || !isDir {
					return nil
				}
				sub, err := openDirAt(d.fd, string(nb), unix.O_NOFOLLOW)
				if err == nil {
					queue = append(queue, level{sub, filepath.Join(d.path, string(nb)), d.depth + 1})
				}
				return nil
			})
			unix.Close(d.fd)
			if err != nil {
				failed = append(failed, d.path+": "+err.Error())
			}
		}
		if i == 0 && cwd != "" && strings.HasPrefix(cwd, t+"/") {
			// the chain down to the working directory, at any depth (as the search's)
			for d := cwd; len(d) > len(t); d = filepath.Dir(d) {
				if strings.Count(d[len(t):], "/") <= scanDepth {
					continue // walked above
				}
				dfd, err := openDirNoFollowPath(d)
				if err != nil {
					continue
				}
				for _, n := range gitTreeNames {
					check(dfd, d, []byte(n), unix.DT_UNKNOWN)
				}
				unix.Close(dfd)
			}
		}
	}
	return removed, failed
}

// openDirNoFollowPath opens the directory p without following a symlink anywhere in it.
func openDirNoFollowPath(p string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
}

// GitTreeNote returns, for a path RemoveGitTreeSpecials removed, the stderr line that
// says so ("gosbx: note: …", no newline); who is "the command" or "the session's
// commands".
func GitTreeNote(p, who string) string {
	path, what, _ := strings.Cut(p, " (")
	return "gosbx: note: removed " + Shown(strings.TrimSuffix(what, treeSpecialSuffix)) + " that " + who + " left at " + Shown(path) +
		", a name git opens in the working tree (.gitignore, .gitattributes, .mailmap, .gitmodules): git status or git log would have hung on it"
}

// GitTreeNotRemovedNote is the stderr line for what RemoveGitTreeSpecials reported
// failed ("path: reason").
func GitTreeNotRemovedNote(f, who string) string {
	path, why, _ := strings.Cut(f, ": ")
	return "gosbx: WARNING: after " + who + " ran, " + Shown(path) + ": " + Shown(why) +
		"; a FIFO left at .gitignore, .gitattributes, .mailmap or .gitmodules there would hang the host's git status: look for one with find " +
		Shown(shellQuote(path)) + " \\( -name .gitignore -o -name .gitattributes -o -name .mailmap -o -name .gitmodules \\) -not -type f -not -type d"
}

// RemoveGitTreeSpecials is RemoveGitTreeSpecials of s's trees, cwd and limit after a
// command ran; nothing when s protects nothing (no search, no git guard).
func (s ProtectedScan) RemoveGitTreeSpecials() (removed, failed []string) {
	if len(s.Patterns) == 0 {
		return nil, nil
	}
	return RemoveGitTreeSpecials(s.Trees, s.Cwd, s.Limit)
}

// GitTreeNotes are the stderr lines (no newline) for what RemoveGitTreeSpecials
// removed and failed to; who is "the command" or "the session's commands".
func GitTreeNotes(removed, failed []string, who string) []string {
	var out []string
	for _, p := range removed {
		out = append(out, GitTreeNote(p, who))
	}
	for _, f := range failed {
		out = append(out, GitTreeNotRemovedNote(f, who))
	}
	return out
}
