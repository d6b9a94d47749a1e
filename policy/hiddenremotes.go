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
// dir's), parsed as the launch's guard of local remotes parses them (parseGitConfig,
// localRemotePath); a relative path is taken from the checkout's top, as git takes it.
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
	var out []LocalRemote
	for _, gd := range GitDirsOf(filepath.Join(top, ".git")) {
		b, err := readRegularFollow(filepath.Join(gd, "config"), 1<<20)
		if err != nil {
			continue
		}
		entries, ok := parseGitConfig(string(b))
		if !ok {
			continue
		}
		for _, e := range entries {
			if !strings.EqualFold(e.section, "remote") || e.key != "url" || e.sub == "" {
				continue
			}
			p := localRemotePath(e.value)
			if p == "" {
				continue
			}
			if !filepath.IsAbs(p) {
				p = filepath.Join(top, p)
			}
			r := LocalRemote{Name: e.sub, Path: filepath.Clean(p)}
			if !seen(r.Path) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}
