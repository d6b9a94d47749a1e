// Package rundir is the one rule for where a user's runtime files of gosbx live (the
// sessions' sockets and locks, the cgroup owners' lock files): the caller's runtime
// directory when it has one, and, where it has none (a login without pam_systemd, su,
// cron, setpriv, a container's USER), a private per-uid directory under /tmp, as
// tmux(1) makes /tmp/tmux-UID.
package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Path is uid's runtime directory of gosbx (not made), the first of:
//   - $XDG_RUNTIME_DIR/gosbx, xdg being the caller's XDG_RUNTIME_DIR ("" for a rule
//     that must not depend on the environment: another user's, for a sweep), when it
//     is a directory of uid's of mode 0700, not a symbolic link (XDG Base Directory
//     Specification); set to anything else, it is an error for uid other than 0;
//   - /run/gosbx for uid 0;
//   - /run/user/UID/gosbx when /run/user/UID is a directory of uid's of mode 0700
//     (pam_systemd's, XDG_RUNTIME_DIR left unset: su, sudo -u, cron);
//   - /tmp/gosbx-UID, the directory itself made private by Make (tmux's rule).
func Path(uid int, xdg string) (string, error) {
	if xdg != "" {
		if filepath.IsAbs(xdg) && Private(xdg, uid) == nil {
			return filepath.Join(filepath.Clean(xdg), "gosbx"), nil
		}
		if uid != 0 {
			why := fmt.Errorf("not an absolute path")
			if filepath.IsAbs(xdg) {
				why = Private(xdg, uid)
			}
			return "", fmt.Errorf("XDG_RUNTIME_DIR=%s: %w; set it to a directory of yours of mode 0700, or unset it (gosbx then uses %s)", xdg, why, fallback(uid))
		}
	}
	if uid == 0 {
		return "/run/gosbx", nil
	}
	if u := "/run/user/" + strconv.Itoa(uid); Private(u, uid) == nil {
		return filepath.Join(u, "gosbx"), nil
	}
	return fallback(uid), nil
}

// Candidates are the runtime directories Path gives uid under this environment and
// under the usual others, where they differ (a login without pam_systemd, su, sudo -u,
// cron, ssh, setpriv, a container's USER): xdg's (the caller's XDG_RUNTIME_DIR, when
// Path would take it), /run/user/UID/gosbx (pam_systemd's, whether or not it exists
// now: a sandbox that can write /run/user/UID could make it), and /run/gosbx for uid 0,
// /tmp/gosbx-UID for others. A directory another environment's XDG_RUNTIME_DIR names
// is not known here. A bind of any of them, or of a tree holding one, is refused: a
// command that reaches one could hold a session's lock or plant a cleanup journal for
// a later launch of the same user under that environment (attack review 34 F6).
func Candidates(uid int, xdg string) []string {
	var out []string
	if xdg != "" && filepath.IsAbs(xdg) && Private(xdg, uid) == nil {
		out = append(out, filepath.Join(filepath.Clean(xdg), "gosbx"))
	}
	out = append(out, "/run/user/"+strconv.Itoa(uid)+"/gosbx")
	if uid == 0 {
		return append(out, "/run/gosbx")
	}
	return append(out, fallback(uid))
}

// fallback is the runtime directory of a uid with no other: /tmp/gosbx-UID.
func fallback(uid int) string { return "/tmp/gosbx-" + strconv.Itoa(uid) }

// Make is Path, the directory made (mode 0700) if missing, and checked as Private: one
// that exists with another owner or mode, or is a symbolic link, is refused (in /tmp,
// anyone could have made it first; the sticky bit keeps them from replacing it after).
func Make(uid int, xdg string) (string, error) {
	d, err := Path(uid, xdg)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("make the runtime directory %s: %w%s", d, err, MkdirFix(d))
	}
	if err := Private(d, uid); err != nil {
		return "", fmt.Errorf("runtime directory %s: %w%s", d, err, removeFix(d))
	}
	return d, nil
}

// Check is Private of a runtime directory Path gave that exists, with Make's fix in
// its error; nil when it does not exist.
func Check(d string, uid int) error {
	if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := Private(d, uid); err != nil {
		return fmt.Errorf("runtime directory %s: %w%s", d, err, removeFix(d))
	}
	return nil
}

// removeFix says what to do about a runtime directory that is not the caller's: one
// whose owner this user namespace does not map is left alone (/run/gosbx of the host's
// root, seen from uid 0 of a user namespace: attack review 38 F2); one in /tmp that
// another user made first may be removed; any other made the caller's, mode 0700.
func removeFix(d string) string {
	var st unix.Stat_t
	if unix.Lstat(d, &st) == nil && Unmapped(st.Uid) {
		return "; " + LeaveFix
	}
	if filepath.Dir(d) == "/tmp" {
		return " (someone else may have made it first: have it removed, or set XDG_RUNTIME_DIR to a directory of yours of mode 0700)"
	}
	return " (make it a directory of yours of mode 0700, not a symbolic link, or set XDG_RUNTIME_DIR to another directory of yours of mode 0700 outside the workspace)"
}

// MkdirFix says, after the colon of an error, what to do when the runtime directory
// (or the journal directory) d cannot be made: a system without a writable /tmp or
// /run (a container's image with none: attack review 38 F4) is given one (`--tmpfs
// /tmp`), or XDG_RUNTIME_DIR names a directory of the caller's.
func MkdirFix(d string) string {
	for p := filepath.Dir(d); p != "/" && p != "."; p = filepath.Dir(p) {
		if p == "/tmp" || p == "/run" {
			return fmt.Sprintf(" (%s is missing or not writable here: in a container, run it with `--tmpfs %s`; or set XDG_RUNTIME_DIR to a directory of yours of mode 0700 outside the workspace)", p, p)
		}
	}
	return " (set XDG_RUNTIME_DIR to a directory of yours of mode 0700 outside the workspace, or unset it)"
}

// Private checks that path is a directory (not a symbolic link) owned by uid with no
// access for group or others.
func Private(path string, uid int) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return fmt.Errorf("%s is a symbolic link", path)
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", path)
	case int(st.Uid) != uid:
		return fmt.Errorf("%s is owned by %s, not uid %d", path, Owner(st.Uid), uid)
	case st.Mode&0o077 != 0:
		return fmt.Errorf("%s has mode %#o, want 0700", path, st.Mode&0o777)
	}
	return nil
}
