package policy

import (
	"os"
	"path/filepath"
	"strings"
)

// In "commit" mode these parts of a git dir stay read-only: what git executes or obeys
// (hooks, config, info/ with its attributes and exclude, commondir) and what redirects
// object lookup (objects/info/alternates). Objects, refs, the index and logs are
// writable, so git add and git commit work.
var gitGuarded = []string{"hooks", "config", "info", "commondir", "objects/info"}

// gitGuardedDirs are created (empty) when missing, so the command cannot create them.
var gitGuardedDirs = []string{"hooks", "info", "objects/info"}

// gitPlan is what guarding one repository needs.
type gitPlan struct {
	readOnly  []string // paths to re-bind read-only
	bindRO    []string // git dirs outside the writable trees, to bind read-only
	bindRW    []string // git dirs outside the writable trees, to bind read-write (commit)
	mkdirDirs []string // guarded directories to create before binding
	// absentAfter are files that must not exist after the run (AbsentAfterAnnotation):
	// a writable git dir's commondir, which no mount can keep the command from creating.
	absentAfter []string
}

// guardGit plans the protection of the repository metadata entry (a .git directory or
// a .git file that points at a git dir) found in a writable tree, in mode.
func guardGit(entry, mode string, inWritable func(string) bool) gitPlan {
	var plan gitPlan
	st, err := os.Lstat(entry)
	if err != nil {
		return plan
	}
	if st.IsDir() {
		if mode != GitCommit {
			plan.readOnly = append(plan.readOnly, entry)
			return plan
		}
		plan.guard(entry)
		return plan
	}
	// A .git file: a linked worktree or a submodule. The file itself is always
	// read-only (rewritten, it would send the user's git to a git dir of the command's
	// making). Its git dir is followed only when it is a git dir inside a writable tree
	// (a submodule), or a linked worktree whose own gitdir file points back at entry
	// (as git writes it), so a planted .git file cannot bring another repository in.
	plan.readOnly = append(plan.readOnly, entry)
	gd := gitdirOf(entry)
	if gd == "" || !isGitDir(gd) {
		return plan
	}
	common := gd
	if b, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gd, c)
		}
		if r, err := filepath.EvalSymlinks(c); err == nil && isGitDir(r) {
			common = r
		}
	}
	switch {
	case inWritable(gd) && inWritable(common):
	case backPointer(gd) == entry:
	default:
		return plan
	}
	for _, d := range uniq(gd, common) {
		if mode != GitCommit {
			if inWritable(d) {
				plan.readOnly = append(plan.readOnly, d)
			} else {
				plan.bindRO = append(plan.bindRO, d)
			}
			continue
		}
		if !inWritable(d) {
			plan.bindRW = append(plan.bindRW, d)
		}
		plan.guard(d)
	}
	return plan
}

// guard adds the guarded parts of the git dir gd, and of its submodules' git dirs
// (gd/modules/…), to the plan. A linked worktree's own git dir (it has a commondir)
// holds only its HEAD, index and logs, and the files that tie it to the repository.
func (plan *gitPlan) guard(gd string) {
	if _, err := os.Lstat(filepath.Join(gd, "commondir")); err == nil {
		for _, f := range []string{"commondir", "gitdir", "config.worktree"} {
			if _, err := os.Lstat(filepath.Join(gd, f)); err == nil {
				plan.readOnly = append(plan.readOnly, filepath.Join(gd, f))
			}
		}
		return
	}
	if _, err := os.Lstat(filepath.Join(gd, "commondir")); os.IsNotExist(err) {
		plan.absentAfter = append(plan.absentAfter, filepath.Join(gd, "commondir"))
	}
	for _, d := range gitGuardedDirs {
		if _, err := os.Lstat(filepath.Join(gd, d)); os.IsNotExist(err) {
			plan.mkdirDirs = append(plan.mkdirDirs, filepath.Join(gd, d))
		}
	}
	for _, g := range gitGuarded {
		p := filepath.Join(gd, g)
		if _, err := os.Lstat(p); err == nil || contains(gitGuardedDirs, g) {
			plan.readOnly = append(plan.readOnly, p)
		}
	}
	mods, _ := os.ReadDir(filepath.Join(gd, "modules"))
	for _, m := range mods {
		sub := filepath.Join(gd, "modules", m.Name())
		if m.IsDir() && m.Type()&os.ModeSymlink == 0 {
			if isGitDir(sub) {
				plan.guard(sub)
			} else {
				plan.guardNested(sub, 3)
			}
		}
	}
}

// guardNested looks for submodule git dirs under modules/ with slashes in their names.
func (plan *gitPlan) guardNested(dir string, depth int) {
	if depth == 0 {
		return
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() && e.Type()&os.ModeSymlink == 0 {
			if isGitDir(p) {
				plan.guard(p)
			} else {
				plan.guardNested(p, depth-1)
			}
		}
	}
}

// gitdirOf reads "gitdir: PATH" from a .git file and returns PATH, canonical.
func gitdirOf(file string) string {
	b, err := os.ReadFile(file)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(file), gd)
	}
	r, err := filepath.EvalSymlinks(gd)
	if err != nil {
		return ""
	}
	return r
}

// backPointer returns the .git file a linked worktree's git dir says it belongs to
// (gd/gitdir, as `git worktree add` writes it), canonical.
func backPointer(gd string) string {
	b, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil {
		return ""
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(gd, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// isGitDir reports whether d looks like a git dir: a HEAD and objects or a commondir.
func isGitDir(d string) bool {
	if _, err := os.Stat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	for _, f := range []string{"objects", "commondir"} {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return true
		}
	}
	return false
}

func uniq(a, b string) []string {
	if a == b {
		return []string{a}
	}
	return []string{a, b}
}
