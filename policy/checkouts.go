package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Records of where a repository's checkouts are (review 25): the host's git follows a
// checkout's .git file to its git dir, so a .git file the command could rewrite sends
// the user's next git status there to a repository of the command's making
// (core.fsmonitor runs as the user). The protected-path scan reaches .git files only a
// few levels deep; the records below name them at any depth.

// guardCheckouts makes read-only, in both git modes, every regular .git file in a
// writable tree that a record of the repository whose common git dir is common names
// as a checkout's: a linked worktree's (<common>/worktrees/<name>/gitdir, as git
// worktree add writes it) and a submodule's (core.worktree of each git dir under
// <common>/modules and <common>/worktrees/<name>/modules, as git submodule writes it;
// nested submodules' and their worktrees' too). A linked worktree's submodule paths are
// guarded as the workspace's are (guardSubmodulePaths). Errors name the record that
// cannot be read as git writes it.
func (plan *gitPlan) guardCheckouts(common string) error {
	if rb := plan.reads.budget(); rb != nil {
		key := plan.mode + "\x00" + common
		if rb.checkouts[key] {
			return nil
		}
		if rb.checkouts == nil {
			rb.checkouts = map[string]bool{}
		}
		rb.checkouts[key] = true
	}
	return plan.checkoutsOf(common, 0)
}

func (plan *gitPlan) checkoutsOf(common string, nesting int) error {
	if plan.writable == nil {
		return nil
	}
	if nesting > maxSubmoduleDepth {
		return errorf("protected", common, nil, "submodules nested more than %d deep", maxSubmoduleDepth)
	}
	wts, err := readDirCapped(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("protected", filepath.Join(common, "worktrees"), err, "cannot read the linked worktrees' git dirs, so cannot guard their checkouts")
	}
	modules := []string{filepath.Join(common, "modules")}
	for _, w := range wts {
		wgd := filepath.Join(common, "worktrees", w.Name())
		if !w.IsDir() {
			continue
		}
		modules = append(modules, filepath.Join(wgd, "modules"))
		back, err := backPointer(wgd)
		if err != nil {
			return err
		}
		if !plan.dotGitFile(back) {
			continue
		}
		plan.readOnly = append(plan.readOnly, back)
		if err := plan.guardSubmodulePaths(filepath.Dir(back), wgd, plan.writable, 0); err != nil {
			return err
		}
		if err := plan.guardGitDirSettings(filepath.Dir(back), wgd, plan.writable); err != nil {
			return err
		}
	}
	for _, m := range modules {
		if err := plan.moduleCheckouts(m, 3, nesting); err != nil {
			return err
		}
	}
	return nil
}

// moduleCheckouts is checkoutsOf for the submodule git dirs under dir (a modules/
// directory, or one of its directories between it and a git dir whose submodule name has
// slashes, depth levels more): each one's core.worktree .git file, and its own records.
func (plan *gitPlan) moduleCheckouts(dir string, depth, nesting int) error {
	ents, err := readDirCapped(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errorf("protected", dir, err, "cannot read the submodules' git dirs, so cannot guard their checkouts")
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		if !gitDirLike(p) {
			if depth > 0 {
				if err := plan.moduleCheckouts(p, depth-1, nesting); err != nil {
					return err
				}
			}
			continue
		}
		if wt := plan.coreWorktree(p); wt != "" && plan.dotGitFile(filepath.Join(wt, ".git")) {
			plan.readOnly = append(plan.readOnly, filepath.Join(wt, ".git"))
			if err := plan.guardGitDirSettings(wt, p, plan.writable); err != nil {
				return err
			}
		}
		if err := plan.checkoutsOf(p, nesting+1); err != nil {
			return err
		}
	}
	return nil
}

// dotGitFile reports whether p is a regular file (a checkout's .git file) in a writable
// tree.
func (plan *gitPlan) dotGitFile(p string) bool {
	if p == "" || filepath.Base(p) != ".git" || !plan.writable(p) {
		return false
	}
	st, err := os.Lstat(p)
	return err == nil && st.Mode().IsRegular()
}

// guardNamedGitDir guards sub, the git dir a submodule's .git file in a writable tree
// names, when sub lies in a writable tree, whatever the depth of the checkout: in commit
// mode as a git dir (guard), else read-only whole; one holding a commondir (not a layout
// git makes for a submodule) read-only whole in both modes. Under git: readonly one
// inside super, the git dir of the repository it is a submodule of (read-only whole in
// that mode), needs no mount of its own.
func (plan *gitPlan) guardNamedGitDir(sub, super string) error {
	if plan.mode == "" || plan.writable == nil || !plan.writable(sub) {
		return nil
	}
	if plan.mode != GitCommit && underAny(sub, []string{super}) {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(sub, "commondir")); err == nil || plan.mode != GitCommit {
		plan.readOnly = append(plan.readOnly, sub)
		return nil
	}
	return plan.guard(sub, "")
}
