package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// LocalRemote is a remote of a repository that git reaches as a local path
// (git-config(1) remote.<name>.url: a plain path or a file:// URL).
type LocalRemote struct {
	Name string // the remote's name (remote.<name>.url), "origin"
	Path string // its path on the host, absolute and clean
}

// HiddenLocalRemotes returns the local remotes of the repository enclosing dir (the
// first of dir and its parents holding .git) that the sandbox spec does not show: no
// bind of the path itself (source and destination the same) holds it, so git inside
// says only "does not appear to be a git repository". The remote URLs are read from the
// repository's config files (its git dir's and, for a linked worktree, the common
// dir's) as the launch's guard of local remotes reads them (parseGitConfig, remoteURLs
// with insteadOf, legacy remotes/ and branches/ files, localRemotePath), the global
// config and includes left out (a note's best effort); a relative path is taken from the
// checkout's top, as git takes it.
//
// What the sandbox could have written is not taken as the host's (attack review 30 F2,
// F9): a config file is read only when the spec shows it and holds it read-only (the
// launch guarded it: it was there before the command ran, and the command could not
// change it), opened without following a symlink; a .git that is a symlink is not
// followed. A remote is returned only when a repository is at its path (enterRepo) and
// the path is not, does not hold and does not lie in one of creds (the policy's
// filesystem.credentials), so that the note never advises showing a secret.
// For a message after a failure only: nil on any error, and for none.
func HiddenLocalRemotes(spec *config.Config, dir string, creds []string) []LocalRemote {
	if spec == nil || dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	top := filepath.Clean(dir)
	for {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			break
		}
		up := filepath.Dir(top)
		if up == top {
			return nil
		}
		top = up
	}
	st, err := os.Lstat(filepath.Join(top, ".git"))
	if err != nil || st.Mode()&os.ModeSymlink != 0 {
		return nil
	}
	seen := visibility(spec)
	guarded := func(p string) bool { return seen(p) && readOnlyIn(spec, p) }
	var entries []sourcedEntry
	var dirs []string
	for _, gd := range GitDirsOf(filepath.Join(top, ".git")) {
		f := filepath.Join(gd, "config")
		if !guarded(f) {
			return nil
		}
		b, err := readBounded(f, 1<<20, unix.O_NOFOLLOW)
		if err != nil {
			continue
		}
		parsed, ok := parseGitConfig(string(b))
		if !ok {
			continue
		}
		for _, e := range parsed {
			entries = append(entries, sourcedEntry{file: f, e: e})
		}
		dirs = append(dirs, gd)
	}
	urls := remoteURLs(entries)
	if len(dirs) > 0 {
		common := dirs[len(dirs)-1]
		for _, k := range []string{"remotes", "branches"} {
			if !guarded(filepath.Join(common, k, "x")) {
				common = ""
			}
		}
		if common != "" {
			urls = append(urls, legacyRemoteURLs(common, entries)...)
		}
	}
	var out []LocalRemote
	for _, u := range urls {
		p, ok := localRemotePath(u.url)
		if !ok || p == "" || strings.HasPrefix(p, "~") {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		name := u.setting // remote.<name>.url: the remote's name; else the setting
		if rest, ok := strings.CutPrefix(name, "remote."); ok && strings.Count(rest, ".") >= 1 {
			name = rest[:strings.LastIndexByte(rest, '.')]
		}
		r := LocalRemote{Name: name, Path: filepath.Clean(p)}
		if seen(r.Path) || slices.ContainsFunc(out, func(o LocalRemote) bool { return o.Path == r.Path }) {
			continue
		}
		if slices.ContainsFunc(creds, func(c string) bool { return under(r.Path, c) || under(c, r.Path) }) || enterRepo(r.Path) == "" {
			continue
		}
		out = append(out, r)
	}
	return out
}

// readOnlyIn reports whether spec keeps p read-only: a path of linux.readonlyPaths is p
// or holds it, or the mount deepest over p is a bind with the "ro" option.
func readOnlyIn(spec *config.Config, p string) bool {
	if spec.Linux != nil && slices.ContainsFunc(spec.Linux.ReadonlyPaths, func(r string) bool { return under(p, r) }) {
		return true
	}
	best, ro := -1, false
	for _, m := range spec.Mounts {
		if under(p, m.Destination) && len(m.Destination) > best {
			best = len(m.Destination)
			ro = m.Type == "bind" && slices.Contains(m.Options, "ro")
		}
	}
	return ro
}
