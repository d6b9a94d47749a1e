package policy

import (
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// Shadowed reports a command name (no slash) that the sandbox of spec would run as a
// different file than the host's lookup on the same PATH finds: the first match on the
// sandbox's PATH (spec.Process.Env), found as the lookup inside finds it
// (nsinit/lookpath.go lookPathAt: "" is ".", relative entries from spec.Process.Cwd,
// each entry resolved in kernel order, walkEntry) and executable by the caller as
// execvp(3) checks, is a file seen inside whose symlink chain, #! interpreter or entry
// leads out of the sandbox, or that the sandbox's user may not execute (execInside, or
// cannot be told from the host), so the lookup inside skips it and runs a later match,
// which is seen inside whole. It returns the path of the skipped match and of the one
// that would run, or "", "" when there is no such pair (the trial's finding F1: an
// activated venv whose python3 links into ~/.pyenv/versions/X ran /usr/bin/python3 with
// exit 0), and "", "" for a PATH whose relative entry lies in a working directory the
// host does not see as the sandbox does (no verdict rather than a false one). It reads
// the host only.
func Shadowed(spec *config.Config, name string) (skipped, runs string) {
	if name == "" || strings.Contains(name, "/") || spec.Process == nil {
		return "", ""
	}
	path := sandboxDefaultPath
	for _, kv := range spec.Process.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	r := newResolver()
	v := visibility(spec)
	whole := func(p string) bool { return seenWhole(r, v, p) }
	for _, d := range strings.Split(path, ":") {
		raw := d
		if raw == "" {
			raw = "." // as the lookup inside: an empty entry is the working directory
		}
		if !filepath.IsAbs(raw) {
			// relative to the command's working directory inside, which the host sees only
			// where that directory is shown at its own path (walkEntry's viewSame)
			if !filepath.IsAbs(spec.Process.Cwd) {
				return "", ""
			}
			raw = strings.TrimSuffix(spec.Process.Cwd, "/") + "/" + raw
		}
		dir, view, err := walkEntry(r, spec, v, raw)
		if view == viewUnseen && raw != d {
			return "", "" // what the working directory holds inside is not known here
		}
		if err != nil {
			continue // nothing there on the host; inside, the walk fails as well or dangles
		}
		p := strings.TrimSuffix(dir, "/") + "/" + name
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			continue // passed by on the host, and inside (the same file, or none)
		}
		if skipped == "" {
			if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS) != nil {
				continue // the host's lookup passes it by too
			}
			switch {
			case view == viewUnseen || view == viewSame && !v(p):
				return "", "" // not seen inside (the sandbox passes it by too)
			case view == viewOut:
				skipped = raw + "/" + name // the entry as written leads out
			case !whole(p):
				skipped = p
			case execInside(spec, resolvedPath(r, p), &st) == execYes:
				return "", "" // it runs
			default:
				skipped = p // the sandbox may not execute it (or the host cannot tell)
			}
			continue
		}
		if view == viewSame && v(p) && whole(p) && execInside(spec, resolvedPath(r, p), &st) != execNo {
			return skipped, p
		}
	}
	return "", ""
}

// resolvedPath is p with its symlinks resolved (p when that fails): the file whose mount
// decides how it may be executed.
func resolvedPath(r *resolver, p string) string {
	if c, err := r.evalSymlinks(p); err == nil {
		return c
	}
	return p
}

// sandboxDefaultPath is the lookup's PATH inside when the environment has none
// (nsinit/lookpath.go defaultPath).
const sandboxDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ShadowedHint is the message for a command Shadowed found, from the policy and host c
// was taken from: the host's view of the skipped file (NotFoundHint's, naming the
// flags that bind its target), or a generic fix when that view names no root.
func (c NotFoundContext) ShadowedHint(spec *config.Config, name, skipped, runs string) string {
	why := permissionWhy(spec, skipped)
	if why == "" {
		why = c.NotFoundHint(spec, name, skipped)
	}
	if why == "" {
		why = Shown(skipped) + ": where its PATH entry, symlink or #! interpreter leads is outside the sandbox: bind that tree with --ro DIR, or use --toolchain auto"
	}
	return Shown(name) + ": not run: on the sandbox's PATH it is " + why + "; the sandbox's lookup would skip it and run " + Shown(runs) + " instead"
}
