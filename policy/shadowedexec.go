package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// execView is whether the sandbox's lookup may execute a file (execInside).
type execView int

const (
	execNo execView = iota
	execYes
	execUnknown // the host cannot tell (a capability or id the launch picks decides)
)

// execInside judges faccessat(X_OK, AT_EACCESS) on the regular file st (at canonical
// path p) as the sandbox's lookup will make it (nsinit/lookpath.go; acl_permission_check
// in fs/namei.c): the owner's bits when the file's owner is the command's uid inside,
// else the group's when its group is the command's, else the other bits; EACCES on a
// noexec mount. Inside, a file's owner is the command's uid only through the id map:
// for a caller that is not root, when it is the caller's own file; for a root caller
// (its command runs as a host id of a range, its read-write binds idmapped to their
// owners), when it is the owner of the outermost read-write bind holding it, or uid 0
// where a tree cannot be idmapped (RootIdentityMap's fallback); a file of an unmapped
// owner gets its group's or other bits only. Where the answer rests on what the host
// cannot see (which fallback, the lookup's CAP_DAC_OVERRIDE for an owner without x, a
// root caller's groups), it is execUnknown.
func execInside(spec *config.Config, p string, st *syscall.Stat_t) execView {
	m := st.Mode & 0o111
	if m == 0 {
		return execNo
	}
	deciding := -1 // the mount with the longest destination holding p
	outer := -1    // the outermost read-write (or idmapped) bind holding p
	for i, mt := range spec.Mounts {
		if !under(p, mt.Destination) {
			continue
		}
		if deciding < 0 || len(mt.Destination) > len(spec.Mounts[deciding].Destination) {
			deciding = i
		}
		if idmapped(mt) && (outer < 0 || len(mt.Destination) < len(spec.Mounts[outer].Destination)) {
			outer = i
		}
	}
	if deciding >= 0 && slices.Contains(spec.Mounts[deciding].Options, "noexec") {
		return execNo
	}
	if deciding >= 0 && !idmapped(spec.Mounts[deciding]) {
		outer = -1 // a read-only bind is not idmapped, wherever it lies (nsinit idmapPlan)
	}
	if m == 0o111 {
		return execYes
	}
	ux, gx, ox := st.Mode&0o100 != 0, st.Mode&0o010 != 0, st.Mode&0o001 != 0
	if spec.Linux == nil || len(spec.Linux.UIDMappings) != 1 || len(spec.Linux.GIDMappings) != 1 {
		return execUnknown
	}
	uid, gid := spec.Linux.UIDMappings[0].HostID, spec.Linux.GIDMappings[0].HostID
	root := uid == 0
	// owner: whether the owner's bits apply inside, and whether that is known
	owner, ownerKnown := false, true
	if !root {
		owner = st.Uid == uid
	} else {
		// the fallback (a tree that cannot be idmapped) runs the command as host uid 0
		fallback := st.Uid == 0
		if outer < 0 {
			// a read-only bind is not idmapped: only the fallback's uid 0 owns a file there
			owner, ownerKnown = false, !fallback
		} else {
			mapped := false // idmapped to the bind source's owner, the command's uid inside
			if fi, err := os.Stat(spec.Mounts[outer].Source); err == nil {
				if o, ok := statOwner(fi); ok {
					mapped = uint32(o[0]) == st.Uid
				}
			}
			owner, ownerKnown = mapped, mapped == fallback
		}
	}
	// rest: the bits that apply when the owner's do not
	rest, restKnown := ox, true
	if gx != ox {
		if root {
			restKnown = false
		} else {
			groups, err := os.Getgroups()
			member := st.Gid == gid || err == nil && slices.Contains(groups, int(st.Gid))
			rest, restKnown = ox, err == nil
			if member {
				rest = gx
			}
		}
	}
	switch {
	case ownerKnown && owner:
		if ux {
			return execYes
		}
		return execUnknown // CAP_DAC_OVERRIDE at lookup grants any x bit to a mapped owner
	case ownerKnown && restKnown:
		return view(rest)
	case !ownerKnown && restKnown && ux == rest:
		return view(rest)
	}
	return execUnknown
}

func view(ok bool) execView {
	if ok {
		return execYes
	}
	return execNo
}

// permissionWhy is ShadowedHint's text for a skipped file passed by for its permissions
// rather than for where it leads (it is seen inside whole: execInside said no or could
// not tell), "" for any other.
func permissionWhy(spec *config.Config, skipped string) string {
	if filepath.Clean(skipped) != skipped {
		return "" // an entry as written ("l/../bin2"), which leads out
	}
	r := newResolver()
	var st syscall.Stat_t
	if !seenWhole(r, visibility(spec), skipped) || syscall.Stat(skipped, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return ""
	}
	what := fmt.Sprintf("%s (mode %04o, owner %d, group %d)", Shown(skipped), st.Mode&0o7777, st.Uid, st.Gid)
	switch execInside(spec, resolvedPath(r, skipped), &st) {
	case execNo:
		what += ", which the sandbox's user may not execute (a file's owner is the command's uid only through the sandbox's id map; another owner's file gets its group's or other bits)"
	case execUnknown:
		what += ", which the sandbox's user may not be allowed to execute: that rests on ids and capabilities the launch picks, which the host cannot tell"
	default:
		return ""
	}
	return what + ": make it executable for all (chmod a+x), or take its directory off PATH"
}

// seenWhole reports whether the file at p is seen inside (v), and every hop of its
// symlink chain and of its #! interpreter's.
func seenWhole(r *resolver, v func(string) bool, p string) bool {
	c, err := followChain(r, p, nil)
	if err != nil {
		return false
	}
	for _, h := range c.hops {
		if !v(h) {
			return false
		}
	}
	if interp := shebang(c.last()); filepath.IsAbs(interp) {
		ic, err := followChain(r, interp, nil)
		if err != nil {
			return false
		}
		for _, h := range ic.hops {
			if !v(h) {
				return false
			}
		}
	}
	return true
}

// idmapped reports whether a root caller's bind m is idmapped: read-write, or with the
// "idmap" option (nsinit idmapPlan).
func idmapped(m specs.Mount) bool {
	return m.Type == "bind" && (!slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "idmap"))
}
