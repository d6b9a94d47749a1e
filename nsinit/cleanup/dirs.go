package cleanup

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rundir"
)

// Where the journals and their seals live. Both are directories of the caller's alone
// (owned by the effective uid, mode 0700), on a path whose every directory above is
// owned by root or the caller and writable by no one else (a world-writable one only
// with the sticky bit, as /tmp), as ssh(1) asks of ~/.ssh; and never inside a tree
// any sandbox of this user may write: every launch refuses to run when one is
// (CheckOutside), so no sandbox ever reads a seal or plants a journal.
//
// The journal directory is $XDG_RUNTIME_DIR/gosbx when the caller has one (a
// directory of its own, mode 0700); else /run/gosbx for root; else
// $XDG_STATE_HOME/gosbx, or ~/.local/state/gosbx (the home from passwd, when it is
// the caller's), where no other user can make it first; else /tmp/gosbx-UID. Root's
// seals are always in /run/gosbx/sealed, whatever the environment of the launch that
// reads them; another user's are in the journal directory's sealed/.

// JournalDir is the caller's journal directory (not created).
func JournalDir() string {
	uid := os.Geteuid()
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		var st unix.Stat_t
		if unix.Lstat(x, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid && st.Mode&0o077 == 0 {
			return filepath.Join(filepath.Clean(x), "gosbx")
		}
	}
	if uid == 0 {
		return "/run/gosbx"
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(filepath.Clean(x), "gosbx")
	}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && filepath.IsAbs(u.HomeDir) {
		var st unix.Stat_t
		if unix.Stat(u.HomeDir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid {
			return filepath.Join(filepath.Clean(u.HomeDir), ".local", "state", "gosbx")
		}
	}
	return "/tmp/gosbx-" + strconv.Itoa(uid)
}

// KeyDir is the directory that holds the caller's journal seals, in sealed/ (not
// created).
func KeyDir() string {
	if os.Geteuid() == 0 {
		return "/run/gosbx"
	}
	return JournalDir()
}

// dirCandidates are every journal and seal directory JournalDir and KeyDir give the
// caller under this environment and under the usual others (one without
// XDG_RUNTIME_DIR or XDG_STATE_HOME: cron, ssh, su, sudo -u, setpriv, a container's
// USER), with the runtime directories of its sessions (rundir.Candidates, which holds
// the journals when XDG_RUNTIME_DIR is set): $XDG_RUNTIME_DIR/gosbx,
// /run/user/UID/gosbx, /run/gosbx for root; for others also $XDG_STATE_HOME/gosbx,
// ~/.local/state/gosbx of the passwd home, /tmp/gosbx-UID.
func dirCandidates() []string {
	uid := os.Geteuid()
	out := append(rundir.Candidates(uid, os.Getenv("XDG_RUNTIME_DIR")), JournalDir(), KeyDir())
	if uid != 0 {
		if x := os.Getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			out = append(out, filepath.Join(filepath.Clean(x), "gosbx"))
		}
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && filepath.IsAbs(u.HomeDir) {
			out = append(out, filepath.Join(filepath.Clean(u.HomeDir), ".local", "state", "gosbx"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// canonical resolves every symlink in p's parent (p itself must not be one); a
// missing tail stays as named.
func canonical(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if c, err := filepath.EvalSymlinks(p); err == nil {
		return c
	}
	if c, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		return filepath.Join(c, filepath.Base(p))
	}
	return p
}

// within reports whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// CheckOutside refuses when a journal or seal (key) directory (canonical) lies in one
// of writable (the host trees a sandbox of this launch can write, resolved the same
// way), or contains one: a sandbox that could write either could forge a journal that
// a later launch carries out as the caller. Not only this launch's directories: every
// one a launch of the caller's under another environment would use (dirCandidates),
// as a journal planted there is carried out by that launch. Every launch calls it,
// whatever its mode.
func CheckOutside(writable []string) error {
	cws := make([]string, len(writable)) // resolved once, not once per directory
	for i, w := range writable {
		cws[i] = canonical(w)
	}
	current := []string{JournalDir(), KeyDir()}
	for _, d := range dirCandidates() {
		c := canonical(d)
		for _, cw := range cws {
			if !within(c, cw) && !within(cw, c) {
				continue
			}
			if slices.Contains(current, d) {
				return fmt.Errorf("the cleanup journal directory %s lies in %s, which the sandbox can write (a journal there could be forged); choose a workspace or --rw tree that does not hold it%s", c, cw, dirFix(d))
			}
			return fmt.Errorf("%s lies in %s, which the sandbox can write: it is where gosbx keeps your cleanup journals or sessions when run with another environment (without XDG_RUNTIME_DIR or XDG_STATE_HOME: cron, ssh, sudo -u), and a journal planted there would be carried out by such a launch; choose a workspace or --rw tree that does not hold it", c, cw)
		}
	}
	return nil
}

func dirFix(d string) string {
	switch {
	case os.Geteuid() == 0 && d == "/run/gosbx":
		return " (root's journal seals are always there)"
	case os.Geteuid() == 0 || os.Getenv("XDG_RUNTIME_DIR") != "":
		return ", or set XDG_RUNTIME_DIR to a directory of your own (mode 0700) outside it"
	}
	return ", or set XDG_RUNTIME_DIR or XDG_STATE_HOME to a directory of your own outside it"
}

// checkParents refuses a directory whose path (canonical) runs through a directory
// another user could change: one not owned by root or the caller, or writable by
// group or others without the sticky bit.
func checkParents(dir string) error {
	uid := uint32(os.Geteuid())
	for p := filepath.Dir(dir); ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return fmt.Errorf("check %s, above the cleanup journal directory %s: %w", p, dir, err)
		}
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return fmt.Errorf("%s, above the cleanup journal directory %s, is not a directory", p, dir)
		case st.Uid != 0 && st.Uid != uid && rundir.Unmapped(st.Uid):
			return fmt.Errorf("%s, above the cleanup journal directory %s, belongs to %s, which gosbx cannot tell from another user who could replace it; %s", p, dir, rundir.Owner(st.Uid), rundir.UnmappedFix)
		case st.Uid != 0 && st.Uid != uid:
			return fmt.Errorf("%s, above the cleanup journal directory %s, belongs to uid %d, who could replace it; set XDG_RUNTIME_DIR or XDG_STATE_HOME to a directory of your own", p, dir, st.Uid)
		case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
			return fmt.Errorf("%s, above the cleanup journal directory %s, is writable by others (mode %o); set XDG_RUNTIME_DIR or XDG_STATE_HOME to a directory of your own", p, dir, st.Mode&0o7777)
		}
		if p == "/" {
			return nil
		}
	}
}

// openJournalDir opens dir (canonical; created, mode 0700, with any missing parent
// when create is set) and checks that it is the caller's alone: not a symlink, owned
// by the effective uid, no access for group or others, on a path no one else can
// change (checkParents). It returns -1 and no error when dir does not exist and create
// is not set.
func openJournalDir(dir string, create bool) (int, error) {
	dir = canonical(dir)
	if create {
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			return -1, fmt.Errorf("create the cleanup journal directory %s: %w%s", dir, err, rundir.MkdirFix(dir))
		}
		if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("create the cleanup journal directory %s: %w%s", dir, err, rundir.MkdirFix(dir))
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && !create {
		return -1, nil
	}
	var st unix.Stat_t
	if err != nil {
		if unix.Lstat(dir, &st) == nil && int(st.Uid) != os.Geteuid() {
			return -1, notOwn(dir, st)
		}
		return -1, fmt.Errorf("open the cleanup journal directory %s: %w", dir, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat the cleanup journal directory %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return -1, notOwn(dir, st)
	}
	if err := checkParents(dir); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// notOwn is the error for a journal directory that is not the caller's alone, with
// the fix: another user may have made it first (in /tmp, anyone can); one whose owner
// this user namespace does not map (the host's root's /run/gosbx, seen from uid 0 of a
// user namespace) is left alone (attack review 38 F2).
func notOwn(dir string, st unix.Stat_t) error {
	fix := "remove it"
	switch {
	case rundir.Unmapped(st.Uid):
		fix = rundir.LeaveFix
	case int(st.Uid) != os.Geteuid():
		fix = fmt.Sprintf("uid %d made it, not you; have it removed, or set XDG_RUNTIME_DIR or XDG_STATE_HOME to a directory of your own", st.Uid)
	}
	return fmt.Errorf("the cleanup journal directory %s is not the caller's alone (owner %s, mode %o): %s", dir, rundir.Owner(st.Uid), st.Mode&0o7777, fix)
}
