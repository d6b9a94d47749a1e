package policy

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// A read-write tree is refused by its name (writable) and by its identity: a bind mount
// makes / or a home reachable under any name (mount --bind / /host, as containers and
// agents are often given the host), and the name rule alone would take such an alias
// whole. refusedAlias compares the candidate, and every mount inside it, with each
// path the name rule refuses: the same file (st_dev, st_ino), or the same place in the
// same file system as mountinfo shows it (the mount's device and root field: a bind of
// a refused tree's subtree is that subtree). See proc_pid_mountinfo(5).

// mountEntry is one line of /proc/self/mountinfo: the device (major:minor), the root
// of the mount within its file system, and its mount point.
type mountEntry struct{ dev, root, point string }

// readMountinfo parses /proc/self/mountinfo (proc_pid_mountinfo(5)); octal escapes
// (\040 for a space) are decoded. Errors are the open's or a malformed line's.
func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			return nil, fmt.Errorf("/proc/self/mountinfo: malformed line %q", sc.Text())
		}
		out = append(out, mountEntry{dev: fs[2], root: unescapeMountinfo(fs[3]), point: unescapeMountinfo(fs[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	return out, nil
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

// refusedKind is how the name rule refuses a path R: the candidate being R or holding
// it (the root, the shared directories, a home), or also lying in it (a system tree, a
// credential path).
type refusedKind int

const (
	refusedHolding refusedKind = iota // refused when it is R or holds R
	refusedTree                       // also when it lies in R
)

type refusedPath struct {
	name string // as the name rule gives it
	kind refusedKind
	why  string // what R is, for the message
}

// refusedPaths are the paths the name rule of writable refuses, for the caller h.
func refusedPaths(h Host, creds []string) []refusedPath {
	out := []refusedPath{{"/", refusedHolding, "the root file system"}}
	for _, r := range refusedWorkspaces {
		if r != "/" {
			out = append(out, refusedPath{r, refusedHolding, "a system directory"})
		}
	}
	for _, t := range systemTrees {
		out = append(out, refusedPath{t, refusedTree, "a system directory, which stays read-only"})
	}
	for _, home := range h.Homes {
		out = append(out, refusedPath{home, refusedHolding, "the home directory"})
	}
	for _, c := range creds {
		out = append(out, refusedPath{c, refusedTree, "a credential path (filesystem.credentials)"})
	}
	return out
}

// refusedAlias refuses the canonical path canon as a read-write tree when, under
// another name, it is one of the paths writable refuses by name (or holds or lies in
// one, as that rule has it), or when a mount inside it is. It reads
// /proc/self/mountinfo and stats each refused path; an error reading mountinfo stops
// the launch (fail closed). Errors are *Error naming both paths.
func refusedAlias(field, canon string, h Host, creds []string) error {
	var cst syscall.Stat_t
	if err := syscall.Stat(canon, &cst); err != nil {
		return nil // the caller's own checks report a path that cannot be stat'ed
	}
	mounts, err := readMountinfo()
	if err != nil {
		return errorf(field, canon, err, "cannot read the mount table to check what the path is")
	}
	cplace, ok := placeOf(mounts, canon)
	if !ok {
		return errorf(field, canon, nil, "no mount holds it in /proc/self/mountinfo")
	}
	// the mounts inside the candidate: an rbind takes them along
	var inside []mountEntry
	for _, m := range mounts {
		if m.point != canon && under(m.point, canon) {
			inside = append(inside, m)
		}
	}
	r := newResolver()
	for _, rp := range refusedPaths(h, creds) {
		rc, err := r.evalSymlinks(rp.name)
		if err != nil {
			continue // not on this host: nothing to alias
		}
		var rst syscall.Stat_t
		if err := syscall.Stat(rc, &rst); err != nil {
			continue
		}
		// The name rule saw the names already; what is left is the same thing under
		// another one.
		if rst.Dev == cst.Dev && rst.Ino == cst.Ino && rc != canon {
			return aliasError(field, canon, rp, rc, fmt.Sprintf("it is %s under another name (the same device and inode)", rc))
		}
		rplace, ok := placeOf(mounts, rc)
		if !ok {
			continue
		}
		if rplace.dev == cplace.dev && nameRefuses(rp.kind, cplace.path, rplace.path) && !nameRefuses(rp.kind, canon, rc) {
			return aliasError(field, canon, rp, rc, fmt.Sprintf("it shows %s of the file system on device %s (a bind mount), where %s is %s", cplace.path, cplace.dev, rc, rplace.path))
		}
		for _, m := range inside {
			if m.dev != rplace.dev {
				continue
			}
			if nameRefuses(rp.kind, m.root, rplace.path) {
				return aliasError(field, canon, rp, rc, fmt.Sprintf("it holds the mount %s, which shows %s of the file system on device %s, where %s is %s", m.point, m.root, m.dev, rc, rplace.path))
			}
		}
	}
	return nil
}

// nameRefuses applies the name rule of kind to a candidate c and a refused path r
// (both file system paths, or both names).
func nameRefuses(kind refusedKind, c, r string) bool {
	if under(r, c) { // c is r or holds it
		return true
	}
	return kind == refusedTree && under(c, r)
}

func aliasError(field, canon string, rp refusedPath, rc, how string) error {
	name := rp.name
	if rc != rp.name {
		name = rp.name + " (" + rc + ")"
	}
	return errorf(field, canon, nil, "refusing %s read-write: %s: by identity it is, holds or lies in %s, %s; "+
		"an alias (a bind mount at another path) is refused as the name is; name a project directory", canon, how, name, rp.why)
}
