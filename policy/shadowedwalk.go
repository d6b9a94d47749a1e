package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gosbx/gosbx/nsinit/config"
)

// entryView is what the sandbox sees of a PATH entry's walk (walkEntry).
type entryView int

const (
	viewSame   entryView = iota // every path the walk looks at is the same inside: it reaches the same directory
	viewOut                     // a symlink seen inside leads the walk where the sandbox shows nothing: it dangles inside
	viewUnseen                  // the walk looks at a path the sandbox does not show before any symlink it shows
)

// walkEntry resolves the absolute PATH entry raw in kernel order (path_resolution(7):
// each component looked up in the directory reached so far, a symlink's target put in
// front of the rest, ".." taken from the directory reached, never from the text), so
// "l/../bin2" with l a symlink is l's target's parent's bin2. It returns the directory
// reached on the host and what the sandbox of spec sees of the walk (v says a path is
// shown at its own path). Errors are lstat's and readlink's, ENOTDIR, or ELOOP after 255
// symlinks; the view is valid up to the failing step.
func walkEntry(r *resolver, spec *config.Config, v func(string) bool, raw string) (string, entryView, error) {
	dest, rest := "/", raw
	view, shownLink, links := viewSame, false, 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			return dest, view, nil
		}
		comp, tail, _ := strings.Cut(rest, "/")
		rest = tail
		switch comp {
		case ".":
			continue
		case "..":
			dest = filepath.Dir(dest)
			continue
		}
		next := dest + "/" + comp
		if dest == "/" {
			next = "/" + comp
		}
		fi, err := r.lstat(next)
		if err != nil {
			return "", view, err
		}
		shown := shownInside(spec, v, r, next, fi)
		if !shown && view == viewSame {
			view = viewUnseen
			if shownLink {
				view = viewOut
			}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if links++; links > 255 {
				return "", view, &os.PathError{Op: "resolve", Path: raw, Err: syscall.ELOOP}
			}
			t, err := r.readlink(next)
			if err != nil {
				return "", view, err
			}
			shownLink = shownLink || shown
			if filepath.IsAbs(t) {
				dest = "/"
			}
			rest = t + "/" + rest
			continue
		}
		if !fi.IsDir() && strings.Trim(rest, "/") != "" {
			return "", view, &os.PathError{Op: "resolve", Path: raw, Err: syscall.ENOTDIR}
		}
		dest = next
	}
}

// shownInside reports whether the sandbox of spec has at p what the host has: p is
// shown at its own path (v), or is a directory above a mount's destination (created as
// a mount point), or a symlink the sandbox creates with the host's target (merged-usr
// /bin).
func shownInside(spec *config.Config, v func(string) bool, r *resolver, p string, fi fs.FileInfo) bool {
	if v(p) {
		return true
	}
	if fi.IsDir() {
		for _, m := range spec.Mounts {
			if underAny(m.Destination, []string{p}) {
				return true
			}
		}
		return false
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, err := r.readlink(p)
		return err == nil && slices.Contains(spec.Symlinks, config.Symlink{Path: p, Target: t})
	}
	return false
}
