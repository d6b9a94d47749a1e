package policy

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/gosbx/gosbx/nsinit/config"
)

// movedBind is a bind at another path inside (Bind.Dest): --ro SRC:DST, --rw SRC:DST.
type movedBind struct {
	Bind
	ro bool
}

// splitDest splits a --ro/--rw value "SRC:DST" at its last ':' followed by '/', so
// that DST is absolute; a value without one is a path bound at itself (dst "").
func splitDest(v string) (src, dst string) {
	for i := len(v) - 2; i > 0; i-- {
		if v[i] == ':' && v[i+1] == '/' {
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// destBinds adds the binds at another path inside. The source is resolved on the host
// (a name through merged-usr's /bin is bound from /usr/bin) and bound at the
// destination as named. The destination lies outside every other bind (creating its
// mount point there would write the host) and holds no other mount or link; the
// source holds no masked path (it would show it unmasked at the destination). A
// read-write source is checked as a read-write bind at its own path is (writable),
// and must need no guard, which is planned by host path: no protected path inside,
// no enclosing repository, not the policy file's tree; bind it at its own path for
// those. linked reports a source named through a symlink (config.RootID).
func (b *builder) destBinds(r *resolver, moved []movedBind, p *Policy, h Host, masked []string, ws string) (linked bool, err error) {
	field := func(m movedBind) string {
		if m.ro {
			return "ro"
		}
		return "rw"
	}
	var dests []string
	for _, m := range moved {
		dests = append(dests, filepath.Clean(m.Dest))
	}
	for i, m := range moved {
		fl := field(m)
		dst := dests[i]
		if !filepath.IsAbs(m.Dest) {
			return false, errorf(fl, m.Dest, nil, "the destination inside must be an absolute path (SRC:DST)")
		}
		given, canon, err := canonical(r, fl, m.Path, "/")
		if err != nil {
			if m.Optional && isAbsent(err) {
				continue
			}
			return false, err
		}
		if canon == "/" {
			return false, errorf(fl, given, nil, "refusing to bind / elsewhere: name a directory")
		}
		if dst == "/" || under(dst, noBindUnder...) {
			return false, errorf(fl, dst, nil, "refusing a bind at %s: the sandbox has its own root, /proc and /dev", dst)
		}
		for j, mt := range b.mounts {
			if mt.Type == "bind" && under(dst, mt.Destination) {
				return false, errorf(fl, dst, nil, "lies in %s (%s): a bind elsewhere must be outside every other bind", mt.Destination, b.origins[j])
			}
			if mt.Destination != dst && under(mt.Destination, dst) {
				return false, errorf(fl, dst, nil, "holds %s (%s): a bind elsewhere must not hold another mount", mt.Destination, b.origins[j])
			}
		}
		for j, d := range dests {
			if j != i && d != dst && (under(d, dst) || under(dst, d)) {
				return false, errorf(fl, dst, nil, "overlaps the bind at %s", d)
			}
		}
		for _, l := range b.links {
			if under(l.Path, dst) || under(dst, l.Path) {
				return false, errorf(fl, dst, nil, "holds or lies in the symlink %s the sandbox makes", l.Path)
			}
		}
		for _, mk := range masked {
			if under(mk, canon) || under(canon, mk) {
				return false, errorf(fl, given, nil, "holds or lies in the masked path %s: bound at %s it would show unmasked", mk, dst)
			}
		}
		if !m.ro {
			if err := writable(fl, canon, h, p.Filesystem.Credentials); err != nil {
				return false, err
			}
			st, err := os.Stat(canon)
			if err != nil {
				return false, errorf(fl, given, err, "cannot stat")
			}
			if h.Root && st.Mode()&(os.ModeSocket|os.ModeDevice|os.ModeCharDevice) != 0 {
				return false, errorf(fl, given, nil, "is a socket or device: a root caller's command would reach it as its owner (its read-write binds are idmapped to their owners)")
			}
			if under(canon, ws) || under(ws, canon) {
				return false, errorf(fl, given, nil, "holds or lies in the workspace %s: bind it at its own path", ws)
			}
			if p.source != "" && under(p.source, canon) {
				return false, errorf("policy", p.source, nil, "the policy file lies in a tree the sandbox can write; keep it outside the workspace and read-write binds")
			}
			if st.IsDir() {
				found, err := scanProtected(r, canon, "", p.Filesystem.Protected, p.Filesystem.ScanLimit)
				if err != nil {
					return false, err
				}
				if len(found) > 0 {
					return false, errorf(fl, given, nil, "holds the protected path %s, which is guarded only for a bind at its own path: use --rw %s", found[0], given)
				}
			}
			if slices.Contains(p.Filesystem.Protected, ".git") {
				plan, err := guardEnclosing(canon, []string{canon}, func(q string) bool { return under(q, canon) }, newReadBudget())
				if err != nil {
					return false, err
				}
				if len(plan.readOnly) > 0 || len(plan.makeDirs) > 0 || len(plan.cleanups) > 0 {
					return false, errorf(fl, given, nil, "lies in a git repository whose guard is planned by host path: use --rw %s", given)
				}
			}
		}
		linked = linked || given != canon
		b.origin = "the bind " + given + " at " + dst
		b.bind(canon, dst, m.ro)
	}
	return linked, nil
}

// userLinks adds the policy's symlinks (filesystem.symlinks, --symlink): each at an
// absolute path in the sandbox's own root or a private tmpfs, never in a bind, where
// making it would write the host.
func (b *builder) userLinks(links []Symlink) error {
	for _, l := range links {
		if !filepath.IsAbs(l.Path) || l.Target == "" {
			return errorf("symlink", l.Path, nil, "want an absolute PATH and a TARGET (TARGET:PATH)")
		}
		path := filepath.Clean(l.Path)
		if path == "/" || under(path, noBindUnder...) {
			return errorf("symlink", path, nil, "refusing a symlink at the root, in /proc or /dev")
		}
		for j, mt := range b.mounts {
			if mt.Type == "bind" && under(path, mt.Destination) {
				return errorf("symlink", path, nil, "lies in %s (%s): making it would write the host; put it outside every bind", mt.Destination, b.origins[j])
			}
			if under(mt.Destination, path) {
				return errorf("symlink", path, nil, "is the mount point of %s (%s)", mt.Destination, b.origins[j])
			}
		}
		for _, o := range b.links {
			if o.Path == path {
				return errorf("symlink", path, nil, "the sandbox makes a symlink there already (to %s)", o.Target)
			}
		}
		b.links = append(b.links, config.Symlink{Path: path, Target: l.Target})
	}
	return nil
}
