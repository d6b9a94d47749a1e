package policy

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawjson"
)

// noLinks resolves one component at a time: no symlink (planted or not) is followed,
// nor a magic link, nor "..".
var noLinks = &unix.OpenHow{Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH}

// openBase opens c.Base, the caller's own directory (its symlinks were followed when
// CacheRoot made it canonical), and checks that it still belongs to the caller.
func (c *Cache) openBase() (int, error) {
	fd, err := unix.Open(c.Base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("cache: open %s: %w", c.Base, err)
	}
	if err := checkDir(fd, c.Base, c.UID, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// checkDir refuses a directory that the caller does not own or (private) that others
// may enter; an entry's and the root's directories are made 0700 and only the caller
// could have changed them.
func checkDir(fd int, path string, uid int, private bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("cache: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("cache: %s is not a directory", path)
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("cache: %s belongs to uid %d, not to you (uid %d): remove it, or set XDG_CACHE_HOME to a directory of your own", path, st.Uid, uid)
	}
	if st.Mode&0o022 != 0 || (private && st.Mode&0o077 != 0) {
		return fmt.Errorf("cache: %s has mode %#o: others could change it; chmod 700 it, or remove it", path, st.Mode&0o7777)
	}
	return nil
}

// step opens the directory name below dirfd (at path, for messages) without following
// a symlink, creating it 0700 when missing and create is set.
func step(dirfd int, name, path string, create bool) (int, error) {
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: noLinks.Resolve})
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOENT) && create && tries == 0:
			if err := unix.Mkdirat(dirfd, name, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
				return -1, fmt.Errorf("cache: mkdir %s: %w", path, err)
			}
		case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.EXDEV):
			return -1, fmt.Errorf("cache: %s is a symlink or not a directory: gosbx never follows a link there; remove it (%w)", path, err)
		default:
			return -1, fmt.Errorf("cache: open %s: %w", path, err)
		}
	}
}

// walkTo opens the components of rel below the base fd in turn (each checked with
// checkDir; private from the cache root down), closing what it passes.
func (c *Cache) walkTo(base int, comps []string, create bool) (int, error) {
	fd, path := base, c.Base
	for i, name := range comps {
		path = filepath.Join(path, name)
		nfd, err := step(fd, name, path, create)
		if fd != base {
			unix.Close(fd)
		}
		if err != nil {
			return -1, err
		}
		fd = nfd
		// ~/.cache is the user's (often 0755); from the cache root down, private
		private := !(i == 0 && name == ".cache" && strings.HasPrefix(c.Rel, ".cache/"))
		if err := checkDir(fd, path, c.UID, private); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// Prepare makes the workspace's cache on the host before the launch: Root, Dir and
// Source, 0700, owned by the caller, from Base one component at a time without
// following a symlink (a planted one at any component is an error naming it, never
// followed); then writes the metadata file (its time is the last use). Source's own
// mode is set to 0700 again (the sandbox owns its root inside). The launcher opens
// Source again with RESOLVE_NO_SYMLINKS (mounts.OpenSourcePath).
func (c *Cache) Prepare() error {
	base, err := c.openBase()
	if err != nil {
		return err
	}
	defer unix.Close(base)
	comps := append(strings.Split(c.Rel, "/"), c.ID)
	dir, err := c.walkTo(base, comps, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	src, err := step(dir, "cache", c.Source(), true)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return fmt.Errorf("cache: stat %s: %w", c.Source(), err)
	}
	if int(st.Uid) != c.UID {
		return fmt.Errorf("cache: %s belongs to uid %d, not to you (uid %d): gosbx cache rm %s", c.Source(), st.Uid, c.UID, c.ID)
	}
	if st.Mode&0o7777 != 0o700 {
		// through the O_PATH descriptor's /proc link: the directory checked, never a name
		if err := unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", src), 0o700); err != nil {
			return fmt.Errorf("cache: chmod 700 %s: %w", c.Source(), err)
		}
	}
	// the workspace byte for byte (a Latin-1 path: JSON alone makes it another, which
	// workspaceGone then finds gone, and `cache prune` would remove a live cache)
	meta, err := json.Marshal(cacheMeta{Workspace: rawjson.Escape(c.Workspace), ID: c.ID})
	if err != nil {
		return err
	}
	fd, err := unix.Openat2(dir, CacheMetaName, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_NOFOLLOW | unix.O_CLOEXEC, Mode: 0o600, Resolve: noLinks.Resolve})
	if err != nil {
		return fmt.Errorf("cache: write %s: %w", filepath.Join(c.Dir(), CacheMetaName), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(c.Dir(), CacheMetaName))
	_, err = f.Write(append(meta, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cache: write %s: %w", f.Name(), err)
	}
	return nil
}

type cacheMeta struct {
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
}

// CacheEntry is one workspace's cache as `gosbx cache ls` shows it.
type CacheEntry struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"` // from the metadata file ("" if unreadable): shown, never trusted
	Path      string    `json:"path"`      // the entry on the host
	Size      int64     `json:"size"`      // bytes allocated (st_blocks × 512), links not followed; -1: unknown (unreadable, or deeper than maxCacheDepth)
	LastUse   time.Time `json:"last_use"`  // the metadata file's time (zero if none)
	// Gone: the workspace recorded no longer exists, or is another directory now (its
	// WorkspaceID differs: removed and made again): no launch uses this entry again.
	Gone bool `json:"gone"`
}

// workspaceGone says whether the entry id, recorded for workspace ws, can no longer be
// that workspace's: ws is missing, or names a directory with another id. An entry
// without a readable workspace is not called gone.
func workspaceGone(ws, id string) bool {
	if ws == "" {
		return false
	}
	now, err := WorkspaceID(ws)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	return now != id
}

// openRoot opens the cache root without creating it; ok is false when it does not
// exist.
func (c *Cache) openRoot() (fd int, ok bool, err error) {
	base, err := c.openBase()
	if err != nil {
		return -1, false, err
	}
	defer unix.Close(base)
	fd, err = c.walkTo(base, strings.Split(c.Rel, "/"), false)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, false, nil
		}
		return -1, false, err
	}
	return fd, true, nil
}

// ListCaches lists the entries of the cache root c (from CacheRoot), sorted by
// workspace path, then id (an entry whose metadata is unreadable, with no workspace,
// first); an entry that is not a directory (a planted link) is skipped.
func ListCaches(c *Cache) ([]CacheEntry, error) {
	root, ok, err := c.openRoot()
	if err != nil || !ok {
		return nil, err
	}
	defer unix.Close(root)
	names, err := readNames(root, c.Root())
	if err != nil {
		return nil, err
	}
	var out []CacheEntry
	for _, n := range names {
		fd, err := openDir(root, n)
		if err != nil {
			continue // not a directory
		}
		e := CacheEntry{ID: n, Path: filepath.Join(c.Root(), n)}
		if e.Size, err = treeSize(fd, 0); err != nil {
			e.Size = -1
		}
		if m, err := unix.Openat2(fd, CacheMetaName, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: noLinks.Resolve}); err == nil {
			f := os.NewFile(uintptr(m), CacheMetaName)
			buf := make([]byte, 8192)
			k, _ := f.Read(buf)
			var meta cacheMeta
			if json.Unmarshal(buf[:k], &meta) == nil {
				if ws, ok := rawjson.Unescape(meta.Workspace); ok {
					e.Workspace = ws
				}
			}
			if st, err := f.Stat(); err == nil {
				e.LastUse = st.ModTime()
			}
			f.Close()
		}
		unix.Close(fd)
		e.Gone = workspaceGone(e.Workspace, e.ID)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b CacheEntry) int {
		return cmp.Or(strings.Compare(a.Workspace, b.Workspace), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// RemoveCache removes the entry id (ValidCacheID) of the cache root c: found by name in
// the root, removed below it by descriptors (unlinkat), never following a symlink in
// it; directories a command made unwritable are made writable first. A missing
// entry is fs.ErrNotExist.
func RemoveCache(c *Cache, id string) error {
	if !ValidCacheID(id) {
		return fmt.Errorf("cache rm: %q is not a cache id", id)
	}
	root, ok, err := c.openRoot()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("cache rm %s: %w", id, os.ErrNotExist)
	}
	defer unix.Close(root)
	path := filepath.Join(c.Root(), id)
	if err := writableDir(root, id, path); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("cache rm %s: %w", path, os.ErrNotExist)
		}
		return err
	}
	top, err := openDir(root, id)
	if err != nil {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	defer unix.Close(top)
	// each pass removes what lies within maxCacheDepth levels and moves what lies deeper
	// up into the entry, for the next pass: at most maxCacheDepth descriptors open at
	// once, whatever the depth a sandbox made
	for pass := 0; ; pass++ {
		names, err := readNames(top, path)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			break
		}
		if pass > maxCachePasses {
			return fmt.Errorf("cache rm %s: still not empty after %d passes", path, maxCachePasses)
		}
		seq := 0
		for _, n := range names {
			if err := removeAt(top, n, filepath.Join(path, n), top, 1, pass, &seq); err != nil {
				return err
			}
		}
	}
	if err := unix.Unlinkat(root, id, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	return nil
}

// maxCacheDepth bounds the directory levels a cache walk holds descriptors for (one
// each; the caller's RLIMIT_NOFILE may be 1024); maxCachePasses the passes of
// RemoveCache (a tree of depth D takes D/maxCacheDepth+1).
const (
	maxCacheDepth  = 128
	maxCachePasses = 1 << 16
)

// writableDir gives the directory name below dirfd its owner's rwx (a module cache's
// dirs are 0555), through an O_PATH descriptor's /proc link, never the name again.
func writableDir(dirfd int, name, path string) error {
	p, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: noLinks.Resolve})
	if err != nil {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	err = unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", p), 0o700)
	unix.Close(p)
	if err != nil {
		return fmt.Errorf("cache rm %s: chmod: %w", path, err)
	}
	return nil
}

// removeAt removes name below dirfd: a directory's contents first, through a
// descriptor opened without following links; anything else (a symlink included) is
// unlinked. A directory depth levels below the entry top, at maxCacheDepth, is moved
// into top instead (renameat(2), named for pass and *seq), for RemoveCache's next pass.
func removeAt(dirfd int, name, path string, top, depth, pass int, seq *int) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("cache rm %s: %w", path, os.ErrNotExist)
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	if depth >= maxCacheDepth {
		// moving a directory to another parent needs write permission on it (its "..")
		if err := writableDir(dirfd, name, path); err != nil {
			return err
		}
		for {
			*seq++ // a name the tree holds already (EEXIST) is skipped, never replaced
			err := unix.Renameat2(dirfd, name, top, fmt.Sprintf(".gosbx-rm-%d-%d", pass, *seq), unix.RENAME_NOREPLACE)
			if err == nil {
				return nil
			}
			if !errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("cache rm %s: move up: %w", path, err)
			}
		}
	}
	// a directory: make it ours to read and change
	if err := writableDir(dirfd, name, path); err != nil {
		return err
	}
	fd, err := openDir(dirfd, name)
	if err != nil {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	names, err := readNames(fd, path)
	for _, n := range names {
		if err == nil {
			err = removeAt(fd, n, filepath.Join(path, n), top, depth+1, pass, seq)
		}
	}
	unix.Close(fd)
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("cache rm %s: %w", path, err)
	}
	return nil
}

// openDir opens the directory name below dirfd for reading, without following links.
func openDir(dirfd int, name string) (int, error) {
	return unix.Openat2(dirfd, name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: noLinks.Resolve})
}

// readNames lists a directory through a descriptor of its own (fd stays open).
func readNames(fd int, path string) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", path, err)
	}
	f := os.NewFile(uintptr(d), path)
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("cache: read %s: %w", path, err)
	}
	return names, nil
}

// treeSize sums the blocks of what lies below the directory fd, links not followed,
// depth levels below the entry. Errors: a directory it cannot read, or one deeper than
// maxCacheDepth (ELOOP): the size is then unknown, not a smaller one.
func treeSize(fd, depth int) (int64, error) {
	if depth >= maxCacheDepth {
		return 0, unix.ELOOP
	}
	names, err := readNames(fd, ".")
	if err != nil {
		return 0, err
	}
	var total int64
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		total += st.Blocks * 512
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := openDir(fd, n)
			if err != nil {
				return 0, err
			}
			s, err := treeSize(sub, depth+1)
			unix.Close(sub)
			if err != nil {
				return 0, err
			}
			total += s
		}
	}
	return total, nil
}
