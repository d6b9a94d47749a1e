package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// guardLocalRemotes guards the repositories that the settings git reads for the
// checkout at worktree (entries: configTargets' list, includes and the global and
// environment's settings among them) name as local remotes (git-config(1)
// remote.<name>.url and .pushurl, and branch.<name>.remote, .pushRemote and
// remote.pushDefault when they hold a URL rather than a remote's name; git-push(1)
// "GIT URLS": a plain path or a file:// URL, after url.<base>.insteadOf and
// pushInsteadOf rewrite it as remote.c alias_url does) that lie in a writable tree: the
// host's git push and fetch run the remote repository's receive-pack and upload-pack
// hooks and read its config, so a bare repository the command could write would run the
// command's hooks on the host (attack review 28 F9). Such a repository is read-only as
// a whole, with what its own config names (guardConfigTargets); one missing at launch
// is removed after the run when the command made it; a symlink there is refused. A
// relative path is taken from worktree (git runs a push from the checkout's top). A
// remote that is a checkout (a directory holding .git) is left to the scan, which
// guards its .git. Errors are *Error (field "protected").
//
// The remote helper a URL (or remote.<name>.vcs) names, git-remote-<transport>, is a
// program git looks up on PATH (guardPathProgram).
func (plan *gitPlan) guardLocalRemotes(worktree, gd string, entries []sourcedEntry, inWritable func(string) bool) error {
	for _, se := range entries {
		if se.e.section == "remote" && se.e.key == "vcs" && se.e.set && se.e.value != "" {
			if err := plan.guardPathProgram(se.file, worktree, "git config "+settingName(se.e), cmdWord{text: "git-remote-" + se.e.value, program: true}, false, inWritable); err != nil {
				return err
			}
		}
	}
	for _, u := range remoteURLs(entries) {
		if t := remoteHelper(u.url); t != "" {
			if err := plan.guardPathProgram(u.file, worktree, "git config "+u.setting+" (its remote helper)", cmdWord{text: "git-remote-" + t, program: true}, false, inWritable); err != nil {
				return err
			}
		}
		v := localRemotePath(u.url)
		if v == "" {
			continue
		}
		if p := plan.configPath(v, worktree); p != "" {
			if err := plan.guardLocalRemote(u.file, u.setting, p, worktree, gd, inWritable); err != nil {
				return err
			}
		}
	}
	return nil
}

// remoteURL is a URL git may fetch from or push to, after rewriting, and the setting
// (in file) it comes from.
type remoteURL struct {
	url, setting, file string
}

// remoteURLs are the URLs the settings entries give git's remotes (remote.c): each
// remote's url rewritten by insteadOf, and when it has no pushurl also by
// pushInsteadOf (a push goes there); each pushurl rewritten by insteadOf; and the
// value of branch.*.remote, branch.*.pushremote and remote.pushdefault that names no
// remote (git takes it as a URL), rewritten by both.
func remoteURLs(entries []sourcedEntry) []remoteURL {
	var insteadOf, pushInsteadOf [][2]string // {prefix, base}
	hasPushURL, isRemote := map[string]bool{}, map[string]bool{}
	for _, se := range entries {
		e := se.e
		switch {
		case e.section == "url" && e.set && e.key == "insteadof":
			insteadOf = append(insteadOf, [2]string{e.value, e.sub})
		case e.section == "url" && e.set && e.key == "pushinsteadof":
			pushInsteadOf = append(pushInsteadOf, [2]string{e.value, e.sub})
		case e.section == "remote" && e.sub != "":
			isRemote[e.sub] = true
			if e.key == "pushurl" && e.set {
				hasPushURL[e.sub] = true
			}
		}
	}
	var out []remoteURL
	add := func(se sourcedEntry, u string) {
		out = append(out, remoteURL{url: u, setting: settingName(se.e), file: se.file})
	}
	for _, se := range entries {
		e := se.e
		if !e.set || e.value == "" {
			continue
		}
		switch {
		case e.section == "remote" && e.sub != "" && e.key == "url":
			add(se, aliasURL(e.value, insteadOf))
			if !hasPushURL[e.sub] {
				if u, ok := rewriteURL(e.value, pushInsteadOf); ok {
					add(se, u)
				}
			}
		case e.section == "remote" && e.sub != "" && e.key == "pushurl":
			add(se, aliasURL(e.value, insteadOf))
		case e.section == "branch" && e.sub != "" && (e.key == "remote" || e.key == "pushremote"),
			e.section == "remote" && e.sub == "" && e.key == "pushdefault":
			if !isRemote[e.value] {
				add(se, aliasURL(e.value, insteadOf))
				if u, ok := rewriteURL(e.value, pushInsteadOf); ok {
					add(se, u)
				}
			}
		}
	}
	return out
}

// aliasURL is u rewritten by the longest matching prefix among rules (remote.c
// alias_url), u itself when none matches.
func aliasURL(u string, rules [][2]string) string {
	if r, ok := rewriteURL(u, rules); ok {
		return r
	}
	return u
}

// rewriteURL is u with the longest prefix among rules ({prefix, base}; the first of
// equal length) replaced by its base, and whether one matched.
func rewriteURL(u string, rules [][2]string) (string, bool) {
	best := -1
	for i, r := range rules {
		if strings.HasPrefix(u, r[0]) && (best < 0 || len(r[0]) > len(rules[best][0])) {
			best = i
		}
	}
	if best < 0 {
		return u, false
	}
	return rules[best][1] + u[len(rules[best][0]):], true
}

// remoteHelper is the transport whose helper, git-remote-<transport>, git runs for the
// URL u (transport.c transport_get): "<transport>::<address>", or a "<scheme>://" git
// does not speak itself; "" for git's own (git, ssh, file, a path, scp-like).
func remoteHelper(u string) string {
	i := 0
	for i < len(u) && (u[i] >= 'a' && u[i] <= 'z' || u[i] >= 'A' && u[i] <= 'Z' || i > 0 && (u[i] >= '0' && u[i] <= '9' || u[i] == '+' || u[i] == '-' || u[i] == '.')) {
		i++
	}
	if i == 0 {
		return ""
	}
	switch rest := u[i:]; {
	case strings.HasPrefix(rest, "::"):
		return u[:i]
	case strings.HasPrefix(rest, "://"):
		switch strings.ToLower(u[:i]) {
		case "git", "ssh", "git+ssh", "ssh+git", "file":
			return ""
		}
		return u[:i]
	}
	return ""
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
	p, err := resolveWritable(filepath.Clean(p), "git config "+setting+" (in "+f+", a local remote)", inWritable)
	if err != nil {
		return err
	}
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
