package mounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Paths inside the new root are resolved by the kernel with openat2(2) rather than with
// filepath-securejoin: one syscall per lookup on the start-up path, and RESOLVE_IN_ROOT /
// RESOLVE_NO_SYMLINKS give the same containment guarantee without a user-space walk.

// rel turns an absolute sandbox path into one relative to the root ("." for "/").
func rel(p string) string {
	p = strings.TrimLeft(filepath.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

func openat2(dirfd int, path string, flags uint64, resolve uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, path, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: resolve})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// strict resolution for mount targets: no symlink at all, never above the root.
const strictResolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH

// inRootResolve is for paths the caller names inside the sandbox (protected, masked,
// working directory): symlinks are followed, but "/" and ".." stay inside the root.
const inRootResolve = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// handle is a descriptor from mkdirAll: owned by the caller (own), or borrowed from
// the Root (its own fd, or an entry of its directory cache), valid until the next mount.
type handle struct {
	fd  int
	own bool
}

func (h handle) close() {
	if h.own {
		unix.Close(h.fd)
	}
}

// The directory cache. Building a root resolves the same directories again and again
// (/dev for six device binds, devpts, /dev/shm and five symlinks). Root.dirs keeps the
// O_PATH descriptor of each directory mkdirAll opened, by its path relative to the root,
// so each is resolved once. A descriptor stays the directory the path named when it was
// opened: every mount at a path drops the entries at and below it (forgetBelow), since
// the path now leads into the mount. Only directories on the root's own file systems
// are kept (the root tmpfs and what FS mounted), which nothing but this process can
// reach before PivotRoot: a path at or below a bind's destination (a host file system,
// which others can rename under it) is resolved anew, from the nearest kept ancestor
// (at most the bind's own mount point), with RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH as
// before.

// kept returns the cached descriptor of the directory p (relative, cleaned); "." is
// the root.
func (r *Root) kept(p string) (int, bool) {
	if p == "." {
		return r.fd, true
	}
	fd, ok := r.dirs[p]
	return fd, ok
}

// keep caches fd as the directory p if p is on the root's own file systems and returns
// it borrowed; otherwise the caller owns it.
func (r *Root) keep(p string, fd int) handle {
	for _, b := range r.bound {
		if within(p, b) {
			return handle{fd: fd, own: true}
		}
	}
	if r.dirs == nil {
		r.dirs = map[string]int{}
	}
	r.dirs[p] = fd
	return handle{fd: fd}
}

// forgetBelow drops the cached directories at and below p (relative, cleaned), where a
// mount was just attached; "." drops them all.
func (r *Root) forgetBelow(p string) {
	for q, fd := range r.dirs {
		if within(q, p) {
			unix.Close(fd)
			delete(r.dirs, q)
		}
	}
}

// within reports whether the relative, cleaned path p is q or lies below it.
func within(p, q string) bool {
	return q == "." || p == q || (len(p) > len(q) && p[len(q)] == '/' && p[:len(q)] == q)
}

// parentRel is the parent of the relative, cleaned path p ("." for a single component).
func parentRel(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}

// mkdirAll opens dest (an absolute path inside the root) as an O_PATH directory,
// creating missing components with mode 0555: a directory made only to hold a mount
// point (the parents of a workspace in /var/tmp) is not a place the command can write.
// No component may be a symlink. The walk starts at the nearest cached ancestor.
func (r *Root) mkdirAll(dest string) (handle, error) {
	h, _, err := r.walk(dest, false, 0o555)
	return h, err
}

// fileParents is mkdirAll for the directory of a config file (WriteFile), its missing
// components made with mode 0755: they hold a file of the sandbox's own tmpfs (the
// private HOME's ~/.config/go/telemetry), not a mount point, and the command (their
// owner) must be able to add its own files there as in a directory it made itself.
func (r *Root) fileParents(dest string) (handle, error) {
	h, _, err := r.walk(dest, false, 0o755)
	return h, err
}

// mountpoint is mkdirAll for the mount point of a directory mount, as a descriptor and
// a name for move_mount(2): the directory itself (name ""), or, when the walk has just
// created it (mkdirat(2) succeeded) on the root's own file systems, its parent and that
// name, one component that move_mount looks up without following a symlink
// (MOVE_MOUNT_T_SYMLINKS unset): the directory nothing else could have replaced, without
// opening it.
func (r *Root) mountpoint(dest string) (handle, string, error) {
	return r.walk(dest, true, 0o555)
}

func (r *Root) walk(dest string, leaf bool, mode uint32) (handle, string, error) {
	p := rel(dest)
	base := p
	fd, ok := r.kept(base)
	for !ok {
		base = parentRel(base)
		fd, ok = r.kept(base)
	}
	if base == p {
		return handle{fd: fd}, "", nil
	}
	rest := p
	if base != "." {
		rest = p[len(base)+1:]
	}
	if strings.IndexByte(rest, '/') >= 0 {
		// Several components: one lookup finds them all when they exist.
		if dfd, err := openat2(fd, rest, unix.O_PATH|unix.O_DIRECTORY, strictResolve); err == nil {
			return r.keep(p, dfd), "", nil
		} else if !errors.Is(err, unix.ENOENT) {
			return handle{}, "", err
		}
	}
	dir := handle{fd: fd}
	cur := base
	for len(rest) > 0 {
		comp := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		next := comp
		if cur != "." {
			next = cur + "/" + comp
		}
		var nfd int
		var err error
		if dir.own {
			// Under a bind (a host file system): look before creating, as ever.
			nfd, err = openat2(dir.fd, comp, unix.O_PATH|unix.O_DIRECTORY, strictResolve)
			if errors.Is(err, unix.ENOENT) {
				if err = unix.Mkdirat(dir.fd, comp, mode); err == nil || errors.Is(err, unix.EEXIST) {
					nfd, err = openat2(dir.fd, comp, unix.O_PATH|unix.O_DIRECTORY, strictResolve)
				}
			}
		} else {
			// On the root's own file systems a component is mostly missing: create it
			// first (EEXIST when it is there), then open it without following a symlink.
			err = unix.Mkdirat(dir.fd, comp, mode)
			if err == nil && leaf && rest == "" {
				return dir, comp, nil
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				nfd, err = openat2(dir.fd, comp, unix.O_PATH|unix.O_DIRECTORY, strictResolve)
			}
		}
		dir.close()
		if err != nil {
			return handle{}, "", err
		}
		dir = r.keep(next, nfd)
		cur = next
	}
	return dir, "", nil
}

// mkfile opens dest as a regular file for a mount point, creating it (empty, mode 0444)
// and its parent directories when missing. No component may be a symlink: an existing
// dest is opened O_PATH with RESOLVE_NO_SYMLINKS, a missing one created with
// O_CREAT|O_EXCL|O_NOFOLLOW.
func (r *Root) mkfile(dest string) (int, error) {
	p := rel(dest)
	parent, err := r.mkdirAll("/" + parentRel(p))
	if err != nil {
		return -1, err
	}
	defer parent.close()
	base := p[strings.LastIndexByte(p, '/')+1:]
	fd, err := unix.Openat(parent.fd, base, unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
	if err == nil || !errors.Is(err, unix.EEXIST) {
		return fd, err
	}
	return openat2(parent.fd, base, unix.O_PATH, strictResolve)
}

// lookup opens an existing path inside the root, following symlinks only within it.
// It returns os.ErrNotExist (wrapped) when the path is absent.
func (r *Root) lookup(p string) (int, error) {
	fd, err := openat2(r.fd, rel(p), unix.O_PATH, inRootResolve)
	if errors.Is(err, unix.ENOENT) {
		return -1, os.ErrNotExist
	}
	return fd, err
}

// OpenDir opens an existing directory inside the root for fchdir(2), following symlinks
// only within the root and never through a procfs magic link (so /proc/self/fd/N and
// /proc/self/cwd cannot lead outside).
func (r *Root) OpenDir(p string) (*os.File, error) {
	fd, err := openat2(r.fd, rel(p), unix.O_PATH|unix.O_DIRECTORY, inRootResolve)
	if err != nil {
		return nil, &Error{Op: "open", Target: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}
