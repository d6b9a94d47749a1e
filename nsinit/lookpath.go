package nsinit

import (
	"strings"

	"golang.org/x/sys/unix"
)

// execError is a command that could not be executed: not found (ENOENT) or found but
// not executable (EACCES, ENOEXEC, …).
type execError struct {
	path  string
	errno unix.Errno
}

func (e *execError) Error() string { return "execute " + e.path + ": " + e.errno.Error() }

func (e *execError) code() int { return (&ExecError{Path: e.path, Errno: e.errno}).ExitCode() }

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// lookPath resolves name against PATH from env inside the sandbox, as execvp(3) and a
// shell do: a name with a slash is used as is; otherwise the first executable regular
// file on PATH wins, and a file found but not executable gives EACCES (exit 126) rather
// than "not found" (127).
func lookPath(name string, env []string) (string, error) {
	return lookPathAt(unix.AT_FDCWD, name, env)
}

// lookPathAt is lookPath with relative PATH entries and names resolved from the
// directory dirfd, the command's working directory.
func lookPathAt(dirfd int, name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	found := ""
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		var st unix.Stat_t
		if unix.Fstatat(dirfd, p, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Faccessat(dirfd, p, unix.X_OK, unix.AT_EACCESS) == nil {
			return p, nil
		}
		if found == "" {
			found = p
		}
	}
	if found != "" {
		return "", &execError{path: found, errno: unix.EACCES}
	}
	return "", &execError{path: name, errno: unix.ENOENT}
}
