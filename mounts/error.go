// Package mounts builds a sandbox's new root file system: a fresh tmpfs root, positive
// bind mounts, tmpfs, procfs, devpts and a minimal /dev, read-only re-binds and masks,
// then pivot_root(2) and a read-only root.
//
// Every mount target is opened inside the new root with openat2(2) (RESOLVE_IN_ROOT or
// RESOLVE_NO_SYMLINKS) and mounted through that descriptor with the new mount API
// (open_tree(2), fsopen(2), fsmount(2), move_mount(2), mount_setattr(2)), so a symlink
// planted in a bound directory cannot redirect a mount onto the host, even racing. (A
// directory mount point that mkdirat(2) has just created on the root's own tmpfs is named
// instead by that one component, relative to its parent's descriptor; move_mount does not
// follow a symlink there.) Every cloned tree is made private before it is attached.
// The functions here must run inside the new mount namespace, with CAP_SYS_ADMIN in
// its owning user namespace.
package mounts

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/shown"
)

// Error is a failed mount-layer operation. It renders the operation, source, target,
// flags and cause, e.g.
//
//	bind /usr on /usr (ro,nosuid,nodev): operation not permitted
//
// and unwraps to the errno. Paths and the cause are shown with shown.Text (a path the
// sandbox chose prints no line or terminal escape of its own).
type Error struct {
	Op     string // "bind", "mount", "mask", "symlink", "pivot_root", "remount-ro", …
	Source string // host path, or the file system type of a new mount; may be empty
	Target string // path inside the new root
	Flags  string // human-readable attributes; may be empty
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Source != "" {
		b.WriteString(" " + shown.Text(e.Source))
		if e.Target != "" {
			b.WriteString(" on")
		}
	}
	if e.Target != "" {
		b.WriteString(" " + shown.Text(e.Target))
	}
	if e.Flags != "" {
		b.WriteString(" (" + e.Flags + ")")
	}
	b.WriteString(": ")
	b.WriteString(shown.Text(e.Err.Error()))
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// attrString renders MOUNT_ATTR_* bits the way mount(8) prints options.
func attrString(attr uint64) string {
	var parts []string
	if attr&unix.MOUNT_ATTR_RDONLY != 0 {
		parts = append(parts, "ro")
	} else {
		parts = append(parts, "rw")
	}
	for _, f := range []struct {
		bit  uint64
		name string
	}{{unix.MOUNT_ATTR_NOSUID, "nosuid"}, {unix.MOUNT_ATTR_NODEV, "nodev"}, {unix.MOUNT_ATTR_NOEXEC, "noexec"}} {
		if attr&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	return strings.Join(parts, ",")
}

func errorf(op, src, dst string, attr uint64, err error) error {
	flags := ""
	if attr != noAttr {
		flags = attrString(attr)
	}
	return &Error{Op: op, Source: src, Target: dst, Flags: flags, Err: err}
}

// noAttr marks an Error without mount attributes.
const noAttr = ^uint64(0)
