package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxConfigLinks is how many symlinks resolveConfigPath follows (path_resolution(7):
// Linux stops at 40 with ELOOP).
const maxConfigLinks = 40

// resolveConfigPath resolves the absolute path p one component at a time as the kernel
// does (path_resolution(7)), following every symlink: resolved is p with each link
// replaced by its target (a tail that is missing, or below a directory the caller
// cannot search, kept as written), and link is the first
// symlink met that lies in a writable tree (inWritable), "" when none: such a link the
// command could point elsewhere after the launch. err is ELOOP past maxConfigLinks, or
// an lstat/readlink error other than a missing component.
func resolveConfigPath(p string, inWritable func(string) bool) (resolved, link string, err error) {
	return resolveConfigPathR(nil, p, inWritable)
}

// resolveConfigPathR is resolveConfigPath with its lstat and readlink calls made
// through r (remembered over a launch's git guard; nil: each made afresh).
func resolveConfigPathR(r *resolver, p string, inWritable func(string) bool) (resolved, link string, err error) {
	resolved, link, _, err = resolvePathR(r, p, inWritable)
	return resolved, link, err
}

// resolvePath is resolveConfigPath, also returning left: the first directory in a
// writable tree that a ".." left ("" none). Such a directory the command could replace
// by a symlink after the launch (rmdir sub; ln -s a/b sub), moving where the ".." lands:
// a resolution that left one and ends outside the writable trees pins nothing
// (attack review 29 F8). p is split as written, not cleaned: a ".." after a symlink is
// taken from the link's target, as the kernel takes it.
func resolvePath(p string, inWritable func(string) bool) (resolved, link, left string, err error) {
	return resolvePathR(nil, p, inWritable)
}

// resolvePathR is resolvePath with its lstat and readlink calls made through r.
func resolvePathR(r *resolver, p string, inWritable func(string) bool) (resolved, link, left string, err error) {
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if left == "" && cur != "/" && inWritable(cur) {
				left = cur
			}
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		st, err := r.lstat(next)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrPermission) {
			// missing, or not the caller's to search (their own git cannot reach it either)
			return filepath.Join(append([]string{next}, rest...)...), link, left, nil
		}
		if err != nil {
			return "", link, left, err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxConfigLinks {
			return "", link, left, &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		if link == "" && inWritable(next) {
			link = next
		}
		t, err := r.readlink(next)
		if err != nil {
			return "", link, left, err
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	return cur, link, left, nil
}

// resolveWritable is p as git reaches it when p is not itself in a writable tree but
// leads into one through symlinks (a dotfiles/stow layout: ~/.gitconfig ->
// dotfiles/gitconfig, ~/.githooks -> dotfiles/githooks): the resolved path, which the
// guard then treats as the setting's path; p unchanged when it stays outside. A symlink
// on the way that lies in a writable tree is refused (the command could repoint it),
// naming what (the setting, or the config file itself) names p.
func resolveWritable(p, what string, inWritable func(string) bool) (string, error) {
	return resolveWritableR(nil, p, what, inWritable)
}

// resolveWritableR is resolveWritable with its lstat and readlink calls made through
// res.
func resolveWritableR(res *resolver, p, what string, inWritable func(string) bool) (string, error) {
	if inWritable(p) || !filepath.IsAbs(p) {
		return p, nil
	}
	r, link, left, err := resolvePathR(res, p, inWritable)
	if err != nil {
		return "", errorf("protected", p, err, "cannot resolve the path %s names, so cannot guard it", what)
	}
	if link != "" {
		return "", errorf("protected", link, nil, "the path %s, which %s names, leads through this symlink, which lies in a tree the sandbox can write (the command could repoint it): make it a plain file or directory, or link from outside the writable trees", p, what)
	}
	if left != "" && !inWritable(r) {
		return "", errorf("protected", left, nil, "the path %s, which %s names, enters this directory in a tree the sandbox can write and leaves it with \"..\" (the command could make it a symlink and move where the path lands): link to the target without passing through the writable tree", p, what)
	}
	if inWritable(r) {
		return r, nil
	}
	return p, nil
}
