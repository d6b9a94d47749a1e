package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

// linkHop is one symlink met while resolving a path: where it is (its directory
// canonical) and its text as on the host.
type linkHop struct{ path, text string }

// resolveChain resolves path as the kernel does (path_resolution(7)): it returns every
// symlink met on the way (in order), the directories the walk stood in when it met a
// ".." (the kernel needs each to exist to step back out of it), and the canonical
// target. Errors are those of lstat(2) and readlink(2), or ELOOP past 40 links.
func resolveChain(r *resolver, path string) (hops []linkHop, dotdot []string, target string, err error) {
	if !filepath.IsAbs(path) {
		return nil, nil, "", errors.New("not an absolute path")
	}
	dest := "/"
	rest := strings.Split(path, "/")
	walked := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if dest != "/" {
				dotdot = append(dotdot, dest)
			}
			dest = filepath.Dir(dest)
			continue
		}
		next := filepath.Join(dest, c)
		fi, err := r.lstat(next)
		if err != nil {
			return nil, nil, "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && strings.Join(rest, "") != "" {
				return nil, nil, "", syscall.ENOTDIR
			}
			dest = next
			continue
		}
		if walked++; walked > 40 { // MAXSYMLINKS
			return nil, nil, "", syscall.ELOOP
		}
		text, err := r.readlink(next)
		if err != nil {
			return nil, nil, "", err
		}
		hops = append(hops, linkHop{next, text})
		if strings.HasPrefix(text, "/") {
			dest = "/"
		}
		rest = append(strings.Split(text, "/"), rest...)
	}
	return hops, dotdot, dest, nil
}

// resolverChain makes the file rf (one of resolverFiles) resolve inside as on the host
// when it reaches its target through symlinks outside the binds (Debian's /var/run ->
// /run, a symlinked directory in /run, a link to a link, NixOS's /etc/static chain, a
// ".." through a directory of /run): each link outside every bind is made again with
// its host text, the target file alone is bound read-only at its own path, and each
// directory a ".." steps out of that no bind holds is returned, to be made as an empty
// read-only tmpfs (emptyDirs). Nothing is bound but the target file. ok is false when
// the chain cannot be made (it passes /proc or /dev, or a link would stand where a
// mount or another link is): the file is then left as the bound tree shows it.
func (b *builder) resolverChain(r *resolver, rf string, roDests, trees []string) (dirs []string, ok bool) {
	hops, dotdot, t, err := resolveChain(r, rf)
	if err != nil || len(hops) == 0 || under(t, noBindUnder...) {
		return nil, false
	}
	bound := func(p string) bool { return under(p, roDests...) || under(p, trees...) }
	var links []config.Symlink
	for _, h := range hops {
		if under(h.path, noBindUnder...) {
			return nil, false
		}
		if bound(h.path) {
			continue // there inside already
		}
		for _, m := range b.mounts {
			if under(m.Destination, h.path) || under(h.path, m.Destination) && m.Type == "bind" {
				return nil, false
			}
		}
		for _, l := range b.links {
			if l.Path == h.path && l.Target != h.text || l.Path != h.path && (under(l.Path, h.path) || under(h.path, l.Path)) {
				return nil, false
			}
		}
		links = append(links, config.Symlink{Path: h.path, Target: h.text})
	}
	for _, l := range links {
		if !linkMade(b.links, l) {
			b.links = append(b.links, l)
		}
	}
	if !bound(t) {
		b.bind(t, t, true)
	}
	for _, d := range dotdot {
		if !bound(d) && !under(d, noBindUnder...) {
			dirs = append(dirs, d)
		}
	}
	return dirs, true
}

func linkMade(links []config.Symlink, l config.Symlink) bool {
	for _, o := range links {
		if o == l {
			return true
		}
	}
	return false
}

// emptyDirs makes each of dirs (directories a resolver file's ".." steps out of) exist
// inside as an empty read-only tmpfs, unless a mount, a symlink or another of dirs lies
// in it already (then it is made on the way to that one). A mount, not a directory of
// the root: the config has no plain directory entries, and an empty read-only tmpfs
// shows nothing of the host and can hold nothing.
func (b *builder) emptyDirs(dirs []string) {
	dirs = unique(dirs)
	for _, d := range dirs {
		made := false
		for _, m := range b.mounts {
			if under(m.Destination, d) || under(d, m.Destination) && m.Type == "bind" {
				made = true
			}
		}
		for _, l := range b.links {
			if under(l.Path, d) || under(d, l.Path) {
				made = true
			}
		}
		for _, o := range dirs {
			if o != d && under(o, d) {
				made = true
			}
		}
		if !made {
			b.origin = "a directory a resolver file's link steps out of (..)"
			b.add(specs.Mount{Destination: d, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=0755", "ro"}})
		}
	}
}
