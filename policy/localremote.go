package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// guardLocalRemotes guards the repositories the git dir gd's config names as local
// remotes (git-config(1) remote.<name>.url and .pushurl; git-push(1) "GIT URLS": a
// plain path or a file:// URL) that lie in a writable tree: the host's git push and
// fetch run the remote repository's receive-pack and upload-pack hooks and read its
// config, so a bare repository the command could write would run the command's hooks
// on the host (attack review 28 F9). Such a repository is read-only as a whole, with
// what its own config names (guardConfigTargets); one missing at launch is removed
// after the run when the command made it; a symlink there is refused. A relative path
// is taken from worktree (git runs a push from the checkout's top).
// A remote that is a checkout (a directory holding .git) is left to the scan, which
// guards its .git. Errors are *Error (field "protected").
func (plan *gitPlan) guardLocalRemotes(worktree, gd string, inWritable func(string) bool) error {
	files := []string{filepath.Join(gd, "config")}
	c, err := plan.reads.commondirOf(gd)
	if err != nil {
		return err
	}
	if c != "" {
		files = append(files, filepath.Join(c, "config"))
	}
	for _, f := range files {
		var b []byte
		if inWritable(f) {
			b, err = plan.reads.config(f)
		} else {
			b, err = readRegularFollow(f, 1<<20)
		}
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return errorf("protected", f, err, "cannot read this git config file, so cannot guard the local remotes it names")
		}
		entries, ok := parseGitConfig(string(b))
		if !ok {
			return errorf("protected", f, nil, "this git config file does not parse (git refuses it too), so the local remotes it names cannot be guarded: fix it")
		}
		for _, e := range entries {
			if !strings.EqualFold(e.section, "remote") || !(strings.EqualFold(e.key, "url") || strings.EqualFold(e.key, "pushurl")) {
				continue
			}
			v := localRemotePath(e.value)
			if v == "" {
				continue
			}
			if p := plan.configPath(v, worktree); p != "" {
				if err := plan.guardLocalRemote(f, settingName(e), p, worktree, gd, inWritable); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// localRemotePath is the path of the remote URL v when it names a local repository
// (a plain path, or file:///path), and "" for a URL git reaches another way: scheme://,
// a transport helper (<transport>::), or scp-like [user@]host:path (a colon before the
// first slash).
func localRemotePath(v string) string {
	switch {
	case v == "":
		return ""
	case strings.HasPrefix(strings.ToLower(v), "file://"):
		if p := v[len("file://"):]; strings.HasPrefix(p, "/") {
			return p
		}
		return ""
	case strings.Contains(v, "://") || strings.Contains(v, "::"):
		return ""
	}
	if i := strings.IndexByte(v, ':'); i >= 0 && !strings.Contains(v[:i], "/") {
		return ""
	}
	return v
}

// guardLocalRemote guards the local remote p (named by setting in the config file f)
// of the repository checked out at worktree with git dir gd.
func (plan *gitPlan) guardLocalRemote(f, setting, p, worktree, gd string, inWritable func(string) bool) error {
	p = filepath.Clean(p)
	if !inWritable(p) {
		return nil // the host's own: the command cannot write it
	}
	// the repository itself (url = .), or a tree holding it: its own guard applies
	if p == worktree || p == gd || underAny(worktree, []string{p}) || underAny(gd, []string{p}) {
		return nil
	}
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		plan.absentAfter(p)
		return nil
	case err != nil:
		return errorf("protected", p, err, "cannot inspect the local remote %s names (%s), so cannot guard its hooks", setting, f)
	case st.Mode()&os.ModeSymlink != 0:
		return errorf("protected", p, nil, "is a symlink named as a local remote by %s (%s): the command could point it at a repository whose hooks the host's git push runs; name the repository itself", setting, f)
	case !st.IsDir():
		return nil // a bundle: no hooks, no config
	}
	if _, err := os.Lstat(filepath.Join(p, ".git")); err == nil {
		return nil // a checkout: the scan guards its .git
	}
	plan.readOnly = append(plan.readOnly, p)
	return plan.guardConfigTargets(p, p, inWritable)
}

// gitDirsNamed returns the git dirs that the .git entries among found lead to (a .git
// symlink's target, a .git file's gitdir and its common dir), canonical: the scan finds
// such a git dir as a bare repository when it lies in a writable tree (Android's repo
// layout, git init --separate-git-dir), and guardGit guards it as the checkout's own.
func gitDirsNamed(found []string) map[string]bool {
	out := map[string]bool{}
	for _, m := range found {
		if filepath.Base(m) != ".git" {
			continue
		}
		st, err := os.Lstat(m)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if d, err := filepath.EvalSymlinks(m); err == nil {
				out[d] = true
			}
		case st.Mode().IsRegular():
			for _, d := range GitDirsOf(m) {
				if d != m {
					out[d] = true
				}
			}
		}
	}
	return out
}
