package mounts

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// File puts a read-only file holding content at dest inside the root (an existing file
// there is covered; a missing one is created, which needs its directory writable at
// this point): a small tmpfs instance of its own, the file written in it, and only that
// file bound at dest (open_tree(2) OPEN_TREE_CLONE of the file, then move_mount(2)),
// read-only, nosuid, nodev, noexec. Nothing of the host is read or written; the tmpfs
// lives as long as the bind. Used for /etc/resolv.conf of a sandbox with egress.
func (r *Root) File(dest string, content []byte) error {
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
