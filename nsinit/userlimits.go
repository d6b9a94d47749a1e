package nsinit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// userCountsDir holds a user namespace's per-user limits (proc(5), /proc/sys/user/),
// relative to a procfs's sys directory: what a process reads or writes there is the
// limit of its own user namespace, which its pid 1 may set when it holds
// CAP_SYS_RESOURCE there (kernel/ucount.c, set_permissions). The init writes them
// through its own procfs (setUserCounts), never the host's: each user namespace that
// looks these names up in a procfs leaves a dentry of its own in that procfs
// (proc_sys_compare tells them apart), unused ones outlive the namespace, and every
// later lookup of the names in the host's procfs, anyone's, walks a hash chain one
// longer per launch. A procfs of the sandbox's own frees its dentries with its
// superblock.
const userCountsDir = "user/"

// errNoProcForCounts: the user counts are written through the sandbox's procfs only.
var errNoProcForCounts = errors.New("the sandbox mounts no procfs, through which its user counts are set: " +
	"mount one (type proc) or set UserCounts to an empty list")

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
		b, err := readSmall("/proc/sys/" + userCountsDir + name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the launcher's /proc/sys/%s: %w", userCountsDir+name, err)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read the launcher's /proc/sys/%s: %w", userCountsDir+name, err)
		}
		counts = append(counts, config.UserCount{Name: name, Max: max(v/2, 1)})
	}
	s := *spec
	s.UserCounts = counts
	return &s, nil
}

// ownUserCounts returns spec with Config.UserCounts set, where it names none, to an
// empty list, for a sandbox whose user namespace is owned by a host id taken for it
// alone (a root caller's range): the kernel charges an object made in a user namespace
// to that namespace and then to its owner in the parent, up to the host's
// (kernel/ucount.c, inc_ucount walking ns->ucounts, which create_user_ns took for the
// creator's euid), so such a sandbox spends its own host id's counts, never the
// caller's, and has nothing of the caller's to leave half of. Saves the launcher's four
// reads and the init's writes.
func ownUserCounts(spec *config.Config) *config.Config {
	if spec.UserCounts != nil {
		return spec
	}
	s := *spec
	s.UserCounts = []config.UserCount{}
	return &s
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

// setUserCounts writes each limit of counts into the calling process's own user
// namespace (userCountsDir) through sys, the sandbox's procfs's sys directory
// (mounts.Root.ProcSys, below the read-only /proc/sys bound over it; -1:
// errNoProcForCounts). The init calls it before any command exists.
func setUserCounts(sys int, counts []config.UserCount) error {
	if len(counts) == 0 {
		return nil
	}
	if sys < 0 {
		return errNoProcForCounts
	}
	for _, u := range counts {
		if err := setUserCount(sys, u.Name, u.Max); err != nil {
			return err
		}
	}
	return nil
}

func setUserCount(sys int, name string, v int64) error {
	p := userCountsDir + name
	fd, err := unix.Openat(sys, p, unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("open /proc/sys/%s of the sandbox's procfs: %w", p, err)
	}
	s := strconv.FormatInt(v, 10)
	_, err = unix.Write(fd, []byte(s))
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s to /proc/sys/%s: %w", s, p, err)
	}
	return nil
}
