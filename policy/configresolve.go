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
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, os.ErrPermission) {
			// missing, or not the caller's to search (their own git cannot reach it either)
			return filepath.Join(append([]string{next}, rest...)...), link, nil
		}
		if err != nil {
			return "", link, err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxConfigLinks {
			return "", link, &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		if link == "" && inWritable(next) {
			link = next
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", link, err
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	return cur, link, nil
}

// resolveWritable is p as git reaches it when p is not itself in a writable tree but
// leads into one through symlinks (a dotfiles/stow layout: ~/.gitconfig ->
// dotfiles/gitconfig, ~/.githooks -> dotfiles/githooks): the resolved path, which the
// guard then treats as the setting's path; p unchanged when it stays outside. A symlink
// on the way that lies in a writable tree is refused (the command could repoint it),
// naming what (the setting, or the config file itself) names p.
func resolveWritable(p, what string, inWritable func(string) bool) (string, error) {
	if inWritable(p) || !filepath.IsAbs(p) {
		return p, nil
	}
	r, link, err := resolveConfigPath(p, inWritable)
	if err != nil {
		return "", errorf("protected", p, err, "cannot resolve the path %s names, so cannot guard it", what)
	}
	if link != "" {
		return "", errorf("protected", link, nil, "the path %s, which %s names, leads through this symlink, which lies in a tree the sandbox can write (the command could repoint it): make it a plain file or directory, or link from outside the writable trees", p, what)
	}
	if inWritable(r) {
		return r, nil
	}
	return p, nil
}
