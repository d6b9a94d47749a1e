package policy

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/internal/dirent"
	"golang.org/x/sys/unix"
)

// Protected paths are found in each writable tree (the workspace, each read-write bind)
// when the sandbox is built, and re-bound read-only. Repository metadata is the reason:
// a hook or a config entry (core.fsmonitor, core.pager) planted in a .git by the command
// would run later, outside the sandbox, the next time the user runs git there.
//
// A pattern without a slash (".git") matches that name at any depth the bounded scan
// reaches, and in every directory from the tree's root to the working directory; a
// pattern with a slash ("config/*.key", "**/.git/hooks") is anchored at the tree's root,
// "*" matching within one component and "**" any number of them. A path created by the
// command after the sandbox was built is not protected.

// scanDepth and DefaultScanLimit bound the scan: directories at most this deep below
// the tree's root, at most this many directories read (filesystem.scan_limit), on the
// start path. A tree that needs more is refused rather than left half protected.
const (
	scanDepth        = 3
	DefaultScanLimit = 4096
)

// scanSkip are directories never descended into: dependency trees, caches, build output.
func scanSkip(name string) bool {
	switch name {
	case ".git", "node_modules", ".venv", "venv", "target", "__pycache__", ".cache", "dist", "build",
		".tox", ".mypy_cache", ".gradle":
		return true
	}
	return false
}

// protectedIn returns the existing paths under root (canonical) that match patterns,
// given the command's working directory cwd ("" if none), in a stable order. It fails
// when the scan would read more than limit directories (0: DefaultScanLimit).
func protectedIn(root, cwd string, patterns []string, limit int) ([]string, error) {
	return scanProtected(newResolver(), root, cwd, patterns, limit)
}

// scanProtected is protectedIn, resolving cwd with r.
func scanProtected(r *resolver, root, cwd string, patterns []string, limit int) ([]string, error) {
	return scanProtectedCached(r, root, cwd, patterns, limit, nil)
}

// scanEntry is what the scan keeps of a directory's entry: one that matches a pattern,
// or a directory it enters; rel is its path from the tree's root (anchored patterns).
type scanEntry struct {
	name, rel, path string // path: dir/name, made once (a cached search meets it again)
	matched         bool
}

// scanProtectedCached is scanProtected; with c (non-nil) it reads only the directories
// that changed since c was filled (dircache.go), with the same result as a full scan.
func scanProtectedCached(r *resolver, root, cwd string, patterns []string, limit int, c *dirCache) ([]string, error) {
	if limit <= 0 {
		limit = DefaultScanLimit
	}
	var names, anchored []string
	for _, p := range patterns {
		if strings.Contains(p, "/") {
			anchored = append(anchored, p)
		} else {
			names = append(names, p)
		}
	}
	// with .git protected, a bare repository (bareMarks) is too
	findBare := slices.Contains(names, ".git")
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	// The tree's root and the chain down to the working directory, whatever the depth.
	dirs := []string{root}
	if c, err := r.evalSymlinks(cwd); err == nil && strings.HasPrefix(c, root+"/") {
		for d := c; len(d) > len(root); d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
	}
	// git's in-tree files that are no regular file (a FIFO .gitignore: the host's git
	// status would hang), found where the scan reads and on the chain below its depth;
	// the launch is refused naming them (gittreenames.go)
	var specials [][2]string
	for _, d := range dirs {
		for _, n := range names {
			if !hasGlob(n) && exists(filepath.Join(d, n)) {
				add(filepath.Join(d, n))
			}
		}
		if strings.Count(d[len(root):], "/") > scanDepth {
			for _, n := range gitTreeNames {
				if what := treeSpecial(unix.AT_FDCWD, filepath.Join(d, n), unix.DT_UNKNOWN); what != "" {
					specials = append(specials, [2]string{filepath.Join(d, n), what})
				}
			}
		}
	}
	for _, a := range anchored {
		if hasGlob(a) {
			continue
		}
		// Resolved in one step without following any symlink: a protected path reached
		// through one (a directory swapped for a link while gosbx starts) is refused, not
		// silently left unprotected.
		p := filepath.Join(root, a)
		fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
		switch {
		case err == nil:
			unix.Close(fd)
			add(p)
		case errors.Is(err, unix.ELOOP):
			return nil, errorf("protected", p, nil, "the protected path is reached through a symlink; refusing rather than leaving it unprotected")
		}
	}
	// The scan reads each directory through its parent's descriptor (O_NOFOLLOW: never
	// through a symlink), with one getdents64 buffer, in os.ReadDir's order.
	budget, exhausted := limit, false
	var rootErr error
	// A directory the scan cannot read or search (mode 000, r-- without x) is protected
	// as a whole: its owner could have made it so in an earlier run to hide a repository
	// planted in it, and make it readable again in the next. Read-only, it cannot be
	// chmod'ed back (EROFS). Gone, or swapped for a symlink or a file meanwhile: skipped,
	// as os.ReadDir would.
	// With c: a tree whose every directory was watched and has sent no event since is
	// not walked at all (what its last walk found is found again, in its order).
	// Otherwise what this walk finds is kept for that, with whether it can be.
	walkAdd, watchedAll := add, c != nil
	var walkFound []string
	if c != nil {
		if found, ok := c.replay(root); ok {
			for _, p := range found {
				add(p)
			}
			if len(specials) > 0 {
				return nil, treeSpecialError(specials)
			}
			return out, nil
		}
		c.walking(root)
		walkAdd = func(p string) {
			add(p)
			walkFound = append(walkFound, p)
		}
	}
	// With c (a session's search again, its sandbox alive): a directory that vanished
	// or changed type since its parent was read fails the search, a process may be
	// moving a repository out of its reach and back (ErrChangedMidSearch).
	var changed error
	unreadable := func(dir string, depth int, err error) {
		watchedAll = false // not kept: read again each time
		switch {
		case c != nil && depth > 0 && (errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)):
			if changed == nil {
				changed = changedError(dir, err)
			}
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		case depth == 0:
			rootErr = err
		default:
			walkAdd(dir)
		}
	}
	pooled := direntBufs.Get().(*[direntBufSize]byte)
	defer direntBufs.Put(pooled)
	buf := pooled[:]
	var walk func(parent int, name, dir, rel string, depth int)
	var visit func(keep []scanEntry, fd int, dir string, depth int)
	walk = func(parent int, name, dir, rel string, depth int) {
		if depth > scanDepth || exhausted {
			return
		}
		if budget == 0 {
			exhausted = true
			return
		}
		budget--
		if c != nil {
			// Unchanged since the last scan (its entries and mode as they were): what it
			// held is taken as read, and the scan goes on by path (no descriptor).
			if keep, watched, ok := c.lookup(dir, parent >= 0); ok {
				watchedAll = watchedAll && watched
				visit(keep, -1, dir, depth)
				return
			}
			parent, name = unix.AT_FDCWD, dir
		}
		flags := unix.O_NOFOLLOW
		if depth == 0 {
			flags = 0 // the tree's root, canonical
		}
		fd, err := openDirAt(parent, name, flags)
		if err != nil {
			unreadable(dir, depth, err)
			return
		}
		defer unix.Close(fd)
		// the directory watched, and its state, before it is read: a change after this
		// is seen next time
		var st unix.Stat_t
		wd := -1
		if c != nil {
			wd = c.watch(fd)
			if unix.Fstat(fd, &st) != nil {
				st = unix.Stat_t{}
			}
		}
		// Listable is not enough: a directory without search permission (r--) lists its
		// names, a .git among them, but nothing in it can be looked at (faccessat2(2),
		// the caller's effective ids).
		if err := unix.Faccessat2(fd, "", unix.X_OK, unix.AT_EMPTY_PATH|unix.AT_EACCESS); err != nil {
			unreadable(dir, depth, err)
			return
		}
		// Only what decides the result is kept: the entries that match a pattern and
		// the directories the scan enters, in os.ReadDir's order (by name).
		var keep []scanEntry
		var bare bareMarks
		special := false
		err = dirent.Each(fd, buf, func(nb []byte, typ uint8) error {
			if gitTreeName(nb) {
				if what := treeSpecial(fd, string(nb), typ); what != "" {
					specials = append(specials, [2]string{filepath.Join(dir, string(nb)), what})
					special = true
				}
			}
			isDir, err := isDirAt(fd, nb, typ)
			if errors.Is(err, os.ErrNotExist) {
				if c != nil && changed == nil {
					changed = changedError(filepath.Join(dir, string(nb)), err)
				}
				return nil // gone: os.ReadDir leaves it out
			}
			if err != nil {
				return err
			}
			if findBare {
				bare.see(string(nb), isDir)
			}
			r := ""
			if len(anchored) > 0 {
				r = path.Join(rel, string(nb))
			}
			matched := false
			for _, n := range names {
				if nameMatch(n, string(nb)) {
					matched = true
				}
			}
			for _, a := range anchored {
				if matchGlob(a, r) {
					matched = true
				}
			}
			if matched || isDir && !scanSkip(string(nb)) {
				p := filepath.Join(dir, string(nb))
				keep = append(keep, scanEntry{name: p[len(p)-len(nb):], rel: r, path: p, matched: matched}) // one string
			}
			return nil
		})
		if err != nil {
			unreadable(dir, depth, err)
			return
		}
		slices.SortFunc(keep, func(a, b scanEntry) int { return strings.Compare(a.name, b.name) })
		if depth > 0 && bare.all() {
			// a bare repository: protected whole, as a .git is (its hooks run on the host's
			// git push to it); kept so, a cached search finds it again
			keep = []scanEntry{{name: filepath.Base(dir), rel: rel, path: dir, matched: true}}
		}
		if c != nil && !special {
			watchedAll = watchedAll && wd >= 0 && st.Ino != 0
			c.store(dir, &st, keep, wd)
		}
		visit(keep, fd, dir, depth)
	}
	visit = func(keep []scanEntry, fd int, dir string, depth int) {
		for _, e := range keep {
			if e.matched {
				walkAdd(e.path)
				continue // its contents are protected with it
			}
			walk(fd, e.name, e.path, e.rel, depth+1)
		}
	}
	walk(unix.AT_FDCWD, root, root, "", 0)
	if rootErr != nil {
		return nil, errorf("protected", root, rootErr, "cannot read the tree to search it for protected paths")
	}
	if changed != nil {
		return nil, changed
	}
	if exhausted {
		return nil, errorf("protected", root, nil, "more than %d directories within %d levels to search for protected paths; "+
			"raise the limit with --scan-limit N (N over %[1]d) or filesystem: {scan_limit: N} in a policy file, or name a narrower workspace "+
			"(protection is never left half done)", limit, scanDepth)
	}
	if len(specials) > 0 {
		return nil, treeSpecialError(specials)
	}
	if c != nil {
		c.walked(root, walkFound, watchedAll)
	}
	return out, nil
}

func hasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// nameMatch is path.Match(pattern, name) as the scan uses it (a bad pattern matches
// nothing), without the matcher for a pattern that is a plain name.
func nameMatch(pattern, name string) bool {
	if !strings.ContainsAny(pattern, `*?[\`) {
		return pattern == name
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// matchGlob matches a slash-separated relative path against pattern, where "**" is any
// number of components (zero included) and other components follow path.Match.
func matchGlob(pattern, rel string) bool {
	return matchParts(strings.Split(pattern, "/"), strings.Split(rel, "/"))
}

func matchParts(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(parts); i++ {
				if matchParts(pat[1:], parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// bareMarks records which of a bare repository's entries a directory holds
// (gitrepository-layout(5): HEAD, config, the directories objects and refs), as the
// scan reads its names.
type bareMarks uint8

func (m *bareMarks) see(name string, isDir bool) {
	switch {
	case name == "HEAD":
		*m |= 1
	case name == "config":
		*m |= 2
	case name == "objects" && isDir:
		*m |= 4
	case name == "refs" && isDir:
		*m |= 8
	}
}

func (m bareMarks) all() bool { return m == 15 }
