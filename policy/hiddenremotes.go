package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

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
// with insteadOf, localRemotePath), the global config and includes left out (a note's
// best effort); a relative path is taken from the checkout's top, as git takes it.
// For a message after a failure only: nil on any error, and for none.
func HiddenLocalRemotes(spec *config.Config, dir string) []LocalRemote {
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
	seen := visibility(spec)
	var entries []sourcedEntry
	for _, gd := range GitDirsOf(filepath.Join(top, ".git")) {
		f := filepath.Join(gd, "config")
		b, err := readRegularFollow(f, 1<<20)
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
	}
	var out []LocalRemote
	for _, u := range remoteURLs(entries) {
		p, ok := localRemotePath(u.url)
		if !ok || p == "" {
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
		if !seen(r.Path) && !slices.ContainsFunc(out, func(o LocalRemote) bool { return o.Path == r.Path }) {
			out = append(out, r)
		}
	}
	return out
}
