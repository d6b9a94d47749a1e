package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// A read-write tree is refused by its name (writableName) and by its identity: a bind
// mount makes / or a home reachable under any name (mount --bind / /host, as containers
// and agents are often given the host), and the name rule alone would take such an
// alias whole. refusedAlias applies the name rule to every other name mountinfo gives
// the candidate (a mount's device and root field: a bind of a refused tree's subtree is
// that subtree), and to what each mount inside it shows and holds; and compares its
// (st_dev, st_ino) with / and the homes. See proc_pid_mountinfo(5).

// mountEntry is one line of mountinfo: the device (major:minor), the root
// of the mount within its file system, and its mount point.
type mountEntry struct{ dev, root, point string }

// readMountinfo parses /proc/thread-self/mountinfo (proc_pid_mountinfo(5); the
// calling thread's mount namespace, the one its paths resolve in); octal escapes (\040
// for a space) are decoded. Read with plain read(2) calls into one buffer: the kernel
// makes the text in ~20 µs here, and os.ReadFile's poller and fstat doubled that.
// The last table read is kept with its open descriptor and given again while the
// thread is in the same mount namespace and poll(2) on the descriptor reports no mount
// or unmount since (POLLPRI, proc_pid_mountinfo(5)): one launch reads it for each
// writable tree's aliases and for the runtime directory's (checkRunDirHidden), and the
// mount table the checks judge stays the one the kernel has. The entries are shared:
// callers only read them. Errors are the open's, the read's, or a malformed line's.
func readMountinfo() ([]mountEntry, error) {
	mountinfoMemo.Lock()
	defer mountinfoMemo.Unlock()
	var ns syscall.Stat_t
	nsOK := syscall.Stat("/proc/thread-self/ns/mnt", &ns) == nil
	if m := &mountinfoMemo; m.fd > 0 {
		pfd := [1]pollFd{{fd: int32(m.fd), events: pollPri}}
		n, _, errno := syscall.Syscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&pfd[0])), 1, 0)
		if errno == 0 && n == 0 && nsOK && ns.Dev == m.ns.Dev && ns.Ino == m.ns.Ino {
			return m.mounts, nil
		}
		syscall.Close(m.fd)
		m.fd, m.mounts = 0, nil
	}
	const name = "/proc/thread-self/mountinfo"
	fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	out, err := readMountinfoFd(fd, name)
	if err != nil || !nsOK {
		syscall.Close(fd)
		return out, err
	}
	mountinfoMemo.fd, mountinfoMemo.ns, mountinfoMemo.mounts = fd, ns, out
	return out, nil
}

// mountinfoMemo is readMountinfo's last table: its descriptor (0: none), the mount
// namespace it was read in (st_dev, st_ino of /proc/thread-self/ns/mnt) and its entries.
var mountinfoMemo struct {
	sync.Mutex
	fd     int
	ns     syscall.Stat_t
	mounts []mountEntry
}

// pollFd is struct pollfd (poll(2)); pollPri is POLLPRI.
type pollFd struct {
	fd              int32
	events, revents int16
}

const pollPri = 0x2

// readMountinfoFd reads and parses the mountinfo open at fd (name for errors).
func readMountinfoFd(fd int, name string) ([]mountEntry, error) {
	buf := make([]byte, 0, 16<<10)
	for {
		if len(buf) == cap(buf) {
			if cap(buf) >= 16<<20 {
				return nil, fmt.Errorf("%s: larger than 16 MiB", name)
			}
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	// the entries' fields are substrings of the one copy of the text, and only the first
	// five fields of a line are cut out: no slice of lines or of fields made per line
	text := string(buf)
	out := make([]mountEntry, 0, strings.Count(text, "\n"))
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			continue
		}
		var fs [5]string
		if !mountinfoFields(line, &fs) {
			return nil, fmt.Errorf("%s: malformed line %q", name, line)
		}
		out = append(out, mountEntry{dev: fs[2], root: unescapeMountinfo(fs[3]), point: unescapeMountinfo(fs[4])})
	}
	return out, nil
}

// mountinfoFields puts line's first len(fs) fields (separated by runs of blanks, as
// strings.Fields splits them) into fs, and reports whether the line has that many.
func mountinfoFields(line string, fs *[5]string) bool {
	for i := range fs {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return false
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		fs[i], line = line[:end], line[end:]
	}
	return true
}

// unescapeMountinfo decodes the kernel's \ooo escapes (space, tab, newline, backslash).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// holding is the mount that holds the canonical path p: the deepest mount point at or
// above it, the last listed of those on one point (the one on top).
func holding(mounts []mountEntry, p string) *mountEntry {
	var best *mountEntry
	for i := range mounts {
		m := &mounts[i]
		if under(p, m.point) && (best == nil || len(m.point) >= len(best.point)) {
			best = m
		}
	}
	return best
}

// place is where a canonical path lies in its file system: the device of the mount
// holding it and the path from that file system's root.
type place struct{ dev, path string }

func placeOf(mounts []mountEntry, p string) (place, bool) {
	m := holding(mounts, p)
	if m == nil {
		return place{}, false
	}
	rel := strings.TrimPrefix(p, m.point)
	if m.point == "/" {
		rel = p
	}
	return place{m.dev, filepath.Join(m.root, rel)}, true
}

// refusedAlias refuses the canonical path canon as a read-write tree when the name
// rule (writableName) refuses another name of it, or what a mount inside it holds. The
// other names come from /proc/self/mountinfo: every mount of the same device whose root
// holds canon's place shows it at another path (mount --bind / /host shows / at /host,
// and /host/etc at /etc); a mount of the device whose root lies inside canon's place is
// held by it (a bind of /home/u/src at /work: /work's other name is /home/u/src, and a
// tree holding the place /home holds /home/u). Each mount inside canon (an rbind takes
// them along) is checked the same way for what it holds. Also the same directory
// (st_dev, st_ino) as / or a home. An error reading mountinfo stops the launch (fail
// closed). Errors are *Error naming both paths.
func refusedAlias(field, canon string, h Host, creds []string) error {
	var cst syscall.Stat_t
	if err := syscall.Stat(canon, &cst); err != nil {
		return nil // the caller's own checks report a path that cannot be stat'ed
	}
	for _, r := range append([]string{"/"}, h.Homes...) {
		var rst syscall.Stat_t
		if r != canon && syscall.Stat(r, &rst) == nil && rst.Dev == cst.Dev && rst.Ino == cst.Ino {
			return aliasError(field, canon, r, fmt.Sprintf("it is %s under another name (the same device and inode)", r), writableName(field, r, h, creds))
		}
	}
	mounts, err := readMountinfo()
	if err != nil {
		return errorf(field, canon, err, "cannot read the mount table to check what the path is")
	}
	cp, ok := placeOf(mounts, canon)
	if !ok {
		return errorf(field, canon, nil, "no mount holds it in /proc/self/mountinfo")
	}
	if err := refusedPlace(field, canon, cp, mounts, h, creds); err != nil {
		return err
	}
	for _, m := range mounts {
		if m.dev != cp.dev {
			continue
		}
		if alt, ok := nameAt(m, cp.path); ok && alt != canon {
			if err := writableName(field, alt, h, creds); err != nil {
				return aliasError(field, canon, alt, fmt.Sprintf("it is %s under another name (%s of the file system on device %s, mounted at both)", alt, cp.path, m.dev), err)
			}
		} else if !ok && under(m.root, cp.path) {
			if err := holdsRefused(field, m.point, h, creds); err != nil {
				return aliasError(field, canon, m.point, fmt.Sprintf("it holds what %s shows (%s of the file system on device %s)", m.point, m.root, m.dev), err)
			}
		}
	}
	for _, s := range mounts {
		if s.point == canon || !under(s.point, canon) {
			continue
		}
		// the mount s inside canon: the names of what it shows, and what it holds
		for _, m := range mounts {
			if m.dev != s.dev {
				continue
			}
			held := m.point
			if alt, ok := nameAt(m, s.root); ok {
				held = alt
			} else if !under(m.root, s.root) {
				continue
			}
			if held == s.point {
				continue // its own name: inside canon, which passed the name rule
			}
			if err := holdsRefused(field, held, h, creds); err != nil {
				return aliasError(field, canon, held, fmt.Sprintf("it holds the mount %s, which shows what %s does (device %s)", s.point, held, s.dev), err)
			}
		}
	}
	return nil
}

// nameAt is the path at which the mount m shows the place path of its file system,
// when m's root holds it.
func nameAt(m mountEntry, path string) (string, bool) {
	if !under(path, m.root) {
		return "", false
	}
	rel := strings.TrimPrefix(path, m.root)
	if m.root == "/" {
		rel = path
	}
	return filepath.Join(m.point, rel), true
}

// holdsRefused refuses a read-write tree that holds the path x: x is or holds a path
// the name rule refuses (the root, a shared directory, a home, a system tree, a
// credential path), or lies in a system tree or a credential path.
func holdsRefused(field, x string, h Host, creds []string) *Error {
	if x == "/" {
		return errorf(field, x, nil, "the root file system")
	}
	for _, r := range refusedWorkspaces {
		if under(r, x) {
			return errorf(field, x, nil, "is or holds the system directory %s", r)
		}
	}
	for _, t := range systemTrees {
		if under(t, x) || under(x, t) {
			return errorf(field, x, nil, "is, holds or lies in the system directory %s", t)
		}
	}
	for _, home := range h.Homes {
		if under(home, x) {
			return errorf(field, x, nil, "is or holds the home directory %s", home)
		}
	}
	for _, c := range creds {
		if under(c, x) || under(x, c) {
			return errorf(field, x, nil, "is, holds or lies in the credential path %s", c)
		}
	}
	return nil
}

// aliasError names canon, the other path, how they are one, and why the name rule
// refuses the other (why: writableName's or holdsRefused's *Error).
func aliasError(field, canon, other, how string, why *Error) error {
	return errorf(field, canon, nil, "refusing %s read-write: %s; by name %s: %s; an alias (a bind mount) of what is refused by name is refused as the name is; name a project directory",
		canon, how, other, why.Reason)
}
