package policy

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// What a sandbox can write never chooses a bind source (docs/decisions.md, "Toolchains
// and what a sandbox wrote", from an attack review). A symlink chain that passes
// through a tree a sandbox writes (the workspace, a read-write bind's source, the cache
// root; toolchainHost.written) is tainted from there on: what it leads to is bound only
// when the sandbox shows it already or it is a version directory of a version manager
// whose shims are on the caller's PATH (versionDir). Files read in those trees (version
// files, pyvenv.cfg, a script's #! line) are opened without following any symlink, as
// regular files only, bounded, and their words are used (and printed) only when they
// are valid version names.

// chain is a symlink chain from linkChain and where it became the sandbox's choice.
type chain struct {
	hops []string
	// taint is the index of the first hop reached through a tree a sandbox writes (the
	// link, or a directory on its way, lies in one); len(hops) when none.
	taint int
}

// tainted reports whether hop i was chosen by what a sandbox wrote.
func (c chain) tainted(i int) bool { return i >= c.taint }

// last is the chain's end, the one hop that is not a symlink.
func (c chain) last() string { return c.hops[len(c.hops)-1] }

// followChain is linkChain with the taint of each hop: a hop is tainted once the walk,
// as written or resolved, has entered a tree of written.
func followChain(r *resolver, p string, written []string) (chain, error) {
	cur := filepath.Clean(p)
	c := chain{taint: -1}
	for range maxLinkHops {
		raw := cur
		dir, err := r.evalSymlinks(filepath.Dir(cur))
		if err != nil {
			return c.done(), err
		}
		cur = filepath.Join(dir, filepath.Base(cur))
		c.hops = append(c.hops, cur)
		if c.taint < 0 && (under(raw, written...) || under(cur, written...) || viaWritten(r, filepath.Dir(raw), written)) {
			c.taint = len(c.hops) - 1
		}
		fi, err := r.lstat(cur)
		if err != nil {
			return c.done(), err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return c.done(), nil
		}
		t, err := r.readlink(cur)
		if err != nil {
			return c.done(), err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(dir, t)
		}
		cur = filepath.Clean(t)
	}
	return c.done(), &os.PathError{Op: "follow symlinks", Path: p, Err: syscall.ELOOP}
}

func (c chain) done() chain {
	if c.taint < 0 {
		c.taint = len(c.hops)
	}
	return c
}

// viaWritten reports whether resolving the directory d passes through a symlink that
// lies in a tree of written (/ws/link/python with /ws/link -> /elsewhere).
func viaWritten(r *resolver, d string, written []string) bool {
	for ; d != "/" && d != "." && d != ""; d = filepath.Dir(d) {
		if !under(d, written...) {
			continue
		}
		if fi, err := r.lstat(d); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// versionDir is the version directory of a version manager on the caller's PATH that
// holds p (ROOT/versions/V for pyenv, rbenv, nodenv; ROOT/installs/TOOL/V for asdf and
// mise), "" when p lies in none: the only roots a tainted chain may lead auto to bind.
func (tr *tcResolver) versionDir(p string) string {
	for _, m := range tr.st.managers {
		for _, layout := range [][]string{{"versions", ""}, {"installs", "", ""}} {
			base := filepath.Join(m, layout[0])
			rest, ok := strings.CutPrefix(p, base+"/")
			if !ok {
				continue
			}
			parts := strings.Split(rest, "/")
			if len(parts) < len(layout)-1 {
				continue
			}
			d := filepath.Join(append([]string{base}, parts[:len(layout)-1]...)...)
			if fi, err := tr.r.lstat(d); err == nil && fi.IsDir() {
				return d
			}
		}
	}
	return ""
}

// maxVersionName bounds a version (or tool) name taken from a version file.
const maxVersionName = 64

// validVersion: s is a version or tool name as version managers write them (3.12.1,
// pypy3.10-7.3.12, nodejs): letters, digits and . _ + -, at most maxVersionName bytes,
// not . or .. (never a path out of versions/, never a file's other content).
func validVersion(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > maxVersionName {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// readToolFile reads the lines of a small version file or pyvenv.cfg (comments and blank
// lines dropped). A chain of links to it that passes through a tree a sandbox writes is
// not followed (a link the sandbox planted: to a credential, a device); the file itself
// is opened at its canonical path with openat2(2) RESOLVE_NO_SYMLINKS (a link swapped in
// since fails, ELOOP), O_NOFOLLOW, O_NOCTTY and O_NONBLOCK (a FIFO, a terminal), and
// read only when fstat(2) says it is a regular file of at most maxVersionFile bytes.
func (tr *tcResolver) readToolFile(p string) ([]string, bool) {
	c, err := followChain(tr.r, p, tr.h.written)
	if err != nil || c.taint < len(c.hops)-1 {
		return nil, false // none, or reached through a link in a written tree
	}
	b, ok := readNoLinks(c.last(), maxVersionFile)
	if !ok {
		return nil, false
	}
	var out []string
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(make([]byte, 0, 4096), maxVersionFile)
	for s.Scan() {
		l := strings.TrimSpace(s.Text())
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, true
}

// readNoLinks reads the regular file at the canonical path p (no symlink anywhere on
// it), at most limit bytes: false for anything else.
func readNoLinks(p string, limit int64) ([]byte, bool) {
	fd, size, ok := openNoLinks(p)
	if !ok {
		return nil, false
	}
	defer unix.Close(fd)
	if size > limit {
		return nil, false
	}
	return readFd(fd, size, limit)
}

// openNoLinks opens the regular file at the canonical path p for reading: openat2(2)
// RESOLVE_NO_SYMLINKS, O_NOFOLLOW, O_NOCTTY, O_NONBLOCK, then fstat(2) S_ISREG; its
// descriptor (the caller closes it) and size.
func openNoLinks(p string) (fd int, size int64, ok bool) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, how)
	for err == unix.EINTR {
		fd, err = unix.Openat2(unix.AT_FDCWD, p, how)
	}
	if err != nil {
		return -1, 0, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, false
	}
	return fd, st.Size, true
}

// readFd reads fd to its end or limit bytes (readUpTo); false on a read error.
func readFd(fd int, size, limit int64) ([]byte, bool) {
	b, err := readUpTo(fd, size, limit)
	if err != nil {
		return nil, false
	}
	return b, true
}
