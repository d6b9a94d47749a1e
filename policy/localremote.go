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
// hooks and read its config, so a repository the command could write would run the
// command's hooks on the host (attack review 28 F9). Each URL is read as git's
// transport reads it (localRemotePath) and its repository found as enter_repo finds it
// (guardLocalRemote); that repository is read-only as a whole, with what its own config
// names, wherever it lies (attack review 29: the scan does not reach every directory).
// A relative path is taken from worktree (git runs a push from the checkout's top); one
// whose path cannot be told (a "~" without a home) is refused. Errors are *Error (field
// "protected").
//
// The legacy remotes/ and branches/ files of the common git dir count as config
// remotes (legacyRemoteURLs; attack review 30 F5).
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
	common, err := plan.reads.commondirOf(gd)
	if err != nil {
		return err
	}
	if common == "" {
		common = gd
	}
	plan.reads.rb.stamp(filepath.Join(common, "remotes"))
	plan.reads.rb.stamp(filepath.Join(common, "branches"))
	for _, u := range append(remoteURLs(entries), legacyRemoteURLs(common, entries)...) {
		if t := remoteHelper(u.url); t != "" {
			if err := plan.guardPathProgram(u.file, worktree, "git config "+u.setting+" (its remote helper)", cmdWord{text: "git-remote-" + t, program: true}, false, inWritable); err != nil {
				return err
			}
		}
		v, ok := localRemotePath(u.url)
		if !ok {
			continue
		}
		p := plan.configPath(v, worktree)
		if p == "" {
			return errorf("protected", u.file, nil, "git config %s names the local remote %s, whose path gosbx cannot tell (a home or user it cannot look up): the host's git push would run that repository's hooks; name it by an absolute path", u.setting, u.url)
		}
		if err := plan.guardLocalRemote(u.file, u.setting, p, gd, inWritable); err != nil {
			return err
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

// guardLocalRemote guards the local remote path p (named by setting in the config file
// f; "~" expanded, absolute) of a repository whose git dir is gd, resolved as git's
// enter_repo resolves it (enterRepoCandidates: p/.git, p, p.git/.git, p.git, the first
// that is a regular file or a git directory). Each candidate git would try before the
// one it takes is kept from becoming one after the run: missing, it is removed if the
// command made it (absentAfter); a directory that is not a git directory keeps its
// missing HEAD from appearing (absentAfter), or its HEAD read-only. The one git takes is
// guarded directly (guardRemoteEntry), not left to the scan, which skips dependency
// and build trees and stops at its depth (attack review 29 F6, F7); a .git file there is
// read-only and the git dir it names guarded. Candidates outside the writable trees are
// the host's own. A symlink in a writable tree on the way is refused (the command could
// repoint it), as is a candidate that is neither a file nor a directory, or one that
// cannot be inspected. A remote that is gd itself or inside it (url = .git) is gd's own
// guard's.
func (plan *gitPlan) guardLocalRemote(f, setting, p, gd string, inWritable func(string) bool) error {
	what := "git config " + setting + " (in " + f + ")"
	for i, c0 := range enterRepoCandidates(filepath.Clean(p)) {
		c, err := remotePath(c0, what, inWritable)
		if err != nil {
			return err
		}
		if c == gd || underAny(c, []string{gd}) {
			return nil
		}
		st, err := os.Stat(c)
		if err == nil && enterRepoTakes(c, st) {
			worktree := c // a bare repository: hooks run in it, relative settings from it
			if strings.HasSuffix(enterRepoSuffixes[i], "/.git") {
				worktree = filepath.Dir(c)
			}
			done, err := plan.guardRemoteEntry(c, st, worktree, what, inWritable)
			if done || err != nil {
				return err
			}
			continue
		}
		if !inWritable(c) {
			continue // the command cannot make it a repository
		}
		switch {
		case errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			plan.absentAfter(c, false)
		case err != nil:
			return errorf("protected", c, err, "cannot inspect this path, where git looks for the repository of the local remote %s names, so cannot guard its hooks; restore its owner's access or change the remote", what)
		case st.IsDir():
			if err := plan.keepNotGitDir(c, what); err != nil {
				return err
			}
		default:
			return errorf("protected", c, nil, "is neither a file nor a directory where git looks for the repository of the local remote %s names: the command could replace it with one; remove it or change the remote", what)
		}
	}
	return nil
}

// remotePath is p resolved as the kernel resolves it (resolveConfigPath), refusing a
// symlink on the way that lies in a writable tree: the command could repoint it at a
// repository of its own after the launch.
func remotePath(p, what string, inWritable func(string) bool) (string, error) {
	r, link, err := resolveConfigPath(p, inWritable)
	if err != nil {
		return "", errorf("protected", p, err, "cannot resolve this path, where git looks for the repository of the local remote %s names, so cannot guard its hooks; change the remote", what)
	}
	if link != "" {
		return "", errorf("protected", link, nil, "is a symlink in a tree the sandbox can write on the way to %s, where git looks for the repository of the local remote %s names: the command could repoint it at a repository whose hooks the host's git push runs; name the repository by its real path", p, what)
	}
	return r, nil
}

// keepNotGitDir keeps the directory d, in a writable tree and not a git directory at
// launch, from being one after the run: is_git_directory needs a valid HEAD, so a
// missing HEAD is removed after the run if the command made it, and one that is there
// (not valid) is made read-only.
func (plan *gitPlan) keepNotGitDir(d, what string) error {
	h := filepath.Join(d, "HEAD")
	st, err := os.Lstat(h)
	switch {
	case errors.Is(err, os.ErrNotExist):
		plan.absentAfter(h, false)
	case err != nil:
		return errorf("protected", h, err, "cannot inspect this path, where git looks for the repository of the local remote %s names, so cannot guard its hooks", what)
	case st.Mode()&os.ModeSymlink != 0:
		return errorf("protected", h, nil, "is a symlink in a tree the sandbox can write where git looks for the repository of the local remote %s names: the command could make it valid; remove it or change the remote", what)
	default:
		plan.readOnly = append(plan.readOnly, h)
	}
	return nil
}

// guardRemoteEntry guards the candidate c that enter_repo takes (st its stat): a
// regular file is read-only (a .git file, or a bundle) and the git dir its "gitdir:"
// names guarded; a directory is the git dir. done is false when the git dir is one the
// scan guards in commit mode (its objects and HEAD writable: the command could make git
// pass over it to the next candidate, which the caller then guards).
func (plan *gitPlan) guardRemoteEntry(c string, st os.FileInfo, worktree, what string, inWritable func(string) bool) (done bool, err error) {
	if st.Mode().IsRegular() {
		if inWritable(c) {
			plan.readOnly = append(plan.readOnly, c)
		}
		t, ok, err := gitfileTarget(c)
		if err != nil || !ok {
			return true, err // git refuses a file that is not a .git file
		}
		if t, err = remotePath(t, what, inWritable); err != nil {
			return true, err
		}
		if !isGitDirectory(t) {
			// git refuses it; keep the command from making it one
			if !inWritable(t) {
				return true, nil
			}
			if _, err := os.Stat(t); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				plan.absentAfter(t, false)
				return true, nil
			}
			return true, plan.keepNotGitDir(t, what)
		}
		c = t
	}
	return plan.guardRemoteGitDir(c, worktree, what, inWritable)
}

// guardRemoteGitDir makes the git dir d of a local remote read-only as a whole (hooks,
// config, objects/info/alternates and refs, all of which receive-pack and upload-pack
// read), and its common dir when it has one (a linked worktree's hooks and config are
// the common dir's), with what their config names (guardConfigTargets), when they lie in
// a writable tree. A git dir the scan guards in commit mode (readBudget.commitGuarded)
// is left to it, done false.
func (plan *gitPlan) guardRemoteGitDir(d, worktree, what string, inWritable func(string) bool) (done bool, err error) {
	if plan.reads.rb.commitGuarded(d) {
		return false, nil
	}
	dirs := []string{d}
	b, err := readGitFile(filepath.Join(d, "commondir"))
	if err != nil {
		return true, err
	}
	if b != nil {
		c := strings.TrimRight(string(b), "\n\r\t ")
		if !filepath.IsAbs(c) {
			c = filepath.Join(d, c)
		}
		if c, err = remotePath(c, what, inWritable); err != nil {
			return true, err
		}
		if !plan.reads.rb.commitGuarded(c) {
			dirs = append(dirs, c)
		}
	}
	guard := false
	for _, g := range dirs {
		if inWritable(g) {
			plan.readOnly = append(plan.readOnly, g)
			guard = true
		}
	}
	if !guard {
		return true, nil // the host's own
	}
	for _, g := range dirs {
		if inWritable(g) {
			if err := plan.guardHookLinks(g, what, inWritable); err != nil {
				return true, err
			}
		}
	}
	return true, plan.guardConfigTargets(worktree, d, inWritable)
}

// guardHookLinks guards what the symlinks of the read-only git dir g's hooks lead to
// (hooks itself a link to a directory, or a hook a link to a script: the layout many
// projects document) in a writable tree outside g: the target read-only, a missing one
// removed after the run if the command made it. A symlink outside g in a writable tree
// on the way is refused (the command could repoint it); those in g cannot change.
func (plan *gitPlan) guardHookLinks(g, what string, inWritable func(string) bool) error {
	outside := func(q string) bool { return inWritable(q) && q != g && !under(q, g) }
	target := func(p string) error {
		r, link, err := resolveConfigPath(p, outside)
		switch {
		case err != nil:
			return errorf("protected", p, err, "cannot resolve this hook of the local remote %s names, so cannot guard it", what)
		case link != "":
			return errorf("protected", link, nil, "is a symlink in a tree the sandbox can write on the way to %s, a hook of the local remote %s names: the command could repoint it; link to the script's real path", p, what)
		case !outside(r):
			return nil
		}
		if _, err := os.Lstat(r); errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			plan.absentAfter(r, false)
		} else {
			plan.readOnly = append(plan.readOnly, r)
		}
		return nil
	}
	h := filepath.Join(g, "hooks")
	st, err := os.Lstat(h)
	if err != nil {
		return nil // none: read-only g keeps it so
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return target(h)
	}
	ents, err := readDirCapped(h)
	if err != nil {
		return errorf("protected", h, err, "cannot read the hooks of the local remote %s names, so cannot guard them", what)
	}
	for _, e := range ents {
		if e.Type()&os.ModeSymlink != 0 {
			if err := target(filepath.Join(h, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
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

// commitGitDirs are the git dirs the .git entries among the scan's finds lead to that
// guardGit guards in commit mode whatever their layout: a .git directory, a .git
// symlink's target (guardGitSymlink guards it or refuses), a .git file's gitdir without
// a commondir (a submodule's), and a linked worktree's git dir and common dir when laid
// out as git lays it out (<common>/worktrees/<name>, its gitdir naming the .git file
// back: the only layout guardGit guards).
func commitGitDirs(founds [][]string) map[string]bool {
	out := map[string]bool{}
	for _, found := range founds {
		for _, m := range found {
			if filepath.Base(m) != ".git" {
				continue
			}
			st, err := os.Lstat(m)
			switch {
			case err != nil:
			case st.IsDir():
				out[m] = true
			case st.Mode()&os.ModeSymlink != 0:
				if d, err := filepath.EvalSymlinks(m); err == nil {
					out[d] = true
				}
			case st.Mode().IsRegular():
				d, err := gitdirOf(m)
				if err != nil || d == "" {
					continue
				}
				if _, err := os.Lstat(filepath.Join(d, "commondir")); errors.Is(err, os.ErrNotExist) {
					out[d] = true
					continue
				}
				// a linked worktree laid out as git lays it out (guardGit's test)
				c, err := commondirOf(d)
				if err != nil || c == "" || filepath.Dir(d) != filepath.Join(c, "worktrees") {
					continue
				}
				if back, err := backPointer(d); err == nil && back == m {
					out[d], out[c] = true, true
				}
			}
		}
	}
	return out
}
