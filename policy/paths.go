package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// canonical resolves p (relative to cwd) to an absolute path without symlinks or "..".
func canonical(r *resolver, field, p, cwd string) (abs, canon string, err error) {
	if p == "" {
		return "", "", errorf(field, p, nil, "empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	abs = filepath.Clean(p)
	canon, err = r.evalSymlinks(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", errorf(field, abs, nil, "does not exist")
		}
		return "", "", errorf(field, abs, err, "cannot resolve")
	}
	return abs, canon, nil
}

// workspace validates the read-write workspace and returns its canonical path and the
// absolute path as given (they differ when it was named through a symlink).
func workspace(r *resolver, p string, h Host, creds []string) (canon, given string, err error) {
	p0 := p
	if p == "" {
		p = h.Cwd
	}
	given, canon, err = canonical(r, "workspace", p, h.Cwd)
	if err != nil {
		return "", "", err
	}
	st, err := r.stat(canon) // its lstat made by canonical: canon is no symlink
	if err != nil {
		return "", "", errorf("workspace", given, err, "cannot stat")
	}
	if !st.IsDir() {
		return "", "", errorf("workspace", given, nil, "not a directory")
	}
	if err := writable("workspace", canon, h, creds); err != nil {
		var pe *Error
		if p0 == "" && errors.As(err, &pe) {
			pe.Reason += " (" + cwdWorkspace + ": cd into a project directory, or pass --workspace DIR)"
		}
		return "", "", err
	}
	if err := viaSymlink("workspace", p0, given, canon, st, h); err != nil {
		return "", "", err
	}
	return canon, given, nil
}

// viaSymlink refuses, for a root caller, a read-write tree owned by another user unless
// the caller named it by its own absolute path (raw: as given, "" for the default, the
// current directory). A root caller's read-write binds are idmapped to their owner, so
// the command acts there as that user; a symlink planted by an earlier sandbox's command
// must not choose whom, and neither may a current directory a program entered through
// one (getcwd(3) gives the physical path, so a symlink on the way cannot be seen).
// st is canon's os.Stat.
func viaSymlink(field, raw, given, canon string, st os.FileInfo, h Host) error {
	if !h.Root {
		return nil
	}
	o, ok := statOwner(st)
	if !ok || o[0] == 0 {
		return nil
	}
	switch {
	case given != canon:
		return errorf(field, given, nil, "leads through a symlink to %s, owned by uid %d: a root caller's command would act there as that user; "+
			"name %s itself if that is meant", canon, o[0], canon)
	case raw == "" || !filepath.IsAbs(raw):
		return errorf(field, given, nil, "is owned by uid %d: a root caller's command would act there as that user, "+
			"so name it by its absolute path (--%s %s), not as the current directory", o[0], field, canon)
	}
	return nil
}

// writable refuses a read-write bind (the workspace or --rw) of the root, a shared
// system directory, anything beneath a system tree, a home directory or one of its
// ancestors, repository metadata (a path with a .git component), or a path that is,
// holds or lies inside one of the credential paths creds; by name, and by identity
// (refusedAlias: a bind mount of one of those under another name, or holding one).
func writable(field, canon string, h Host, creds []string) error {
	if err := writableName(field, canon, h, creds); err != nil {
		return err
	}
	// the same refusals by identity: a bind mount is another name for what it shows
	return refusedAlias(field, canon, h, creds)
}

// writableName is writable's rule by name alone.
func writableName(field, canon string, h Host, creds []string) *Error {
	if canon == "/" {
		return errorf(field, canon, nil, "refusing / read-write: it is the root file system; name a project directory")
	}
	// the caller's home itself first: /root is a root caller's home before it is a
	// system directory, and is refused as a home is (trial finding 8)
	for _, home := range h.Homes {
		if canon == home {
			return errorf(field, canon, nil, "refusing %s read-write: it is your home directory; name a project directory inside it", canon)
		}
	}
	for _, r := range refusedWorkspaces {
		if canon == r {
			return errorf(field, canon, nil, "refusing %s read-write: it is a system directory; name a project directory", canon)
		}
	}
	for _, t := range systemTrees {
		if under(canon, t) {
			return errorf(field, canon, nil, "refusing %s read-write: it lies in the system directory %s, which stays read-only", canon, t)
		}
	}
	for _, home := range h.Homes {
		if strings.HasPrefix(home, canon+"/") {
			return errorf(field, canon, nil, "refusing %s read-write: it contains the home directory %s; name a project directory inside it", canon, home)
		}
	}
	for _, c := range strings.Split(canon, "/") {
		if c == ".git" {
			return errorf(field, canon, nil, "refusing %s read-write: repository metadata (.git) stays read-only", canon)
		}
	}
	for _, c := range creds {
		if under(canon, c) || under(c, canon) {
			return errorf(field, canon, nil, "refusing %s read-write: it is, holds or lies in the credential path %s (filesystem.credentials)", canon, c)
		}
	}
	return nil
}

// sandboxHome is where the private HOME is mounted: the caller's home path, so paths
// in configuration look the same, unless that path cannot hold a mount.
func sandboxHome(r *resolver, home string) string {
	if home == "" || home == "/" || !filepath.IsAbs(home) || under(home, "/usr", "/etc", "/proc", "/dev", "/sys", "/bin", "/sbin", "/lib", "/lib64") {
		return fallbackHome
	}
	if c, err := r.evalSymlinks(home); err == nil {
		return c
	}
	return filepath.Clean(home)
}

// workdir is the command's working directory inside: --chdir (relative to the
// workspace), else the caller's cwd when it lies inside the workspace, else the
// workspace root.
func workdir(r *resolver, chdir, ws, cwd string) (string, error) {
	if chdir != "" {
		return checkChdir(chdir, ws)
	}
	if c, err := r.evalSymlinks(cwd); err == nil && under(c, ws) {
		return c, nil
	}
	return ws, nil
}

// fallbackHome is the private HOME when the caller's cannot hold a mount.
const fallbackHome = "/home/sandbox"

// WorkspaceRefusal is why dir could not be the read-write workspace under p for the
// caller h (the check --workspace gets: a system directory, a home directory or one
// holding it, repository metadata, a credential path); nil when it could. A note that
// suggests a workspace asks this first, so it never suggests one gosbx refuses.
func (p *Policy) WorkspaceRefusal(dir string, h Host) error {
	c, err := newResolver().evalSymlinks(dir)
	if err != nil {
		return errorf("workspace", dir, err, "cannot resolve")
	}
	return writable("workspace", c, h, p.Filesystem.Credentials)
}
