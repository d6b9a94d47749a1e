package nsinit

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pidfsMagic is PIDFS_MAGIC (Linux 6.9, include/uapi/linux/magic.h): the file system of
// a pidfd since pidfs; not in x/sys/unix.
const pidfsMagic = 0x50494446

// HandedFileError means a descriptor given to a sandbox's command as itself (Stdin,
// Stdout or Stderr an *os.File; an `exec --session` client's descriptors) is one the
// command could reach the host from: a directory (openat(fd, ".."), /proc/self/fd/N
// walk the host's tree from it, past the sandbox's pivot_root: runc's CVE-2024-21626
// class), an O_PATH descriptor (reopened by /proc/self/fd/N with any access its owner
// has, or a directory), a namespace (nsfs: setns), a pidfd (signals, pidfd_getfd), or
// another anonymous-inode descriptor (an fsopen context that can be mounted, an
// eventfd, an epoll set: none is a stream). The launch is refused before anything is
// built (a *SetupError, step "stdio", ExitSetup); the command never runs.
//
// A regular file or block device opened against its stream's direction (stdin
// write-only, stdout or stderr read-only: `1< file`) is refused too (Redirect set): the
// command would reopen it through /proc/self/fd/N with the access the inode gives its
// uid, writable where the caller handed it for reading.
//
// Otherwise a regular file (a memfd too), a pipe, a socket, a character or block device
// are handed as they are: each is the data the caller redirected, never a path walk.
type HandedFileError struct {
	Stream string // "stdin", "stdout", "stderr"
	Fd     int    // the descriptor's number in the process that checked it
	Path   string // its /proc/self/fd link as that process read it ("" if unread)
	Kind   string // "a directory", "an O_PATH descriptor", "a namespace descriptor", …
	Err    error  // fcntl(2) or fstat(2) failed on it (Kind then says which)
	// Redirect: a regular file or block device opened against its stream's direction
	// (stdin write-only, stdout or stderr read-only); the fix is a > or >> redirection
	Redirect bool
}

func (e *HandedFileError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s (descriptor %d): %s: %v", e.Stream, e.Fd, e.Kind, e.Err)
	}
	if e.Redirect {
		return fmt.Sprintf("%s is %s (%s): the command could reopen it writable through /proc/self/fd/%d; redirect with > or >>",
			e.Stream, e.Kind, e.Path, streamFd(e.Stream))
	}
	return fmt.Sprintf("%s is %s (%s): the command could reach outside the sandbox through it; redirect a file or /dev/null",
		e.Stream, e.Kind, e.Path)
}

// link is descriptor fd's /proc/self/fd link, "" if it cannot be read.
func link(fd int) string {
	l, _ := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return l
}

// streamFd is the command's descriptor number of stream ("stdin" 0, "stdout" 1, "stderr" 2).
func streamFd(stream string) int {
	switch stream {
	case "stdout":
		return 1
	case "stderr":
		return 2
	}
	return 0
}

// againstDirection names what a descriptor with status flags fl lacks for stream:
// "a file opened for writing only" as stdin, "a file opened for reading only" as
// stdout or stderr; "" when its access covers the stream's direction.
func againstDirection(fl int, stream string) string {
	acc := fl & unix.O_ACCMODE
	switch {
	case stream == "stdin" && acc == unix.O_WRONLY:
		return "a file opened for writing only"
	case stream != "stdin" && acc == unix.O_RDONLY:
		return "a file opened for reading only"
	}
	return ""
}

func (e *HandedFileError) Unwrap() error { return e.Err }

// CheckHandedFd returns a *HandedFileError if descriptor fd, to be given to a sandbox's
// command as stream ("stdin", …), is a directory, an O_PATH descriptor, a namespace, a
// pidfd or another anonymous inode, a regular file or block device opened against the
// stream's direction, or cannot be looked at; nil otherwise. The
// descriptor is read, never changed. A supervisor checks the descriptors a client sent
// it with this before its command is dispatched.
func CheckHandedFd(fd int, stream string) error {
	refuse := func(kind string, err error) error {
		return &HandedFileError{Stream: stream, Fd: fd, Path: link(fd), Kind: kind, Err: err}
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return refuse("fcntl F_GETFL", err)
	}
	if fl&unix.O_PATH != 0 {
		// an O_PATH descriptor of a file is still one the command could reopen with any
		// access its uid has to it; open_tree(2) and fsmount(2) give these too
		return refuse("an O_PATH descriptor", nil)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return refuse("fstat", err)
	}
	// a regular file or block device opened against its stream's direction, given as
	// itself, is reopened through /proc/self/fd/N with the inode's access for the
	// sandbox's uid, not the descriptor's: `1< file` would be a file the command writes
	// (from an attack review, r39 F1). A read-only stdin file is relayed instead
	// (internal/filerelay), so stdin is refused only write-only.
	direction := func() error {
		if against := againstDirection(fl, stream); against != "" {
			return &HandedFileError{Stream: stream, Fd: fd, Path: link(fd), Kind: against, Redirect: true}
		}
		return nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return refuse("a directory", nil)
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR:
		return nil
	case unix.S_IFBLK:
		return direction()
	case unix.S_IFREG:
		// a namespace (nsfs) is a regular file by its mode, as a pidfd may be: told by
		// the file system, looked at for regular files alone (a terminal, a pipe: two
		// syscalls)
	default:
		// no file type: an anonymous inode (a pidfd, an fsopen context, an eventfd, …)
		return refuse("an anonymous-inode descriptor", nil)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return refuse("fstatfs", err)
	}
	switch fs.Type {
	case unix.NSFS_MAGIC: // a regular file by its mode: /proc/PID/ns/*
		return refuse("a namespace descriptor", nil)
	case pidfsMagic:
		return refuse("a pidfd", nil)
	case unix.ANON_INODE_FS_MAGIC:
		return refuse("an anonymous-inode descriptor", nil)
	}
	return direction()
}

// checkStdio runs CheckHandedFd on each of stdin, stdout and stderr that is an
// *os.File (passed as itself); a reader or writer copied through a pipe, or nil
// (/dev/null), hands nothing of the caller's.
func checkStdio(stdin io.Reader, stdout, stderr io.Writer) error {
	names := [3]string{"stdin", "stdout", "stderr"}
	for i, v := range []any{stdin, stdout, stderr} {
		if f, ok := v.(*os.File); ok && f != nil {
			if err := CheckHandedFd(int(f.Fd()), names[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
