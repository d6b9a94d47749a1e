package mounts

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// File puts a read-only file holding content at dest inside the root (an existing file
// there is covered; a missing one is created, which needs its directory writable at
// this point): a small tmpfs instance of its own, the file written in it, and only that
// file bound at dest (open_tree(2) OPEN_TREE_CLONE of the file, then move_mount(2)),
// read-only, nosuid, nodev, noexec. When dest is a symlink inside the root (a systemd
// host's /etc/resolv.conf -> ../run/systemd/resolve/stub-resolv.conf), its target, as
// resolved inside the root, is covered instead. Nothing of the host is read or written;
// the tmpfs lives as long as the bind. Used for /etc/resolv.conf of a sandbox with
// egress.
func (r *Root) File(dest string, content []byte) error {
	dest = r.followLink(dest)
	const attr = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
	mfd, err := newFS(-1, "tmpfs", map[string]string{"mode": "0755", "size": "64k", "nr_inodes": "4"}, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return errorf("mount", "tmpfs", dest, attr, err)
	}
	defer unix.Close(mfd)
	fd, err := unix.Openat(mfd, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return errorf("mount", "tmpfs", dest, attr, fmt.Errorf("create the file: %w", err))
	}
	_, err = unix.Write(fd, content)
	unix.Close(fd)
	if err != nil {
		return errorf("mount", "tmpfs", dest, attr, fmt.Errorf("write the file: %w", err))
	}
	tree, err := unix.OpenTree(mfd, "f", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return errorf("bind", "tmpfs", dest, attr, fmt.Errorf("open_tree: %w", err))
	}
	defer unix.Close(tree)
	if err := setattrPrivate(tree, attr, false); err != nil {
		return errorf("bind", "tmpfs", dest, attr, fmt.Errorf("mount_setattr: %w", err))
	}
	if err := r.attach(tree, dest, false); err != nil {
		return errorf("bind", "tmpfs", dest, attr, err)
	}
	return nil
}

// followLink returns where p leads when it is a symlink inside the root (up to 8
// links, relative targets taken from the link's directory, ".." never above the root),
// else p.
func (r *Root) followLink(p string) string {
	for i := 0; i < 8; i++ {
		dir := dirOf(p)
		fd, err := r.lookup(dir)
		if err != nil {
			return p
		}
		target, err := readlinkat(fd, baseOf(p))
		unix.Close(fd)
		if err != nil {
			return p
		}
		if !path.IsAbs(target) {
			target = dir + "/" + target
		}
		p = path.Clean("/" + target)
	}
	return p
}

// WriteFile creates dest inside the root, a new regular file holding content with
// permission bits mode (parents created as needed, mode 0755: fileParents): O_CREAT|O_EXCL and O_NOFOLLOW, so
// that it never writes through an existing name or a symlink. The caller checked
// that dest lies in a tmpfs of the sandbox's own (config.File): nothing of the host.
func (r *Root) WriteFile(dest string, content []byte, mode uint32) error {
	parent, err := r.fileParents(dirOf(dest))
	if err != nil {
		return &Error{Op: "write", Target: dest, Err: err}
	}
	defer parent.close()
	fd, err := unix.Openat(parent.fd, baseOf(dest), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
	if err != nil {
		return &Error{Op: "write", Target: dest, Err: fmt.Errorf("create the file: %w", err)}
	}
	defer unix.Close(fd)
	for len(content) > 0 {
		n, err := unix.Write(fd, content)
		if err != nil {
			return &Error{Op: "write", Target: dest, Err: fmt.Errorf("write the file: %w", err)}
		}
		content = content[n:]
	}
	// the umask must not narrow it: the command reads (and may edit) it
	if err := unix.Fchmod(fd, mode); err != nil {
		return &Error{Op: "write", Target: dest, Err: fmt.Errorf("fchmod: %w", err)}
	}
	return nil
}
