package cleanup

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MakeDirs creates each of dirs (config.Config.MakeDirs: bind destinations the policy
// keeps read-only, so that the command cannot create them itself; the policy only
// names them, the launch creates them right before the sandbox) that is missing, and its
// missing parents (mode 0755, owned like its parent), in order. The parent is opened
// without following a symlink (openat2 RESOLVE_NO_SYMLINKS), the directory made and
// chowned relative to it: a component an earlier sandbox swapped for a symlink is
// refused, nothing outside is created. Errors name the directory.
func MakeDirs(dirs []string) error {
	for _, d := range dirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || d == "/" {
			return fmt.Errorf("directory to create %q: not an absolute, clean path below /", d)
		}
		if err := makeDir(d); err != nil {
			return fmt.Errorf("create the directory %s (the policy keeps it read-only, so the command cannot make it): %w", d, err)
		}
	}
	return nil
}

func makeDir(d string) error {
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	open := func() (int, error) {
		fd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(d), how)
		if errors.Is(err, unix.ENOSYS) {
			fd, err = openComponents(filepath.Dir(d))
		}
		return fd, err
	}
	parent, err := open()
	if errors.Is(err, unix.ENOENT) && filepath.Dir(d) != "/" {
		// a missing parent too (a submodule path vendor/lib without vendor/): made
		// the same way first
		if err := makeDir(filepath.Dir(d)); err != nil {
			return err
		}
		parent, err = open()
	}
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	name := filepath.Base(d)
	switch err := unix.Mkdirat(parent, name, 0o755); {
	case errors.Is(err, unix.EEXIST):
		var st unix.Stat_t
		if err := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return errors.New("it exists and is not a directory")
		}
		return nil
	case err != nil:
		return err
	}
	var st unix.Stat_t
	if err := unix.Fstat(parent, &st); err != nil {
		return err
	}
	// Owned like its parent (a root caller's workspace belongs to its user); a caller
	// who may not chown keeps it as its own, which is the parent's owner anyway.
	unix.Fchownat(parent, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
	return nil
}
