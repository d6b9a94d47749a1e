// Package session holds what the session supervisor and its clients share: the
// per-user runtime directory, a session's files there and the lock that says its
// supervisor is alive, and the framing of requests on the control socket. It is small
// on purpose: `gosbx exec --session` links nothing else (no policy compiler runs).
package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rundir"
)

// Dir returns the caller's runtime directory for sessions, made if missing (mode
// 0700): the rule of internal/rundir ($XDG_RUNTIME_DIR/gosbx when it is the caller's
// of mode 0700, /run/gosbx for uid 0, /run/user/UID/gosbx, else /tmp/gosbx-UID, as
// tmux's /tmp/tmux-UID). The directory itself must be the caller's, mode 0700, and not
// a symbolic link; anything else is refused (the control sockets of the caller's
// sessions are there, and their names tell what runs).
func Dir() (string, error) {
	d, err := rundir.Make(os.Getuid(), os.Getenv("XDG_RUNTIME_DIR"))
	if err != nil {
		return "", noDir(err)
	}
	return d, nil
}

// DirPath is Dir without making the directory: which directory the caller's sessions
// use, or why the caller has none. A directory already there is checked as Dir checks
// it (doctor uses this: it leaves nothing behind).
func DirPath() (string, error) {
	uid := os.Getuid()
	d, err := rundir.Path(uid, os.Getenv("XDG_RUNTIME_DIR"))
	if err == nil {
		err = rundir.Check(d, uid)
	}
	if err != nil {
		return "", noDir(err)
	}
	return d, nil
}

// noDir is the error of a caller with no runtime directory for sessions.
func noDir(err error) error {
	return fmt.Errorf("no runtime directory for sessions: %w", err)
}

// CheckName refuses a session name that is not 1-64 letters, digits, '.', '_' or '-'
// (starting with a letter or digit).
func CheckName(name string) error {
	ok := len(name) > 0 && len(name) <= 64 && name[0] != '.' && name[0] != '-' && name[0] != '_'
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}
	if !ok {
		return fmt.Errorf("session name %q: want 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// Files are a session's files in the runtime directory.
type Files struct {
	Sock string // the supervisor's control socket
	Lock string // held (flock(2)) by the supervisor for its whole life
	Jobs string // a directory of the detached commands' logs
	// Ended says why the last supervisor of this name ended (RecordEnd): written as it
	// ends, kept after its other files are gone, removed when the next one starts.
	Ended string
}

// FilesOf returns the files of session name in dir.
func FilesOf(dir, name string) Files {
	return Files{Sock: filepath.Join(dir, name+".sock"), Lock: filepath.Join(dir, name+".lock"),
		Jobs: filepath.Join(dir, name+".jobs"), Ended: filepath.Join(dir, name+".ended")}
}

// Lock takes the session's lock for its supervisor: nil and the open lock file when
// no live supervisor holds it (a crashed one's file is taken over), ErrExists when one
// does. The lock is the file's own: a file unlinked meanwhile by a supervisor ending is
// not taken.
func Lock(f Files) (*os.File, error) {
	for {
		lf, err := os.OpenFile(f.Lock, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			lf.Close()
			if err == unix.EWOULDBLOCK {
				return nil, ErrExists
			}
			return nil, &os.PathError{Op: "flock", Path: f.Lock, Err: err}
		}
		var a, b unix.Stat_t
		if unix.Fstat(int(lf.Fd()), &a) == nil && unix.Stat(f.Lock, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			return lf, nil
		}
		lf.Close() // unlinked by the supervisor that held it: try the new one
	}
}

// ErrExists is Lock's answer when a live supervisor holds the session's lock.
var ErrExists = errors.New("a session of that name is running")

// RecordEnd writes why the session ended to f.Ended, one line of text, for the next
// client that finds no session of that name (EndedWhy). Its error is the write's.
func RecordEnd(f Files, why string) error {
	tmp := f.Ended + ".new"
	// a new file only: whatever is at tmp (a FIFO would block the write, and the
	// supervisor's end with it) is removed first, or the write fails
	os.Remove(tmp)
	w, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = w.WriteString(why + "\n")
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, f.Ended) // whole or absent for a reader
}

// maxEnded bounds what EndedWhy reads: the record is one short line.
const maxEnded = 512

// EndedWhy is the line RecordEnd wrote for the session's last supervisor, "" if none
// (or it cannot be read, or is not a regular file of that size).
func EndedWhy(f Files) string {
	fd, err := os.OpenFile(f.Ended, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer fd.Close()
	if st, err := fd.Stat(); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	b := make([]byte, maxEnded)
	n, _ := fd.Read(b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	return line
}

// Remove removes the session's files; the caller holds its lock and the socket at
// f.Sock is not a live supervisor's (a sweep of a dead one's files).
func Remove(f Files) {
	os.Remove(f.Sock)
	os.RemoveAll(f.Jobs)
	os.Remove(f.Lock)
}

// FileID is a file's identity, its device and inode numbers (stat(2) st_dev, st_ino);
// the zero FileID is no file.
type FileID struct{ Dev, Ino uint64 }

// IDOf is the identity of the file at path itself (lstat(2): a symlink is not
// followed); the zero FileID if it cannot be read.
func IDOf(path string) FileID {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return FileID{}
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}
}

// idOfFile is the identity of the open file f (fstat(2)); the zero FileID if it
// cannot be read.
func idOfFile(f *os.File) FileID {
	var st unix.Stat_t
	if f == nil || unix.Fstat(int(f.Fd()), &st) != nil {
		return FileID{}
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}
}

// Holds reports whether f.Lock is still the file lock (Lock's) is open on: false once
// it was removed or replaced by another supervisor's (whose session the name now is).
func Holds(f Files, lock *os.File) bool {
	id := idOfFile(lock)
	return id != FileID{} && IDOf(f.Lock) == id
}

// RemoveOwn removes the session's files that are still its supervisor's own, as it
// ends: the lock file and the jobs directory only while f.Lock is the file lock is
// open on, the socket only while f.Sock is sock (IDOf the path after bind(2)). Files
// at those paths that are another supervisor's are left to it: removal by name alone
// removed a live session's socket and lock (trial finding F12). lock stays open: the
// caller closes it after, so that no other supervisor takes the name in between.
func RemoveOwn(f Files, lock *os.File, sock FileID) {
	if sock != (FileID{}) && IDOf(f.Sock) == sock {
		os.Remove(f.Sock)
	}
	if Holds(f, lock) {
		os.RemoveAll(f.Jobs)
		os.Remove(f.Lock)
	}
}
