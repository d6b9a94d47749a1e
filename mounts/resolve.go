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

// mkdirAll opens dest (an absolute path inside the root) as an O_PATH directory,
// creating missing components with mode 0555: a directory made only to hold a mount
// point (the parents of a workspace in /var/tmp) is not a place the command can write.
// No component may be a symlink.
func (r *Root) mkdirAll(dest string) (int, error) {
	fd, err := openat2(r.fd, rel(dest), unix.O_PATH|unix.O_DIRECTORY, strictResolve)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	dir, err := unix.Dup(r.fd)
	if err != nil {
		return -1, err
	}
	for _, comp := range strings.Split(rel(dest), "/") {
		next, err := openat2(dir, comp, unix.O_PATH|unix.O_DIRECTORY, strictResolve)
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(dir, comp, 0o555); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(dir)
				return -1, err
			}
			next, err = openat2(dir, comp, unix.O_PATH|unix.O_DIRECTORY, strictResolve)
		}
		unix.Close(dir)
		if err != nil {
			return -1, err
		}
		dir = next
	}
	return dir, nil
}

// mkfile opens dest as an O_PATH regular file, creating it (empty, mode 0444) and its
// parent directories when missing. No component may be a symlink.
func (r *Root) mkfile(dest string) (int, error) {
	fd, err := openat2(r.fd, rel(dest), unix.O_PATH, strictResolve)
	if err == nil || !errors.Is(err, unix.ENOENT) {
		return fd, err
	}
	parent, err := r.mkdirAll(filepath.Dir(dest))
	if err != nil {
		return -1, err
	}
	defer unix.Close(parent)
	base := filepath.Base(dest)
	f, err := unix.Openat(parent, base, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o444)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	if err == nil {
		unix.Close(f)
	}
	return openat2(parent, base, unix.O_PATH, strictResolve)
}

// target opens (creating if needed) the mount point for a source of the given kind.
func (r *Root) target(dest string, dir bool) (int, error) {
	if dir {
		return r.mkdirAll(dest)
	}
	return r.mkfile(dest)
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
