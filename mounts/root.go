package mounts

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MakePrivate sets every mount of the current mount namespace to private propagation
// (mount --make-rprivate /), so nothing done here reaches the host and nothing the host
// mounts later reaches the sandbox. See mount_namespaces(7).
func MakePrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &Error{Op: "make-rprivate", Target: "/", Err: err}
	}
	return nil
}

// Source is a detached copy of a host mount tree, cloned with open_tree(2)
// (OPEN_TREE_CLONE) while the host's file system is still in view. Attaching it later
// with move_mount(2) cannot be redirected by changes to the host path.
type Source struct {
	fd   int
	path string
	dir  bool
}

// OpenSource clones the mount tree at the host path p, which must be canonical: no
// component may be a symlink (openat2(2) RESOLVE_NO_SYMLINKS), so a path swapped for a
// symlink after it was checked fails with ELOOP instead of mounting something else.
// recursive clones submounts too (rbind); a tree with submounts locked by a less
// privileged user namespace can only be cloned recursively. Errors are *Error.
func OpenSource(p string, recursive bool) (*Source, error) {
	fd, err := OpenSourcePath(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return openTree(fd, p, recursive)
}

// OpenSourcePath opens the canonical host path p as an O_PATH descriptor without
// following any symlink, for OpenSourceChecked, possibly in another process.
func OpenSourcePath(p string) (int, error) {
	fd, err := openat2(unix.AT_FDCWD, p, unix.O_PATH, unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%w (a component of the path is now a symlink; it was resolved and checked without one)", err)
		}
		return -1, &Error{Op: "open", Source: p, Err: err}
	}
	return fd, nil
}

// OpenSourceChecked opens the canonical host path p in this mount namespace as
// OpenSource does, and verifies that it is the same file as checked, an O_PATH
// descriptor opened (by OpenSourcePath) in the launcher, which may be in another mount
// namespace (open_tree(2) only clones mounts of the caller's own namespace). A path that
// now leads to another file fails with ESTALE: it changed after it was checked.
func OpenSourceChecked(checked int, p string, recursive bool) (*Source, error) {
	fd, err := OpenSourcePath(p)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var a, b unix.Stat_t
	if err := unix.Fstat(checked, &a); err != nil {
		return nil, &Error{Op: "stat", Source: p, Err: err}
	}
	if err := unix.Fstat(fd, &b); err != nil {
		return nil, &Error{Op: "stat", Source: p, Err: err}
	}
	if a.Dev != b.Dev || a.Ino != b.Ino {
		return nil, &Error{Op: "open", Source: p, Err: fmt.Errorf("%w (the path leads to another file than the one checked at launch)", unix.ESTALE)}
	}
	return cloneTree(fd, p, recursive, b.Mode&unix.S_IFMT == unix.S_IFDIR)
}

// openTree clones the mount tree at the O_PATH descriptor fd (named name in errors)
// with open_tree(2) OPEN_TREE_CLONE. The descriptor is not consumed.
func openTree(fd int, name string, recursive bool) (*Source, error) {
	src, err := cloneTree(fd, name, recursive, false)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(src.fd, &st); err != nil {
		src.Close()
		return nil, &Error{Op: "stat", Source: name, Err: err}
	}
	src.dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	return src, nil
}

// cloneTree is openTree of a file whose type is known (an fstat of fd): the root of the
// clone is that file.
func cloneTree(fd int, name string, recursive, dir bool) (*Source, error) {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	tree, err := unix.OpenTree(fd, "", flags)
	if err != nil {
		return nil, &Error{Op: "open_tree", Source: name, Err: err}
	}
	return &Source{fd: tree, path: name, dir: dir}, nil
}

// Close releases the detached tree if it was never attached.
func (s *Source) Close() error { return unix.Close(s.fd) }

// Fd is the detached tree's mount descriptor, to pass to another process.
func (s *Source) Fd() int { return s.fd }

// Path is the host path the tree was cloned from.
func (s *Source) Path() string { return s.path }

// SetIDMap makes the detached tree, submounts included, an idmapped mount
// (mount_setattr(2) MOUNT_ATTR_IDMAP, AT_RECURSIVE) with the id mappings of the user
// namespace usernsFd: a file owned on disk by an id the namespace maps from is seen as
// owned by the host id it maps to, and a file created there by that host id is written
// as owned by the mapped-from id. It must be done before the tree is attached. A file
// system that cannot be idmapped anywhere in the tree (proc, sysfs, overlayfs, most
// FUSE and network file systems, kernels before 5.12) gives EINVAL and changes nothing.
// See mount_setattr(2), Documentation/filesystems/idmappings.rst.
func (s *Source) SetIDMap(usernsFd int) error {
	err := unix.MountSetattr(s.fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(usernsFd)})
	if err != nil {
		return &Error{Op: "idmap", Source: s.path, Err: err}
	}
	return nil
}

// treeSource adopts fd, a detached tree cloned by the launcher (CloneSources), as the
// source p; closing the Source closes fd.
func treeSource(fd int, p string) (*Source, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &Error{Op: "stat", Source: p, Err: err}
	}
	return &Source{fd: fd, path: p, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, nil
}

// Root is a new root file system under construction: a fresh tmpfs attached at a
// staging directory; every target is resolved beneath it.
type Root struct {
	fd      int      // the root of the tmpfs mount (from fsmount)
	roLater []sealed // mounts made read-only by PivotRoot, once populated

	dirs  map[string]int // directories on the root's own file systems (resolve.go)
	bound []string       // bind destinations (relative): below them nothing is cached

	// The first file mask and the first directory mask, attached; later masks are
	// clones of them (open_tree(2) copies the mount attributes), not new instances.
	maskFile, maskDir int
	maskNull          *Null // the source of maskFile

	// procSys is an O_PATH descriptor of the root procfs's sys directory, -1 for
	// none: kept until PivotRoot for ProcSys
	procSys int
}

// ProcSys returns an O_PATH descriptor of the sys directory of the root's procfs (its
// one "proc" mount), opened as soon as that procfs was mounted, or -1 when spec mounts
// none. A walk from it stays below whatever is bound over /proc/sys later (a read-only
// path, a mask): it reaches the procfs's own sysctl files, on the procfs's mount,
// read-write until PivotRoot. Owned by r, valid until PivotRoot closes it.
func (r *Root) ProcSys() int { return r.procSys }

// New creates the root tmpfs (mode 0755, nosuid, nodev) and attaches it at staging, a
// directory of the current mount namespace that no source of a later bind needs.
func New(staging string) (*Root, error) {
	fd, err := newFS(-1, "tmpfs", map[string]string{"mode": "0755"}, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return nil, errorf("mount", "tmpfs", "/", unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, staging, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		unix.Close(fd)
		return nil, &Error{Op: "move_mount", Source: "tmpfs", Target: staging, Err: err}
	}
	return &Root{fd: fd, maskFile: -1, maskDir: -1, procSys: -1}, nil
}

// newFS creates a detached mount of a new file system instance (fsopen(2), fsconfig(2),
// fsmount(2)) and returns its mount fd.
func newFS(fsfd int, fstype string, opts map[string]string, attr uint64) (int, error) {
	if fsfd < 0 {
		var err error
		if fsfd, err = unix.Fsopen(fstype, unix.FSOPEN_CLOEXEC); err != nil {
			return -1, fmt.Errorf("fsopen: %w", err)
		}
	}
	var err error
	defer unix.Close(fsfd)
	for k, v := range opts {
		if v == "" {
			err = unix.FsconfigSetFlag(fsfd, k)
		} else {
			err = unix.FsconfigSetString(fsfd, k, v)
		}
		if err != nil {
			return -1, fmt.Errorf("fsconfig %s=%s: %w", k, v, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig create: %w", err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, int(attr))
	if err != nil {
		return -1, fmt.Errorf("fsmount: %w", err)
	}
	return fd, nil
}

// attach moves the detached mount mfd onto dest inside the root (a directory, or a
// file, created if missing).
func (r *Root) attach(mfd int, dest string, dir bool) error {
	var t handle
	var name string // "": t is the mount point; else its parent (Root.mountpoint)
	var err error
	if dir {
		t, name, err = r.mountpoint(dest)
	} else {
		t.fd, err = r.mkfile(dest)
		t.own = true
	}
	if err != nil {
		return fmt.Errorf("mount point: %w", err)
	}
	flags := unix.MOVE_MOUNT_F_EMPTY_PATH
	if name == "" {
		flags |= unix.MOVE_MOUNT_T_EMPTY_PATH
	}
	err = unix.MoveMount(mfd, "", t.fd, name, flags)
	t.close()
	r.forgetBelow(rel(dest))
	return err
}

// setattr sets attr on the mount tree of fd (recursively when recursive), leaving every
// other attribute as it is. That keeps flags the kernel locked in a user namespace
// (nosuid, nodev, noexec, atime of the source) instead of failing with EPERM as a
// MS_REMOUNT|MS_BIND would.
func setattr(fd int, attr uint64, recursive bool) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attr})
}

// setattrPrivate is setattr on a clone of existing mounts, which also makes every mount
// of the tree private (in the same call). A clone (open_tree(2) OPEN_TREE_CLONE) joins
// the peer group of each mount it copies: a tree the launcher cloned from a shared host
// mount (every mount of a systemd host is shared) would otherwise carry whatever the
// sandbox mounts on it back to the host (masks over the host's /etc/shadow), and bring
// the host's later mounts in. MakePrivate cannot reach such a tree: it is not in this
// namespace until attached.
func setattrPrivate(fd int, attr uint64, recursive bool) error {
	flags := uint(unix.AT_EMPTY_PATH)
	if recursive {
		flags |= unix.AT_RECURSIVE
	}
	return unix.MountSetattr(fd, "", flags, &unix.MountAttr{Attr_set: attr, Propagation: unix.MS_PRIVATE})
}

// Bind attaches the cloned tree src at dest with the MOUNT_ATTR_* bits attr added
// (recursively). The mount point is created (a directory or an empty file, as the
// source) if missing; no component of dest may be a symlink. src is consumed.
func (r *Root) Bind(src *Source, dest string, attr uint64) error {
	defer src.Close()
	if err := setattrPrivate(src.fd, attr, true); err != nil {
		return errorf("bind", src.path, dest, attr, fmt.Errorf("mount_setattr: %w", err))
	}
	if err := r.attach(src.fd, dest, src.dir); err != nil {
		return errorf("bind", src.path, dest, attr, err)
	}
	r.bound = append(r.bound, rel(dest))
	return nil
}

// FS mounts a new instance of fstype ("tmpfs", "proc", "devpts", "mqueue") at dest with
// fsconfig(2) options opts (a value "" sets a flag) and attributes attr. With
// sealLater, PivotRoot makes the mount read-only, after whatever is mounted or created
// inside it.
func (r *Root) FS(fstype, dest string, opts map[string]string, attr uint64, sealLater bool) error {
	return r.fs(-1, fstype, dest, opts, attr, sealLater)
}

// fs is FS from the fsopen(2) context fsfd (consumed), or a new one when fsfd < 0.
func (r *Root) fs(fsfd int, fstype, dest string, opts map[string]string, attr uint64, sealLater bool) error {
	fd, err := newFS(fsfd, fstype, opts, attr)
	if err != nil {
		return errorf("mount", fstype, dest, attr, err)
	}
	if err := r.attach(fd, dest, true); err != nil {
		unix.Close(fd)
		return errorf("mount", fstype, dest, attr, err)
	}
	if fstype == "proc" && r.procSys < 0 {
		sys, err := unix.Openat(fd, "sys", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			return errorf("mount", fstype, dest, attr, fmt.Errorf("open sys: %w", err))
		}
		r.procSys = sys
	}
	if sealLater {
		r.roLater = append(r.roLater, sealed{fd, dest})
	} else {
		unix.Close(fd)
	}
	return nil
}

// SysfsSubtree attaches at dest, a path below /sys, only the same subtree of a new
// sysfs instance (dest "/sys/devices/system/cpu": the CPU topology), with the
// MOUNT_ATTR_* bits attr: the rest of sysfs (devices, firmware, the kernel's and the
// debug trees) is never attached. sysfs(5); the kernel lets a user namespace mount it
// only with a network namespace of its own (EPERM otherwise).
func (r *Root) SysfsSubtree(dest string, attr uint64) error {
	sub, ok := strings.CutPrefix(dest, "/sys/")
	if !ok || sub == "" {
		return errorf("mount", "sysfs", dest, attr, errors.New("a sysfs subtree goes below /sys, at its own path"))
	}
	whole, err := newFS(-1, "sysfs", nil, 0)
	if err != nil {
		return errorf("mount", "sysfs", dest, attr, err)
	}
	tree, err := cloneTree(whole, "sysfs", false, true)
	unix.Close(whole)
	if err != nil {
		return errorf("mount", "sysfs", dest, attr, err)
	}
	defer tree.Close()
	// the subtree's clone: open_tree(2) of a path inside the detached instance
	part, err := unix.OpenTree(tree.fd, sub, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return errorf("mount", "sysfs", dest, attr, fmt.Errorf("open_tree %s: %w", sub, err))
	}
	defer unix.Close(part)
	if err := setattrPrivate(part, attr, false); err != nil {
		return errorf("mount", "sysfs", dest, attr, fmt.Errorf("mount_setattr: %w", err))
	}
	if err := r.attach(part, dest, true); err != nil {
		return errorf("mount", "sysfs", dest, attr, err)
	}
	return nil
}

// Symlink creates dest -> target inside the root (parents created as needed). An
// existing symlink with the same target is accepted.
func (r *Root) Symlink(target, dest string) error {
	parent, err := r.mkdirAll(dirOf(dest))
	if err != nil {
		return &Error{Op: "symlink", Source: target, Target: dest, Err: err}
	}
	defer parent.close()
	base := baseOf(dest)
	if err := unix.Symlinkat(target, parent.fd, base); err != nil {
		if errors.Is(err, unix.EEXIST) {
			if cur, rerr := readlinkat(parent.fd, base); rerr == nil && cur == target {
				return nil
			}
		}
		return &Error{Op: "symlink", Source: target, Target: dest, Err: err}
	}
	return nil
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// ReadOnly re-binds the path p inside the root onto itself read-only, nosuid and nodev,
// submounts included. p is resolved without following any symlink: a protected path
// (.git) was found without one when the sandbox was planned, and one reached through a
// symlink now was swapped meanwhile, an error (ELOOP). A missing path is an error
// (ENOENT) unless optional (the /proc entries some kernels lack).
func (r *Root) ReadOnly(p string, optional bool) error {
	const attr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	fd, err := openat2(r.fd, rel(p), unix.O_PATH, strictResolve)
	if errors.Is(err, unix.ENOENT) && optional {
		return nil
	}
	if err != nil {
		return errorf("bind", p, p, attr, fmt.Errorf("%w (a protected path must exist as planned, without a symlink on the way)", err))
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return errorf("bind", p, p, attr, fmt.Errorf("open_tree: %w", err))
	}
	defer unix.Close(tree)
	if err := setattrPrivate(tree, attr, true); err != nil {
		return errorf("bind", p, p, attr, fmt.Errorf("mount_setattr: %w", err))
	}
	r.forgetBelow(rel(p))
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return errorf("bind", p, p, attr, fmt.Errorf("move_mount: %w", err))
	}
	return nil
}

// Mask hides the existing path p inside the root: a directory under an empty read-only
// tmpfs, anything else under a bind of null (which must be the character device 1:3).
// A missing path is not an error. Every directory mask of a Root is a mount of one
// tmpfs instance and every file mask a mount of one null clone: after the first of each
// kind, a mask is a clone of that mount (same attributes), not a new instance.
func (r *Root) Mask(p string, null *Null) error {
	fd, err := r.lookup(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &Error{Op: "mask", Target: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &Error{Op: "mask", Target: p, Err: err}
	}
	// p may lead anywhere in the root through symlinks: forget every cached directory.
	r.forgetBelow(".")
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	first := &r.maskFile
	if dir {
		first = &r.maskDir
	} else if null != r.maskNull && r.maskFile >= 0 {
		unix.Close(r.maskFile)
		r.maskFile = -1
	}
	var mfd int
	switch {
	case *first >= 0:
		mfd, err = unix.OpenTree(*first, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	case dir:
		mfd, err = newFS(-1, "tmpfs", map[string]string{"mode": "0000"}, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	default:
		mfd, err = unix.OpenTree(null.fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
		if err == nil {
			if err = setattrPrivate(mfd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC, false); err != nil {
				unix.Close(mfd)
			}
		}
	}
	if err != nil {
		return &Error{Op: "mask", Target: p, Err: err}
	}
	if err := unix.MoveMount(mfd, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		unix.Close(mfd)
		return &Error{Op: "mask", Target: p, Err: fmt.Errorf("move_mount: %w", err)}
	}
	if *first >= 0 {
		unix.Close(mfd)
	} else {
		*first = mfd
		if !dir {
			r.maskNull = null
		}
	}
	return nil
}

// Null is an O_PATH handle on the host's /dev/null, verified to be the character device
// 1:3, used as the source of file masks.
type Null struct{ fd int }

// OpenNull opens and verifies path (normally "/dev/null") as the character device 1:3.
func OpenNull(path string) (*Null, error) {
	fd, err := openat2(unix.AT_FDCWD, path, unix.O_PATH|unix.O_NOFOLLOW, unix.RESOLVE_NO_SYMLINKS)
	if err != nil {
		return nil, &Error{Op: "open", Source: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		unix.Close(fd)
		return nil, &Error{Op: "open", Source: path, Err: fmt.Errorf("not the null device 1:3")}
	}
	return &Null{fd: fd}, nil
}

// Close releases the handle.
func (n *Null) Close() error { return unix.Close(n.fd) }

// Fd is the handle's O_PATH descriptor (a raw plan's child inherits it: PlanSetup).
func (n *Null) Fd() int { return n.fd }

// PivotRoot makes the new root the process's root with pivot_root(2) (new_root and
// put_old both "."), detaches the old root (umount2(2) MNT_DETACH), makes the mounts
// marked sealLater read-only, then the root tmpfs itself. Submounts keep their flags.
func (r *Root) PivotRoot() error {
	r.forgetBelow(".")
	for _, fd := range []*int{&r.maskFile, &r.maskDir} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	if err := unix.Fchdir(r.fd); err != nil {
		return &Error{Op: "chdir", Target: "/", Err: err}
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return &Error{Op: "pivot_root", Target: "/", Err: err}
	}
	mark("pivot_root", "")
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return &Error{Op: "umount", Source: "old root", Err: err}
	}
	mark("umount old root", "")
	if err := unix.Chdir("/"); err != nil {
		return &Error{Op: "chdir", Target: "/", Err: err}
	}
	for _, m := range r.roLater {
		if err := setattr(m.fd, unix.MOUNT_ATTR_RDONLY, false); err != nil {
			return &Error{Op: "remount-ro", Target: m.dest, Err: err}
		}
		unix.Close(m.fd)
	}
	r.roLater = nil
	if r.procSys >= 0 {
		unix.Close(r.procSys)
		r.procSys = -1
	}
	if err := setattr(r.fd, unix.MOUNT_ATTR_RDONLY, false); err != nil {
		return &Error{Op: "remount-ro", Target: "/", Err: err}
	}
	mark("seal", "")
	return nil
}

type sealed struct {
	fd   int
	dest string
}

func dirOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

func baseOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
