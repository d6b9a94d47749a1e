package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// userLimits are the per-user limits of the sandbox's user namespace that the init
// lowers: each host sysctl (the host's per-user bound, init_user_ns's) and the
// sandbox's own (its user namespace's, /proc/sys/user: user_namespaces(7)). A new user
// namespace starts with no bound of its own (INT_MAX), so the sandbox's processes,
// which on the host are the caller's uid, could take every inotify instance the host
// allows the caller (fs.inotify.max_user_instances, 128 by default: counted per host
// uid through the namespaces' ucounts): the caller's editor, `tail -f`, file watchers
// and the supervisors' own watches failed with EMFILE while a sandbox held them (from
// an attack review, r34 F5). The sandbox's bound is half the host's: the caller keeps
// the other half. Written by the init while it still holds CAP_SYS_RESOURCE in its user
// namespace (the sysctl set is its own: proc_sys's set_permissions); nothing inside can
// raise it back (no capability, /proc/sys read-only).
var userLimits = [...]struct{ host, ns string }{
	{"/proc/sys/fs/inotify/max_user_instances", "/proc/sys/user/max_inotify_instances"},
	{"/proc/sys/fs/inotify/max_user_watches", "/proc/sys/user/max_inotify_watches"},
}

// sandboxUserLimits returns the sysctl paths of the sandbox's user namespace to write
// and their values (decimal text, half the host's, at least 1), for each limit the
// host has (a kernel without inotify has neither file).
func sandboxUserLimits() (paths, values []string) {
	for _, l := range userLimits {
		b, err := os.ReadFile(l.host)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		paths = append(paths, l.ns)
		values = append(values, strconv.FormatInt(max(n/2, 1), 10))
	}
	return paths, values
}

// setUserLimits writes the sandbox's user namespace's limits (sandboxUserLimits).
// Errors name the file.
func setUserLimits() error {
	paths, values := sandboxUserLimits()
	for i, p := range paths {
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, []byte(values[i]))
			unix.Close(fd)
		}
		if err != nil {
			return fmt.Errorf("write %s to %s: %w", values[i], p, err)
		}
	}
	return nil
}
