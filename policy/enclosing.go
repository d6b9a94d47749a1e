package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Repositories that hold a writable tree from above (issue 15): a workspace or a
// read-write bind inside a repository's working tree is not a repository of its own, yet
// that repository's gitlinks (submodule paths) and linked worktrees can lie in it. The
// host's git status in the enclosing repository recurses into a populated submodule path
// and runs the config of the repository it finds there (core.fsmonitor): a repository
// the command made at a deinitialised submodule path would run on the host. The scan
// for protected paths looks only at and below each tree; guardEnclosing looks above.

// guardEnclosing plans the guard of every repository whose working tree holds the
// writable tree t, from t's parent up to /: its submodule paths inside a writable tree
// are guarded as guardSubmodulePaths guards a repository's own (read-only when not
// checked out, their .git read-only when they are), and so are those of its linked
// worktrees whose .git file lies in a writable tree, and that .git file; and its local
// remotes in a writable tree (guardLocalRemotes). A tree that is
// itself a submodule path not checked out is refused: the command could make the
// repository there, and nothing of the tree can be read-only.
func guardEnclosing(t string, trees []string, inWritable func(string) bool, rb *readBudget) (gitPlan, error) {
	plan := gitPlan{reads: gitReads{rb: rb}, writable: inWritable}
	for a := filepath.Dir(t); ; a = filepath.Dir(a) {
		if err := plan.guardEnclosingRepo(a, inWritable); err != nil {
			return plan, err
		}
		if a == "/" {
			break
		}
	}
	for _, p := range plan.readOnly {
		if slices.Contains(trees, p) {
			return plan, errorf("protected", p, nil, "is a submodule path of an enclosing repository, not checked out: the command could make a repository there that the host's git status would run; check it out (git submodule update --init) or name another directory")
		}
	}
	return plan, nil
}

// guardEnclosingRepo adds the guard of the repository whose working tree is a (its
// .git there), if there is one.
func (plan *gitPlan) guardEnclosingRepo(a string, inWritable func(string) bool) error {
	entry := filepath.Join(a, ".git")
	st, err := os.Lstat(entry)
	if err != nil {
		// none; or a directory the caller cannot search, whose repository the caller's
		// git cannot use either
		return nil
	}
	gd := ""
	switch {
	case st.IsDir():
		gd = entry
	case st.Mode()&fs.ModeSymlink != 0:
		// git follows a .git symlink to its git dir
		if r, err := filepath.EvalSymlinks(entry); err == nil {
			if rst, err := os.Stat(r); err == nil && rst.IsDir() {
				gd = r
			}
		}
	default:
		if gd, err = gitdirOf(entry); err != nil {
			return err
		}
	}
	if gd == "" || !gitDirLike(gd) {
		return nil
	}
	if err := plan.guardSubmodulePaths(a, gd, inWritable, 0); err != nil {
		return err
	}
	// with its local remotes (its common dir's config among the settings): the host's
	// git push from it runs a remote's hooks (attack review 29 F17)
	if err := plan.guardGitDirSettings(a, gd, inWritable); err != nil {
		return err
	}
	// Its linked worktrees (and, for a linked worktree, its repository's others) whose
	// .git file lies in a writable tree, and the .git files there its submodule git
	// dirs' core.worktree names.
	common, err := plan.reads.commondirOf(gd)
	if err != nil {
		return err
	}
	if common == "" {
		common = gd
	}
	return plan.guardCheckouts(common)
}
