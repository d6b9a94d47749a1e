package nsinit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// userCountsDir holds a user namespace's per-user limits (proc(5), /proc/sys/user/):
// what a process reads or writes there is the limit of its own user namespace, which
// its pid 1 may set when it holds CAP_SYS_RESOURCE there (kernel/ucount.c,
// set_permissions).
const userCountsDir = "/proc/sys/user/"

// withUserCounts returns spec with Config.UserCounts set, where it names none, to half
// of each of config.UserCountNames as the launcher's own user namespace has it (a
// count the kernel does not have, e.g. fanotify's without CONFIG_FANOTIFY, is left
// out). A new user namespace starts with no limit of its own (INT_MAX), so the objects
// made inside count only against the limits of the namespaces above it, the caller's:
// one sandbox could take every inotify instance of the user that runs it (attack
// review 34 F5). Half leaves the caller the other half for its own editor, file
// watchers and other sandboxes. Errors: a limit of the launcher's that cannot be read
// or parsed.
func withUserCounts(spec *config.Config) (*config.Config, error) {
	if spec.UserCounts != nil {
		return spec, nil
	}
	counts := make([]config.UserCount, 0, len(config.UserCountNames))
	for _, name := range config.UserCountNames {
		b, err := readSmall(userCountsDir + name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the launcher's %s: %w", userCountsDir+name, err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read the launcher's %s: %w", userCountsDir+name, err)
		}
		counts = append(counts, config.UserCount{Name: name, Max: max(v/2, 1)})
	}
	s := *spec
	s.UserCounts = counts
	return &s, nil
}

// readSmall reads the first 31 bytes of the file at path: open, one read, close
// (no stat, no growing buffer: the four files cost a launch 13-22 µs all told here).
func readSmall(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var buf [32]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// setUserCount writes v to the calling process's own user namespace's limit name
// (userCountsDir): the init, before anything runs in its namespace.
func setUserCount(name string, v int64) error {
	p := userCountsDir + name
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(v, 10))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %d to %s: %w", v, p, err)
	}
	return nil
}
