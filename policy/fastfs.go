package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/gosbx/gosbx/internal/dirent"
	"golang.org/x/sys/unix"
)

// The file system look-ups of the policy step, made with fewer system calls than the
// os and path/filepath functions they stand for (every launch makes them, once): the
// same answers, each a drop-in for the function named.

// direntBufSize is the getdents64 buffer: most directories in one call.
const direntBufSize = 16 << 10

// direntBufs hold the getdents64 buffers between uses: a launch's globs and scans take
// turns with one (no collection runs in a launcher to free the ones it dropped: each
// was 16 KiB of its heap for good).
var direntBufs = sync.Pool{New: func() any { return new([direntBufSize]byte) }}

// openDirAt opens the directory name relative to dirfd (unix.AT_FDCWD: the current
// directory) for reading, retrying on EINTR as package os does.
func openDirAt(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// isDirAt reports whether the entry name of the directory fd is a directory (not a
// symlink): by its d_type, or an lstat where there is none, as os.ReadDir does (gone:
// os.ErrNotExist, an entry os.ReadDir leaves out).
func isDirAt(fd int, name []byte, typ uint8) (bool, error) {
	if typ != unix.DT_UNKNOWN {
		return typ == unix.DT_DIR, nil
	}
	var st unix.Stat_t
	err := unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW)
	for err == unix.EINTR {
		err = unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	switch {
	case err == unix.ENOENT:
		return false, os.ErrNotExist
	case err != nil:
		return false, err
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR, nil
}

// globPaths is filepath.Glob(pattern) (matches and error alike), reading each
// directory with one open and getdents64 and sorting only the names that match.
func globPaths(pattern string) ([]string, error) {
	return globDepth(pattern, 0)
}

// globDepth follows path/filepath's globWithLimit.
func globDepth(pattern string, depth int) (matches []string, err error) {
	const pathSeparatorsLimit = 10000
	if depth == pathSeparatorsLimit {
		return nil, filepath.ErrBadPattern
	}
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	if !globMeta(pattern) {
		if _, err = os.Lstat(pattern); err != nil {
			return nil, nil
		}
		return []string{pattern}, nil
	}
	dir, file := filepath.Split(pattern)
	switch dir {
	case "":
		dir = "."
	case "/":
	default:
		dir = dir[:len(dir)-1]
	}
	if !globMeta(dir) {
		return globDir(dir, file, nil)
	}
	if dir == pattern {
		return nil, filepath.ErrBadPattern
	}
	var m []string
	if m, err = globDepth(dir, depth+1); err != nil {
		return
	}
	for _, d := range m {
		if matches, err = globDir(d, file, matches); err != nil {
			return
		}
	}
	return
}

// globMeta is path/filepath's hasMeta on Unix.
func globMeta(p string) bool { return strings.ContainsAny(p, `*?[\`) }

// globDir is path/filepath's glob: the names in dir that match pattern, in order,
// appended to matches; a directory that cannot be read has none. Only the names that
// match are kept and sorted.
func globDir(dir, pattern string, matches []string) ([]string, error) {
	fd, err := openDirAt(unix.AT_FDCWD, dir, 0)
	if err != nil {
		return matches, nil
	}
	defer unix.Close(fd)
	var hit []string
	bad := false
	buf := direntBufs.Get().(*[direntBufSize]byte)
	defer direntBufs.Put(buf)
	dirent.Each(fd, buf[:], func(name []byte, _ uint8) error {
		ok, err := filepath.Match(pattern, string(name))
		if err != nil {
			bad = true
			return err
		}
		if ok {
			hit = append(hit, string(name))
		}
		return nil
	})
	if bad {
		// Where glob stops depends on the order: as it does, over all names sorted.
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			return matches, nil
		}
		var names []string
		dirent.Each(fd, buf[:], func(name []byte, _ uint8) error {
			names = append(names, string(name))
			return nil
		})
		slices.Sort(names)
		for _, n := range names {
			ok, err := filepath.Match(pattern, n)
			if err != nil {
				return matches, err
			}
			if ok {
				matches = append(matches, filepath.Join(dir, n))
			}
		}
		return matches, nil
	}
	slices.Sort(hit)
	for _, n := range hit {
		matches = append(matches, filepath.Join(dir, n))
	}
	return matches, nil
}

// resolver is filepath.EvalSymlinks with each path's lstat and readlink made once: the
// paths one step resolves share their leading directories (~/.ssh, ~/.aws, … all walk
// the home; /bin, /sbin, /lib all lead to /usr). Use one only over a stretch in which
// nothing is created, removed or renamed by this process. A nil *resolver keeps
// nothing: each call looks again.
type resolver struct {
	lstats map[string]lstatResult
	links  map[string]readlinkResult
	// fresh, when set, names the paths looked at afresh on every call (the launch's
	// writable trees, which a running sandbox can change while this one is planned)
	fresh func(string) bool
}

type lstatResult struct {
	fi  fs.FileInfo
	err error
}

type readlinkResult struct {
	target string
	err    error
}

func newResolver() *resolver {
	return &resolver{lstats: map[string]lstatResult{}, links: map[string]readlinkResult{}}
}

// newLaunchResolver is Build's resolver, its lstat memory made at once for the paths a
// launch looks at with pathEntries entries on the caller's PATH (measured: 52 paths
// with /usr/bin:/bin, 122 with 12 entries; the git guard looks up ~5 programs in each
// entry), not grown by doubling: 5 growths and rehashes a launch, and their garbage
// in fresh spans (no collection runs in a launcher).
func newLaunchResolver(pathEntries int) *resolver {
	return &resolver{lstats: make(map[string]lstatResult, 32+8*pathEntries), links: map[string]readlinkResult{}}
}

// EvalSymlinksOnce returns filepath.EvalSymlinks (the same result and error for every
// path) with each lstat and readlink made once over the returned function's uses: for a
// stretch of look-ups in which nothing is created, removed or renamed by this process
// (one check over a launch's binds, whose sources share /dev, /usr, /run).
func EvalSymlinksOnce() func(string) (string, error) {
	return newResolver().evalSymlinks
}

// outside is a resolver sharing what r remembers, that looks afresh at the paths
// fresh names (the launch's writable trees, once they are known) and remembers the
// rest for r too. Same stretch rule as r: nothing created, removed or renamed by this
// process in between.
func (r *resolver) outside(fresh func(string) bool) *resolver {
	return &resolver{lstats: r.lstats, links: r.links, fresh: fresh}
}

// memoFS switches the per-launch memory of lstat and readlink off when false: a
// test's reference runs (TestMemoFSSameDecisions) compare against every call made
// afresh, as before policyfs.
var memoFS = true

// lstat is os.Lstat, once per path.
func (r *resolver) lstat(p string) (fs.FileInfo, error) {
	if r == nil || !memoFS || r.fresh != nil && r.fresh(p) {
		return os.Lstat(p)
	}
	if v, ok := r.lstats[p]; ok {
		return v.fi, v.err
	}
	fi, err := os.Lstat(p)
	r.lstats[p] = lstatResult{fi, err}
	return fi, err
}

// stat is os.Stat, answered by the remembered lstat where that is the same answer
// (stat and lstat differ only on a last component that is a symlink), else os.Stat
// afresh.
func (r *resolver) stat(p string) (fs.FileInfo, error) {
	if r == nil || !memoFS || r.fresh != nil && r.fresh(p) {
		return os.Stat(p)
	}
	if fi, err := r.lstat(p); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return fi, nil
	}
	return os.Stat(p)
}

// readlink is os.Readlink, once per path.
func (r *resolver) readlink(p string) (string, error) {
	if r == nil || !memoFS || r.fresh != nil && r.fresh(p) {
		return os.Readlink(p)
	}
	if v, ok := r.links[p]; ok {
		return v.target, v.err
	}
	t, err := os.Readlink(p)
	r.links[p] = readlinkResult{t, err}
	return t, err
}

// evalSymlinks is filepath.EvalSymlinks (path/filepath's walkSymlinks on Unix, step for
// step): the same result and the same error for every path.
func (r *resolver) evalSymlinks(path string) (string, error) {
	volLen := 0
	if len(path) > 0 && path[0] == '/' {
		volLen = 1
	}
	vol := path[:volLen]
	dest := vol
	linksWalked := 0
	for start, end := volLen, volLen; start < len(path); start = end {
		for start < len(path) && path[start] == '/' {
			start++
		}
		end = start
		for end < len(path) && path[end] != '/' {
			end++
		}
		if end == start {
			break // no more components
		} else if path[start:end] == "." {
			continue
		} else if path[start:end] == ".." {
			// Back up to the previous component if possible.
			var i int
			for i = len(dest) - 1; i >= volLen; i-- {
				if dest[i] == '/' {
					break
				}
			}
			if i < volLen || dest[i+1:] == ".." {
				if len(dest) > volLen {
					dest += "/"
				}
				dest += ".."
			} else {
				dest = dest[:i]
			}
			continue
		}
		if len(dest) > 0 && dest[len(dest)-1] != '/' {
			dest += "/"
		}
		dest += path[start:end]
		fi, err := r.lstat(dest)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsDir() && end < len(path) {
				return "", syscall.ENOTDIR
			}
			continue
		}
		linksWalked++
		if linksWalked > 255 {
			return "", errors.New("EvalSymlinks: too many links")
		}
		link, err := r.readlink(dest)
		if err != nil {
			return "", err
		}
		path = link + path[end:]
		if len(link) > 0 && link[0] == '/' {
			dest, end, vol, volLen = link[:1], 1, link[:1], 1
		} else {
			// Relative: replace the last component of dest.
			var i int
			for i = len(dest) - 1; i >= volLen; i-- {
				if dest[i] == '/' {
					break
				}
			}
			if i < volLen {
				dest = vol
			} else {
				dest = dest[:i]
			}
			end = 0
		}
	}
	return filepath.Clean(dest), nil
}
