package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Attack review 29 F12: a read-only hooks directory does not keep its hooks from the
// command when an entry is a symlink into a writable tree (.git/hooks/pre-commit ->
// ../../scripts/pre-commit, as many projects document; GNU stow's per-file links) or a
// hard link whose other name lies there. The guard follows each entry as the kernel
// does and binds what it lands on read-only, or refuses what it cannot pin.

// guardHooksDir guards the directory dir git runs hooks from (a git dir's hooks/,
// core.hooksPath, init.templateDir's hooks/, whose links git clone copies as links),
// whoever keeps dir itself read-only: dir a symlink is followed (guardLinkTarget) and
// its target, when in a writable tree, made read-only; then each entry
// (guardHookEntry). pinned is a directory the launch keeps read-only that holds dir ("" none):
// symlinks inside it cannot be repointed. what names the setting or git dir for messages.
func (plan *gitPlan) guardHooksDir(dir, pinned, what string, inWritable func(string) bool) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return nil // none: git runs no hooks from it (a missing one is created by its guard)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		r, err := guardLinkTarget(dir, pinned, what, inWritable)
		if err != nil {
			return err
		}
		if inWritable(r) {
			st, err := os.Lstat(r)
			if err != nil || !st.IsDir() {
				return errorf("protected", dir, err, "the hooks directory (%s) is a symlink to %s, which is not a directory in a tree the sandbox can write: the command could create it; create it or remove the link", what, r)
			}
			plan.readOnly = append(plan.readOnly, r)
			pinned = r
		}
		dir = r
	} else if !st.IsDir() {
		return nil
	}
	if c, err := filepath.EvalSymlinks(dir); err == nil {
		dir = c
	}
	if inWritable(dir) && pinned == "" {
		pinned = dir
	}
	ents, err := readDirCapped(dir)
	if err != nil {
		return errorf("protected", dir, err, "cannot read the hooks directory (%s), so cannot guard its hooks", what)
	}
	for _, e := range ents {
		if err := plan.guardHookEntry(filepath.Join(dir, e.Name()), pinned, what, inWritable); err != nil {
			return err
		}
	}
	return nil
}

// guardHookEntry guards one file p that git reads or runs from a read-only place (a
// hook, a git dir's info/ file, its config): a symlink is followed (guardLinkTarget) and
// a target in a writable tree bound read-only (a missing one refused: the command could
// create it); a regular file, or the target, with more than one hard link on the file
// system of a writable tree refused (multiLinked).
func (plan *gitPlan) guardHookEntry(p, pinned, what string, inWritable func(string) bool) error {
	st, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	target := p
	if st.Mode()&fs.ModeSymlink != 0 {
		r, err := guardLinkTarget(p, pinned, what, inWritable)
		if err != nil {
			return err
		}
		target = r
		if inWritable(r) {
			st, err := os.Lstat(r)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return errorf("protected", p, nil, "%s holds this symlink to %s, which does not exist in a tree the sandbox can write: the command could create it and git would run or read it on the host; create it or remove the link", what, r)
			case err != nil:
				return errorf("protected", r, err, "cannot check the target of %s (in %s)", p, what)
			case st.Mode().IsRegular():
				plan.readOnly = append(plan.readOnly, r)
			case st.IsDir():
				return nil // git runs no directory
			default:
				return errorf("protected", p, nil, "%s holds this symlink to %s, a FIFO, socket or device in a tree the sandbox can write; remove the link", what, r)
			}
		}
	} else if !st.Mode().IsRegular() {
		return nil
	}
	if multiLinked(target, inWritable, plan.reads.budget()) {
		as := ""
		if target != p {
			as = " (through " + p + ")"
		}
		return errorf("protected", target, nil, "%s runs or reads this file%s, which has more than one hard link on the file system of a tree the sandbox can write: another name may lie inside it, where the command could rewrite it; make it a copy (cp, not ln) or a symlink", what, as)
	}
	return nil
}

// guardLinkTarget resolves the symlink p as the kernel does (resolvePath) and returns
// where it lands. It refuses a link on the way (other than under pinned, which the
// launch keeps read-only) that lies in a writable tree, and a ".." that leaves a
// writable directory when the target ends outside the writable trees (attack review 29
// F8): the command could repoint or replace either after the launch.
func guardLinkTarget(p, pinned, what string, inWritable func(string) bool) (string, error) {
	t, err := os.Readlink(p)
	if err != nil {
		return "", errorf("protected", p, err, "cannot read the symlink %s holds", what)
	}
	start := t
	if !filepath.IsAbs(t) {
		d := filepath.Dir(p)
		if c, err := filepath.EvalSymlinks(d); err == nil {
			d = c
		}
		start = d + "/" + t
	}
	w := func(q string) bool { return inWritable(q) && (pinned == "" || !under(q, pinned)) }
	r, link, left, err := resolvePath(start, w)
	if err != nil {
		return "", errorf("protected", p, err, "cannot resolve the symlink %s holds, so cannot guard it", what)
	}
	if link != "" {
		return "", errorf("protected", link, nil, "%s holds the symlink %s, which leads through this symlink in a tree the sandbox can write (the command could repoint it): link straight to the file", what, p)
	}
	if left != "" && !inWritable(r) {
		return "", errorf("protected", left, nil, "%s holds the symlink %s, which enters this directory in a tree the sandbox can write and leaves it with \"..\" (the command could make it a symlink and move where the link lands): link to the target without passing through the writable tree", what, p)
	}
	return r, nil
}

// multiLinked reports whether the file p has more than one hard link and lies in, or on
// the file system of, a writable tree (rb.trees): a read-only bind of one name does not
// keep the inode from another.
func multiLinked(p string, inWritable func(string) bool, rb *readBudget) bool {
	var st unix.Stat_t
	if unix.Stat(p, &st) != nil || st.Nlink <= 1 || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	if inWritable(p) {
		return true
	}
	if rb == nil {
		return false
	}
	for _, t := range rb.trees {
		var ts unix.Stat_t
		if unix.Stat(t, &ts) == nil && ts.Dev == st.Dev {
			return true
		}
	}
	return false
}

// guardInfoEntries guards the files of the git dir gd's info/ (attributes, exclude,
// sparse-checkout, grafts) and its config as guardHookEntry does: kept read-only by the
// git dir's guard, they still must not lead into a writable tree.
func (plan *gitPlan) guardInfoEntries(gd, pinned string, inWritable func(string) bool) error {
	what := "the git dir " + gd
	if err := plan.guardHookEntry(filepath.Join(gd, "config"), pinned, what, inWritable); err != nil {
		return err
	}
	info := filepath.Join(gd, "info")
	if st, err := os.Lstat(info); err != nil || !st.IsDir() {
		return nil
	}
	ents, err := readDirCapped(info)
	if err != nil {
		return errorf("protected", info, err, "cannot read the git dir's info/, so cannot guard it")
	}
	for _, e := range ents {
		if err := plan.guardHookEntry(filepath.Join(info, e.Name()), pinned, what, inWritable); err != nil {
			return err
		}
	}
	return nil
}
