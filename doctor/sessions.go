package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/session"
)

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5, asm-generic/socket.h), which the session
// supervisor uses to tell a peer in its own user namespace from a sandboxed one.
const soPeerPidfd = 77

// checkSessions says whether this caller can run named sessions (gosbx session start,
// exec --session): a runtime directory of its own (internal/session.DirPath, the rule
// of internal/rundir: made on first use, mode 0700), pidfd_open(2) (Linux 5.3), with which the supervisor watches
// its init and --die-with-owner's process, and SO_PEERPIDFD (Linux 6.5), with which
// it checks each peer of its control socket. A missing piece fails sessions only, not
// gosbx exec: a warning. It makes nothing: a missing directory is checked by its parent (canMake).
func checkSessions() Check {
	c := Check{Name: "sessions", Status: OK}
	var missing, fixes []string
	dir, err := session.DirPath()
	if err != nil {
		missing = append(missing, err.Error())
		fixes = append(fixes, fmt.Sprintf("unset XDG_RUNTIME_DIR (gosbx then uses /run/user/%[1]d/gosbx when that directory is yours, else /tmp/gosbx-%[1]d, made mode 0700), "+
			"or set it to a directory of yours: mkdir -m 0700 DIR && export XDG_RUNTIME_DIR=DIR; a /tmp/gosbx-%[1]d made by another user must be removed", os.Getuid()))
	} else if err := canMake(dir); err != nil {
		missing = append(missing, "no runtime directory for sessions: "+err.Error())
		fixes = append(fixes, "give the container a /tmp (podman or docker run --tmpfs /tmp), or set XDG_RUNTIME_DIR to a directory of yours of mode 0700 (mkdir -m 0700 DIR && export XDG_RUNTIME_DIR=DIR)")
	}
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		missing = append(missing, fmt.Sprintf("pidfd_open: %v (Linux 5.3)", err))
		fixes = append(fixes, "sessions need Linux 5.3 or later")
	} else {
		unix.Close(pidfd)
	}
	if err := peerPidfd(); err != nil {
		missing = append(missing, fmt.Sprintf("SO_PEERPIDFD: %v (Linux 6.5)", err))
		fixes = append(fixes, "sessions need Linux 6.5 or later")
	}
	if len(missing) > 0 {
		c.Status, c.Detail, c.Fix = Warn, "sessions cannot run here: "+strings.Join(missing, "; "), strings.Join(fixes, "; ")
		return c
	}
	c.Detail = "runtime directory " + dir + ", pidfd_open, SO_PEERPIDFD"
	return c
}

// canMake says whether the caller could make its runtime directory dir, which is not
// made here: nil when dir exists (DirPath checked it) or its parent is a directory the
// caller can write and search (a container image without /tmp has no parent for
// /tmp/gosbx-UID: trial finding T8, where doctor said "sessions ok" and session start
// failed).
func canMake(dir string) error {
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("cannot make %s: %w", dir, &os.PathError{Op: "access", Path: parent, Err: err})
	}
	return nil
}

// peerPidfd asks for SO_PEERPIDFD on one end of a fresh socket pair.
func peerPidfd() error {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	fd, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, soPeerPidfd)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}
