package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// statusFdFix is what the refusals of a --status-fd the command could write suggest.
const statusFdFix = "open it on a file outside the workspace and the --rw trees, or on a pipe to a reader of yours " +
	`(e.g. --status-fd 3 3>~/gosbx-status.json)`

// statusFdExample is how a caller opens status descriptor n, in a form the later
// checks accept: a file in the home directory, which is never the workspace nor in
// a --rw tree (the policy refuses both: trial finding T14, where "5>status.json" in
// the workspace was refused by the next check).
func statusFdExample(n int) string {
	return fmt.Sprintf("on a file outside the workspace and the --rw trees, or on a pipe to a reader of yours (e.g. --status-fd %[1]d %[1]d>~/gosbx-status.json)", n)
}

// checkStatusShared refuses a status descriptor the command would hold too: one of its
// own stdio (0, 1, 2), or the same file (a pipe, a terminal, a file: same device and
// inode by fstat(2); for a character device, the same device number, as another node
// of the same terminal) as one of them, since the command could write status lines of
// its own making there. Any terminal is refused, whatever its name (/dev/tty is device
// 5:0, the terminal behind it 136:N): it answers TCGETS (isatty(3)), or is a tty,
// console or ptmx node (major 4 or 5); a command on a terminal reaches it through its
// own stdio or /dev/tty, and a terminal is no status channel. /dev/null is accepted
// (nothing reads it).
func checkStatusShared(n int) error {
	if n <= 2 {
		return fmt.Errorf("--status-fd %d is the command's own stdio: it could write status lines of its own there; %s", n, statusFdFix)
	}
	var st unix.Stat_t
	if err := unix.Fstat(n, &st); err != nil {
		return fmt.Errorf("--status-fd %d: fstat: %w", n, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == unix.Mkdev(1, 3) {
		return nil
	}
	_, terr := unix.IoctlGetTermios(n, unix.TCGETS)
	if maj := unix.Major(st.Rdev); terr == nil || st.Mode&unix.S_IFMT == unix.S_IFCHR && (maj == 4 || maj == 5) {
		return fmt.Errorf("--status-fd %d is open on a terminal (%s): the command can write to a terminal it runs on, by its stdio or /dev/tty; %s",
			n, fdLink(n), statusFdFix)
	}
	for fd := 0; fd <= 2; fd++ {
		var s unix.Stat_t
		if unix.Fstat(fd, &s) != nil {
			continue
		}
		sameDevice := s.Mode&unix.S_IFMT == unix.S_IFCHR && st.Mode&unix.S_IFMT == unix.S_IFCHR && s.Rdev == st.Rdev
		if s.Dev == st.Dev && s.Ino == st.Ino || sameDevice {
			return fmt.Errorf("--status-fd %d is open on the same file as the command's fd %d (%s): it could write status lines of its own there; %s",
				n, fd, fdLink(n), statusFdFix)
		}
	}
	return nil
}

// checkStatusOutside refuses a status descriptor open on a file the command can reach
// for writing: one inside a read-write bind of spec (the workspace, --rw trees), by
// the path the kernel names it by (/proc/self/fd/N), or, on the file system of such a
// tree, a file with more than one hard link (another name may lie inside). A status
// file the command could append to would end with a line of its making.
func checkStatusOutside(n int, spec *config.Config) error { return checkStatusOutsideAs(n, n, spec) }

// checkStatusOutsideAs is checkStatusOutside of descriptor fd, which the caller names
// n (a session's supervisor checks the client's descriptor, received as fd).
func checkStatusOutsideAs(fd, n int, spec *config.Config) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("--status-fd %d: fstat: %w", n, err)
	}
	link := fdLink(fd)
	path := strings.TrimSuffix(link, " (deleted)")
	for _, m := range spec.Mounts {
		if m.Type != "bind" || slices.Contains(m.Options, "ro") {
			continue
		}
		tree := filepath.Clean(m.Source)
		if filepath.IsAbs(path) && (path == tree || strings.HasPrefix(path, tree+"/")) {
			return fmt.Errorf("--status-fd %d is open on %s, inside %s, which the command can write: it could add status lines of its own; %s",
				n, link, tree, statusFdFix)
		}
		var ts unix.Stat_t
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 && unix.Stat(tree, &ts) == nil && ts.Dev == st.Dev {
			return fmt.Errorf("--status-fd %d is open on %s, which has %d hard links on the file system of %s, which the command can write: "+
				"one may lie inside it; %s", n, link, st.Nlink, tree, statusFdFix)
		}
	}
	return nil
}

// fdLink is what /proc/self/fd/N names: a path, "pipe:[ino]", "socket:[ino]".
func fdLink(n int) string {
	l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(n))
	if err != nil {
		return "fd " + strconv.Itoa(n)
	}
	return l
}
