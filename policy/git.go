package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// In "commit" mode these parts of a git dir stay read-only: what git executes or obeys
// (hooks, config, info/ with its attributes and exclude, commondir) and what redirects
// object lookup (objects/info/alternates). Objects, refs, the index and logs are
// writable, so git add and git commit work.
var gitGuarded = []string{"hooks", "config", "config.worktree", "info", "commondir", "objects/info",
	// legacy remote definitions, read for a remote the config does not name
	"remotes", "branches"}

// gitGuardedDirs are created (empty) when missing, so the command cannot create them.
var gitGuardedDirs = []string{"hooks", "info", "objects/info"}

// gitPlan is what guarding one repository needs. Planning reads the host and writes
// nothing: what must exist (makeDirs) is created by the launch (cleanup.MakeDirs).
type gitPlan struct {
	readOnly []string // paths to re-bind read-only
	bindRO   []string // git dirs outside the writable trees, to bind read-only
	bindRW   []string // git dirs outside the writable trees, to bind read-write (commit)
	makeDirs []string // guarded directories to create before binding
	// cleanups are the after-run cleanup's entries (nsinit/cleanup): in commit mode a
	// git dir is writable, so what the command adds there cannot be prevented by a
	// mount, only removed when the sandbox has ended.
	cleanups []cleanup.Entry

	reads gitReads
	// mode is the launch's git mode (GitCommit or GitReadOnly); "" for an enclosing
	// repository's plan, which guards only paths in the trees (guardEnclosing).
	mode string
	// guarded holds the git dirs guard has planned, so that one reached twice (a
	// submodule's git dir from its .git file and from modules/) is planned once.
	guarded map[string]bool
	// writable is the launch's inWritable: which checkouts (working trees) the
	// sandbox can write, so that their git dirs get commit mode's rules (guard).
	writable func(string) bool
	// seen, when not nil, collects every setting the config guard reads (configTargets).
	seen *[]sourcedEntry
	// gitDirs are the git dir and common dir whose config the config guard reads ("" none):
	// git's push hooks take a relative core.hooksPath from there (attack review 29 F3).
	gitDirs []string
	// configNames maps a config file reached through symlinks to the name git reads it
	// by: a relative include is taken from that name's directory (nameConfig).
	configNames map[string]string
}

// absentAfter adds p as a file that must not exist after the run (a writable git dir's
// commondir, which no mount can keep the command from creating). anytime: git never
// makes it there, so one found at any later time is removed too (a launcher killed
// before its cleanup); otherwise only reported then: it may be the user's own since
// (a later git rebase's rebase-merge; attack review 31 F2).
func (plan *gitPlan) absentAfter(p string, anytime bool) {
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: p, Anytime: anytime})
}

// noNewEntries adds dir as a directory in which nothing may be added during the run
// (a commit-mode git dir's modules/): entries not in keep, or no longer the object ids
// gives for their name, are removed.
func (plan *gitPlan) noNewEntries(dir string, keep []string, ids []cleanup.ID) {
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveNewEntries, Path: dir, Keep: keep, KeepIDs: ids})
}

// noSymlinks adds gd as a writable git dir in which no symlink, FIFO, socket or device
// may be left after the run: the host's git follows a symlink when it writes
// COMMIT_EDITMSG, logs/HEAD or a ref, blocks on a FIFO, and never makes either there.
// Object fan-out directories are not walked (their loose objects are not followed when
// git writes).
func (plan *gitPlan) noSymlinks(gd string) {
	// hooks/ is read-only for the whole run (gitGuarded): its links are the user's
	// (guardHooksDir follows them), which the command cannot have added.
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveSpecialUnder, Path: gd, Skip: []string{"objects/[0-9a-f][0-9a-f]", "hooks"}})
}

// gitReads keeps, while one repository is planned (nothing is created meanwhile), the
// files read more than once: a git dir's commondir (commondirOf) and a config file
// (readRegular, 1 MiB). A nil *gitReads keeps nothing.
type gitReads struct {
	commondirs map[string]fileRead
	configs    map[string]configRead
	// rb is the launch's read budget (readBudget), shared by every plan of one Build.
	rb *readBudget
}

// budget is g's read budget; nil (unbounded) for a nil *gitReads.
func (g *gitReads) budget() *readBudget {
	if g == nil {
		return nil
	}
	return g.rb
}

type fileRead struct {
	s   string
	err error
}

type configRead struct {
	b   []byte
	err error
}

// commondirOf is commondirOf(gd), read once.
func (g *gitReads) commondirOf(gd string) (string, error) {
	if g == nil {
		return commondirOf(gd)
	}
	c, ok := g.commondirs[gd]
	if !ok {
		c.s, c.err = commondirOf(gd)
		if g.commondirs == nil {
			g.commondirs = map[string]fileRead{}
		}
		g.commondirs[gd] = c
	}
	return c.s, c.err
}

// config is readRegular(p, 1<<20), read once.
func (g *gitReads) config(p string) ([]byte, error) {
	if g == nil {
		return readRegular(p, 1<<20)
	}
	v, ok := g.configs[p]
	if !ok {
		v.b, v.err = g.rb.readRegular(p, 1<<20)
		if g.configs == nil {
			g.configs = map[string]configRead{}
		}
		g.configs[p] = v
	}
	return v.b, v.err
}

// guardGit plans the protection of the repository metadata entry (a .git directory or
// a .git file that points at a git dir) found in a writable tree, in mode. It refuses a
// repository whose own git dir holds a commondir (git would read config and hooks from
// where it points: only a linked worktree's git dir, <repo>/worktrees/<name>, has one).
//
// outsideRW reports whether a linked worktree's common dir d, outside the writable
// trees, may be bound read-write in commit mode for entry: only for the .git of a
// tree's root (the workspace or a --rw tree the user named is that checkout) and d not
// under a --ro bind. Otherwise d is bound read-only: a .git file found deeper (made by an
// earlier sandbox, naming a stale worktree record) must not make another repository
// writable. A nil outsideRW allows none.
func guardGit(entry, mode string, inWritable func(string) bool, outsideRW func(entry, d string) bool, rb *readBudget) (gitPlan, error) {
	plan := gitPlan{reads: gitReads{rb: rb}, writable: inWritable, mode: mode}
	st, err := os.Lstat(entry)
	if errors.Is(err, fs.ErrNotExist) {
		return plan, nil
	}
	if err != nil {
		return plan, errorf("protected", entry, err, "cannot inspect this repository's .git, so cannot guard it; restore its owner's access")
	}
	if st.IsDir() {
		return plan, plan.guardOwnGitDir(filepath.Dir(entry), entry, mode, inWritable)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return plan, plan.guardGitSymlink(entry, mode, inWritable)
	}
	// A .git file: a linked worktree or a submodule. The file itself is always
	// read-only (rewritten, it would send the user's git to a git dir of the command's
	// making). Its git dir is followed only as git itself lays it out, so that a planted
	// .git file (and a planted git dir with a commondir and a gitdir back-pointer) cannot
	// bring another repository in: a submodule's git dir inside a writable tree, without
	// a commondir; or a linked worktree's git dir <common>/worktrees/<name> whose commondir
	// names <common> and whose gitdir file points back at entry.
	plan.readOnly = append(plan.readOnly, entry)
	gd, err := gitdirOf(entry)
	if err != nil {
		return plan, err
	}
	if gd == "" || !gitDirLike(gd) {
		return plan, nil
	}
	if err := plan.guardSubmodulePaths(filepath.Dir(entry), gd, inWritable, 0); err != nil {
		return plan, err
	}
	if err := plan.guardGitDirSettings(filepath.Dir(entry), gd, inWritable); err != nil {
		return plan, err
	}
	dirs := []string{gd}
	c, err := plan.reads.commondirOf(gd)
	if err != nil {
		return plan, err
	}
	if c == "" {
		if !inWritable(gd) {
			return plan, nil
		}
		if _, err := os.Lstat(filepath.Join(gd, "commondir")); err == nil {
			return plan, nil // a commondir that does not resolve to a git dir
		}
	} else {
		back, err := backPointer(gd)
		if err != nil {
			return plan, err
		}
		if filepath.Dir(gd) != filepath.Join(c, "worktrees") || back != entry || !hasObjects(c) {
			return plan, nil
		}
		if err := noCommondir(c); err != nil {
			return plan, err
		}
		dirs = []string{c} // the worktree's git dir lies inside it
	}
	if err := plan.guardCheckouts(dirs[0]); err != nil {
		return plan, err
	}
	for _, d := range dirs {
		if mode != GitCommit || (!inWritable(d) && (outsideRW == nil || !outsideRW(entry, d))) {
			if inWritable(d) {
				plan.readOnly = append(plan.readOnly, d)
			} else {
				plan.bindRO = append(plan.bindRO, d)
			}
			if err := plan.guardReadOnlyGitDir(d, inWritable); err != nil {
				return plan, err
			}
			continue
		}
		if !inWritable(d) {
			plan.bindRW = append(plan.bindRW, d)
		}
		own := ""
		if d != gd {
			own = gd
		}
		if err := plan.guard(d, own); err != nil {
			return plan, err
		}
	}
	return plan, nil
}

// rwCommonDir returns the common dir of the linked worktree whose .git file is
// entry, as guardGit takes it (a git dir <c>/worktrees/<name> whose commondir names c
// and whose gitdir points back at entry, c a repository's own git dir); "" for any
// other entry, or one that cannot be read (guardGit then names the error).
func rwCommonDir(entry string, rb *readBudget) string {
	if filepath.Base(entry) != ".git" {
		return ""
	}
	if st, err := os.Lstat(entry); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	gd, err := gitdirOf(entry)
	if err != nil || gd == "" || !gitDirLike(gd) {
		return ""
	}
	reads := gitReads{rb: rb}
	c, err := reads.commondirOf(gd)
	if err != nil || c == "" {
		return ""
	}
	back, err := backPointer(gd)
	if err != nil || filepath.Dir(gd) != filepath.Join(c, "worktrees") || back != entry || !hasObjects(c) || noCommondir(c) != nil {
		return ""
	}
	return c
}

// guardOwnGitDir plans the guard of the repository whose working tree is worktree and
// whose own git dir is gd (its .git, or where a .git symlink leads).
func (plan *gitPlan) guardOwnGitDir(worktree, gd, mode string, inWritable func(string) bool) error {
	if err := gitDirAccessible(gd); err != nil {
		return err
	}
	if err := noCommondir(gd); err != nil {
		return err
	}
	if err := plan.guardSubmodulePaths(worktree, gd, inWritable, 0); err != nil {
		return err
	}
	if err := plan.guardGitDirSettings(worktree, gd, inWritable); err != nil {
		return err
	}
	if err := plan.guardCheckouts(gd); err != nil {
		return err
	}
	if mode != GitCommit {
		plan.readOnly = append(plan.readOnly, gd)
		if inWritable(worktree) {
			if err := plan.guardStatTrust(gd); err != nil {
				return err
			}
		}
		return plan.guardReadOnlyGitDir(gd, inWritable)
	}
	return plan.guard(gd, "")
}

// guardReadOnlyGitDir guards what the git dir gd, kept read-only whole, leads to: its
// hooks' and info/ files' links and hard links into a writable tree (guardHooksDir,
// guardInfoEntries), and its submodules' git dirs' the same way.
func (plan *gitPlan) guardReadOnlyGitDir(gd string, inWritable func(string) bool) error {
	if err := plan.guardHooksDir(filepath.Join(gd, "hooks"), gd, "the git dir "+gd, inWritable); err != nil {
		return err
	}
	if err := plan.guardInfoEntries(gd, gd, inWritable); err != nil {
		return err
	}
	return plan.readOnlyModules(filepath.Join(gd, "modules"), gd, 3, inWritable)
}

// readOnlyModules is guardReadOnlyGitDir for each git dir under dir (a read-only git
// dir's modules/, names with slashes depth levels deep), pinned by the read-only gd.
func (plan *gitPlan) readOnlyModules(dir, gd string, depth int, inWritable func(string) bool) error {
	ents, err := readDirCapped(dir)
	if err != nil {
		return nil // none, or unreadable: gitDirAccessible has had its say
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if gitDirLike(p) {
			if err := plan.guardHooksDir(filepath.Join(p, "hooks"), gd, "the git dir "+p, inWritable); err != nil {
				return err
			}
			if err := plan.guardInfoEntries(p, gd, inWritable); err != nil {
				return err
			}
			if err := plan.readOnlyModules(filepath.Join(p, "modules"), gd, 3, inWritable); err != nil {
				return err
			}
			continue
		}
		if depth > 0 {
			if err := plan.readOnlyModules(p, gd, depth-1, inWritable); err != nil {
				return err
			}
		}
	}
	return nil
}

// guardGitSymlink plans the guard of a .git that is a symlink to a directory in a
// writable tree (some checkout tools, Android's repo among them, lay repositories out
// so): the git dir it leads to is guarded as a .git directory would be, and the symlink,
// which no mount can make read-only, is put back as it was after the run
// (cleanup.RestoreSymlink) should the command have replaced it. A .git symlink that
// leads anywhere else is refused.
func (plan *gitPlan) guardGitSymlink(entry, mode string, inWritable func(string) bool) error {
	text, err := os.Readlink(entry)
	if err != nil {
		return errorf("protected", entry, err, "cannot read the .git symlink")
	}
	gd, err := filepath.EvalSymlinks(entry)
	if err != nil {
		return errorf("protected", entry, err, "the .git symlink does not lead to a directory; remove it")
	}
	if st, err := os.Stat(gd); err != nil || !st.IsDir() || !inWritable(gd) || !gitDirLike(gd) {
		return errorf("protected", entry, nil, "is a symlink to %s, which is not a git dir inside the workspace or a read-write bind; gosbx guards a .git symlink only to such a git dir (make .git a directory or a gitdir: file)", gd)
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RestoreSymlink, Path: entry, Target: text})
	return plan.guardOwnGitDir(filepath.Dir(entry), gd, mode, inWritable)
}

// noCommondir refuses a repository's own git dir that holds a commondir.
func noCommondir(gd string) error {
	if _, err := os.Lstat(filepath.Join(gd, "commondir")); err == nil {
		return errorf("protected", filepath.Join(gd, "commondir"), nil,
			"a repository's own git dir holds a commondir, which sends git to another git dir for its config and hooks (only <repo>/.git/worktrees/<name> has one); remove it if you did not put it there")
	}
	return nil
}

// guard adds the guarded parts of the git dir gd, of its linked worktrees' git dirs
// (all read-only but own, the one this sandbox's workspace checks out, and those whose
// checkouts lie in a writable tree: linkedCheckedOut) and of its
// submodules' git dirs (gd/modules/…), to the plan.
func (plan *gitPlan) guard(gd, own string) error {
	if plan.guarded[gd] {
		return nil
	}
	if plan.guarded == nil {
		plan.guarded = map[string]bool{}
	}
	plan.guarded[gd] = true
	if err := gitDirAccessible(gd); err != nil {
		return err
	}
	if err := noSymlinksIn(gd); err != nil {
		return err
	}
	plan.noSymlinks(gd)
	w := plan.writable
	if w == nil {
		w = func(string) bool { return false }
	}
	if err := plan.guardHooksDir(filepath.Join(gd, "hooks"), filepath.Join(gd, "hooks"), "the git dir "+gd, w); err != nil {
		return err
	}
	if err := plan.guardInfoEntries(gd, filepath.Join(gd, "info"), w); err != nil {
		return err
	}
	// Files git reads for its config that a mount cannot keep from being created:
	// removed after the run when the command made them (config.worktree is read when
	// extensions.worktreeConfig is set, as git sparse-checkout does).
	for _, f := range []string{"commondir", "config.worktree"} {
		if _, err := os.Lstat(filepath.Join(gd, f)); os.IsNotExist(err) {
			plan.absentAfter(filepath.Join(gd, f), f == "commondir")
		}
	}
	// An unfinished rebase or cherry-pick holds commands (exec lines) that the user's
	// git rebase --continue would run: one the command leaves is removed after the run;
	// the user's own, there at launch, is read-only (the command cannot add to it).
	for _, f := range []string{"rebase-merge", "rebase-apply", "sequencer"} {
		if _, err := os.Lstat(filepath.Join(gd, f)); os.IsNotExist(err) {
			plan.absentAfter(filepath.Join(gd, f), false)
		} else {
			plan.readOnly = append(plan.readOnly, filepath.Join(gd, f))
		}
	}
	// What hides history from the host's git, whose gc then prunes what it hides:
	// shallow (every commit it names is taken as parentless: git gc --auto after the
	// user's next commit deleted their unpushed commits; attack review 33 F1). And
	// rr-cache, whose recorded resolutions the host's next conflicted merge writes into
	// the working tree (rerere is on by default once the directory exists). Each is
	// read-only when there at launch (only a shallow repository's fetch --deepen or a
	// rerere-using merge writes them), removed after the run when the command made it;
	// found later (a launcher killed) only reported: the user's own shallow fetch or
	// merge may have made it since.
	for _, f := range []string{"shallow", "rr-cache"} {
		if _, err := os.Lstat(filepath.Join(gd, f)); os.IsNotExist(err) {
			plan.absentAfter(filepath.Join(gd, f), false)
		} else {
			plan.readOnly = append(plan.readOnly, filepath.Join(gd, f))
		}
	}
	// Legacy remote definitions (git reads them for a remote its config does not name;
	// git no longer makes them): read-only when there (gitGuarded), removed after the run
	// when the command made them.
	for _, f := range []string{"remotes", "branches"} {
		if _, err := os.Lstat(filepath.Join(gd, f)); os.IsNotExist(err) {
			plan.absentAfter(filepath.Join(gd, f), true)
		}
	}
	// the state of an operation in progress in gd's own checkout (the main one, or a
	// submodule's): the sandbox's, or (below) another's
	plan.guardCheckoutState(gd, own != "" && !plan.mainCheckedOut(gd))
	if own != "" && !plan.mainCheckedOut(gd) {
		// gd is the common git dir of the linked worktree own, and its main checkout is
		// not in a writable tree: its HEAD, index and HEAD's log are that checkout's,
		// which the sandbox cannot write. (A linked worktree nested in the main checkout
		// the sandbox writes leaves them writable: they are the workspace's.)
		for _, f := range []string{"HEAD", "index", "logs/HEAD"} {
			if _, err := os.Lstat(filepath.Join(gd, f)); err == nil {
				plan.readOnly = append(plan.readOnly, filepath.Join(gd, f))
			}
		}
	}
	if err := plan.guardReplaceRefs(gd); err != nil {
		return err
	}
	if err := plan.guardStrayNames(gd, true); err != nil {
		return err
	}
	if err := plan.guardIndexBits(gd, own); err != nil {
		return err
	}
	if err := plan.guardObjects(gd); err != nil {
		return err
	}
	for _, d := range []string{gd, own} {
		// a git dir the command makes unsearchable is given u+rwx by the cleanup to
		// reach what it must remove; then it gets back the mode it had (review 29 F18)
		var st unix.Stat_t
		if d != "" && unix.Lstat(d, &st) == nil && st.Mode&0o700 == 0o700 {
			plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RestoreMode, Path: d, Mode: st.Mode & 0o7777})
		}
	}
	for _, d := range gitGuardedDirs {
		if _, err := os.Lstat(filepath.Join(gd, d)); os.IsNotExist(err) {
			plan.makeDirs = append(plan.makeDirs, filepath.Join(gd, d))
		}
	}
	for _, g := range gitGuarded {
		p := filepath.Join(gd, g)
		if _, err := os.Lstat(p); err == nil || contains(gitGuardedDirs, g) {
			plan.readOnly = append(plan.readOnly, p)
		}
	}
	// a linked worktree's commondir other than git's own ../.. is removed after every
	// run (and every session pass): the entries the session's start did not see (a
	// worktree the user adds between requests) have no read-only one (attack review 33
	// F2); in an entry not there at launch, config.worktree and a gitdir that does not
	// lead back to the entry are removed too (attack review 35 F8)
	plan.reads.rb.worktreesDir(filepath.Join(gd, "worktrees"))
	wts, err := readDirCapped(filepath.Join(gd, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("protected", filepath.Join(gd, "worktrees"), err, "cannot read the linked worktrees' git dirs, so cannot guard them")
	}
	known := make([]string, 0, len(wts))
	for _, w := range wts {
		known = append(known, w.Name())
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveStrayCommondirs, Path: filepath.Join(gd, "worktrees"), Keep: known})
	for _, w := range wts {
		p := filepath.Join(gd, "worktrees", w.Name())
		if p != own && !plan.linkedCheckedOut(gd, p) {
			plan.readOnly = append(plan.readOnly, p) // another checkout's HEAD, commondir, gitdir
			continue
		}
		for _, f := range []string{"commondir", "gitdir", "config.worktree"} {
			if _, err := os.Lstat(filepath.Join(p, f)); err == nil {
				plan.readOnly = append(plan.readOnly, filepath.Join(p, f))
			} else if f == "config.worktree" {
				plan.absentAfter(filepath.Join(p, f), false)
			}
		}
		// its own git dir is searched first for a name git's lookup takes (gitrevisions(7))
		if err := plan.guardStrayNames(p, false); err != nil {
			return err
		}
		plan.guardCheckoutState(p, false)
		for _, f := range []string{"rebase-merge", "rebase-apply", "sequencer"} {
			if _, err := os.Lstat(filepath.Join(p, f)); os.IsNotExist(err) {
				plan.absentAfter(filepath.Join(p, f), false) // this checkout's own
			} else {
				plan.readOnly = append(plan.readOnly, filepath.Join(p, f))
			}
		}
		// Its submodules' git dirs are its own (modules is per worktree in git: absent
		// from path.c's common_list): guarded as gd/modules is, below.
		if err := plan.guardModules(filepath.Join(p, "modules")); err != nil {
			return err
		}
	}
	return plan.guardModules(filepath.Join(gd, "modules"))
}

// guardModules guards dir, a git dir's modules/ (gd/modules or a linked worktree's
// <common>/worktrees/<name>/modules): no launch may add a submodule git dir anywhere
// under it (the user's next git submodule update --init would adopt one of the
// command's making, hooks and all), and each one there is guarded (guardModulesDir).
// A missing one is created, empty and read-only.
func (plan *gitPlan) guardModules(dir string) error {
	mods, err := readDirCapped(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errorf("protected", dir, err, "cannot read the submodules' git dirs, so cannot guard them")
	}
	if errors.Is(err, fs.ErrNotExist) {
		plan.makeDirs = append(plan.makeDirs, dir)
	}
	return plan.guardModulesDir(dir, mods, 3)
}

// mainCheckedOut reports whether the common git dir gd belongs to a checkout in a
// writable tree: that checkout's HEAD and index are then the sandbox's to move,
// whichever of its checkouts the scan reached gd from. That is gd being the .git
// directory of a directory in a writable tree, or (a submodule's git dir,
// <super>/.git/modules/<name>) its config's core.worktree naming a directory in a
// writable tree whose .git file names gd back. A bare repository, a git dir reached
// through a .git symlink, or an unreadable config is not (its checkout cannot be told).
func (plan *gitPlan) mainCheckedOut(gd string) bool {
	if plan.writable == nil {
		return false
	}
	if filepath.Base(gd) == ".git" && plan.writable(filepath.Dir(gd)) {
		st, err := os.Lstat(gd)
		return err == nil && st.IsDir()
	}
	wt := plan.coreWorktree(gd)
	if wt == "" || !plan.writable(wt) {
		return false
	}
	dotgit := filepath.Join(wt, ".git")
	if st, err := os.Lstat(dotgit); err != nil || !st.Mode().IsRegular() {
		return false
	}
	g, err := gitdirOf(dotgit)
	return err == nil && g == gd
}

// coreWorktree is the canonical directory gd's config names as core.worktree (relative
// to gd, as git reads it; git submodule absorbgitdirs and clone write it for a
// submodule's git dir), "" when there is none or it does not resolve.
func (plan *gitPlan) coreWorktree(gd string) string {
	b, err := plan.reads.config(filepath.Join(gd, "config"))
	if err != nil {
		return ""
	}
	entries, ok := parseGitConfig(string(b))
	if !ok {
		return "" // git refuses the repository too
	}
	wt := configLast(entries, "core", "worktree")
	if wt == "" {
		return ""
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(gd, wt)
	}
	r, err := filepath.EvalSymlinks(wt)
	if err != nil {
		return ""
	}
	return r
}

// linkedCheckedOut reports whether p, the git dir <gd>/worktrees/<name> of a linked
// worktree, belongs to a checkout in a writable tree, as git lays it out (the test
// guardGit makes of a .git file, from the other end): its gitdir names a .git file in
// a writable tree that names p back, and its commondir names gd. Such a git dir gets
// the rules of the workspace's own (its commondir, gitdir and config.worktree
// read-only), whether or not this sandbox's workspace is that checkout: a linked
// worktree nested in the workspace (.worktrees/agent1) commits as the workspace does.
// Anything else (another checkout's, or a layout git does not make) stays read-only.
func (plan *gitPlan) linkedCheckedOut(gd, p string) bool {
	if plan.writable == nil {
		return false
	}
	back, err := backPointer(p)
	if err != nil || back == "" || !plan.writable(back) {
		return false
	}
	if st, err := os.Lstat(back); err != nil || !st.Mode().IsRegular() {
		return false
	}
	if g, err := gitdirOf(back); err != nil || g != p {
		return false
	}
	c, err := plan.reads.commondirOf(p)
	return err == nil && c == gd
}

// guardModulesDir guards dir, a directory of modules/ (the directory itself or one
// between it and a submodule git dir whose name has slashes), holding ents at launch:
// read-only when it holds nothing (so the command cannot add to it), and in every case
// an entry the command adds is removed after the run (a mount cannot refuse one beside
// the writable submodule git dirs). Each git dir among ents is guarded as a git dir;
// each other directory the same way, depth levels deep; below that, read-only whole.
// Every entry is kept as what it is at launch (device, inode, type): one replaced during
// the run (a stray file made into a git dir with hooks) is removed after it.
func (plan *gitPlan) guardModulesDir(dir string, ents []fs.DirEntry, depth int) error {
	keep, ids := []string{}, []cleanup.ID{}
	for _, e := range ents {
		var st unix.Stat_t
		p := filepath.Join(dir, e.Name())
		if err := unix.Lstat(p, &st); err != nil {
			return errorf("protected", p, err, "cannot read the submodules' git dirs, so cannot guard them")
		}
		keep, ids = append(keep, e.Name()), append(ids, cleanup.IDOf(&st))
	}
	plan.noNewEntries(dir, keep, ids)
	if len(ents) == 0 {
		plan.readOnly = append(plan.readOnly, dir)
		return nil
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		if gitDirLike(p) {
			if err := noCommondir(p); err != nil {
				return err
			}
			if err := plan.guard(p, ""); err != nil {
				return err
			}
			continue
		}
		if depth == 0 {
			plan.readOnly = append(plan.readOnly, p) // deeper than submodule names go: nothing new inside
			continue
		}
		sub, err := readDirCapped(p)
		if err != nil {
			return errorf("protected", p, err, "cannot read the submodules' git dirs, so cannot guard them")
		}
		if err := plan.guardModulesDir(p, sub, depth-1); err != nil {
			return err
		}
	}
	return nil
}

// commondirOf returns the canonical git dir a worktree's git dir names in its
// commondir file, when that is a git dir with objects; "" otherwise. A commondir that
// cannot be read as git writes it (readRegular: a symlink, a FIFO, a device, more than
// 4 KiB) is an error naming it.
func commondirOf(gd string) (string, error) {
	b, err := readGitFile(filepath.Join(gd, "commondir"))
	if err != nil || b == nil {
		return "", err
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gd, c)
	}
	r, err := filepath.EvalSymlinks(c)
	if err != nil || !hasObjects(r) {
		return "", nil
	}
	return r, nil
}

// readGitFile reads one of git's small pointer files (a .git file, commondir, gitdir):
// nil when there is none, an error (*Error) when it is there but not a regular file of at
// most 4 KiB.
func readGitFile(p string) ([]byte, error) {
	b, err := readRegular(p, 4096)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, errorf("protected", p, err, "cannot read it as git would (a small regular file); an earlier sandbox may have left it: remove it")
	case b == nil:
		b = []byte{}
	}
	return b, nil
}

// hasObjects reports whether d is a repository's own git dir: HEAD and objects/.
func hasObjects(d string) bool {
	for _, f := range []string{"HEAD", "objects"} {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			return false
		}
	}
	return true
}

// gitdirOf reads "gitdir: PATH" from a .git file and returns PATH, canonical ("" when it
// holds none, or PATH does not resolve). A .git file that cannot be read as git writes
// it is an error naming it.
func gitdirOf(file string) (string, error) {
	b, err := readGitFile(file)
	if err != nil || b == nil {
		return "", err
	}
	// setup.c read_gitfile_gently: the whole file less trailing CR and LF, "gitdir: "
	// exactly, the rest as the path (attack review 30 I2)
	gd, ok := strings.CutPrefix(strings.TrimRight(string(b), "\r\n"), "gitdir: ")
	if !ok || gd == "" {
		return "", nil
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(file), gd)
	}
	r, err := filepath.EvalSymlinks(gd)
	if err != nil {
		return "", nil
	}
	return r, nil
}

// backPointer returns the .git file a linked worktree's git dir says it belongs to
// (gd/gitdir, as `git worktree add` writes it), canonical; "" when none resolves. A
// gitdir that cannot be read as git writes it is an error naming it.
func backPointer(gd string) (string, error) {
	b, err := readGitFile(filepath.Join(gd, "gitdir"))
	if err != nil || b == nil {
		return "", err
	}
	p := strings.TrimSpace(string(b))
	if !filepath.IsAbs(p) {
		p = filepath.Join(gd, p)
	}
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", nil
	}
	return r, nil
}

// gitDirLike reports whether d is, or has been, a git dir: isGitDir, or any of the
// files and directories git keeps there. In commit mode a git dir is writable, so a
// command can move its HEAD or objects aside for one launch (which would then take it
// for a plain directory and guard nothing in it), plant hooks, and put HEAD back: the
// guard must not depend on what the command can rename.
func gitDirLike(d string) bool {
	if isGitDir(d) {
		return true
	}
	for _, f := range []string{"HEAD", "config", "hooks", "objects", "refs", "info", "packed-refs", "index", "commondir"} {
		if _, err := os.Lstat(filepath.Join(d, f)); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
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

// gitDirAccessible checks that the caller can read and search every directory of the
// git dir gd that guarding it looks into (all but object stores' fan-out, its own and
// its submodules', and LFS's): the
// guard takes a missing file for an absent one, and a command can chmod a git dir it
// could write (commit mode) to hide a commondir, a worktree or a module from the next
// launch. Errors name the directory (fail closed).
func gitDirAccessible(gd string) error {
	const budget = 20000
	n := 0
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		if n++; n > budget || depth > cleanup.MaxWalkDepth {
			return errorf("protected", gd, nil, "more than %d directories (or %d levels) in this git dir outside its object stores; gosbx cannot check them all", budget, cleanup.MaxWalkDepth)
		}
		if err := accessible(d); err != nil {
			return err
		}
		ents, err := readDirCapped(d)
		if err != nil {
			return errorf("protected", d, err, "cannot read this part of a git dir, so cannot guard it")
		}
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			p := filepath.Join(d, e.Name())
			if e.Name() == "objects" || e.Name() == "lfs" {
				// an object store (a submodule's too): its fan-out is not the guard's,
				// but objects/info (alternates) is
				for _, q := range []string{p, filepath.Join(p, "info")} {
					if _, err := os.Lstat(q); err == nil || !errors.Is(err, fs.ErrNotExist) {
						if err := accessible(q); err != nil {
							return err
						}
					}
				}
				continue
			}
			if err := walk(p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(gd, 0)
}

func accessible(d string) error {
	if err := unix.Faccessat2(unix.AT_FDCWD, d, unix.R_OK|unix.X_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return errorf("protected", d, err, "cannot read this part of a git dir, so cannot guard it; restore its owner's access (chmod u+rwx)")
	}
	return nil
}

// noSymlinksIn refuses a writable git dir holding a symlink, a FIFO, a socket or a device
// (outside its object stores' fan-out directories' contents): git never makes one there, and the host's git follows
// it when it writes (COMMIT_EDITMSG, logs/HEAD, a ref) — one an earlier sandbox left
// (its launcher killed before its cleanup) would send those writes outside.
func noSymlinksIn(gd string) error {
	var walk func(d string, depth int) error
	walk = func(d string, depth int) error {
		if depth > cleanup.MaxWalkDepth {
			return nil // gitDirAccessible refused deeper trees already
		}
		ents, err := readDirCapped(d)
		if err != nil {
			return errorf("protected", d, err, "cannot read this part of a git dir, so cannot guard it")
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			switch {
			case depth == 0 && e.Name() == "hooks" && e.IsDir():
				// read-only for the run; its links are followed by guardHooksDir
			case e.Type()&fs.ModeSymlink != 0:
				return errorf("protected", p, nil, "is a symlink in a git dir the sandbox can write; git never makes one, and the host's git would follow it when it writes there; remove it")
			case e.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
				return errorf("protected", p, nil, "is a FIFO, socket or device in a git dir the sandbox can write; git never makes one, and the host's git would block or write there; remove it")
			case !e.IsDir():
			case filepath.Base(d) == "objects" && e.Name() != "info" && e.Name() != "pack":
				// a fan-out directory: its loose objects are not followed when git writes
			default:
				if err := walk(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(gd, 0)
}

// GitDirsOf returns the git dirs a repository metadata entry stands for, canonical, for
// a message: for a .git file (a linked worktree's, a submodule's) the git dir it names
// and, when that has one, its common dir (<repo>/.git/worktrees/<name> and <repo>/.git:
// what git writes to, and what holds it); for anything else, entry itself. The files
// read are small (4 KiB) and read as the planning reads them; on any error entry alone.
func GitDirsOf(entry string) []string {
	st, err := os.Lstat(entry)
	if err != nil || !st.Mode().IsRegular() {
		return []string{entry}
	}
	gd, err := gitdirOf(entry)
	if err != nil || gd == "" {
		return []string{entry}
	}
	if c, err := commondirOf(gd); err == nil && c != "" && c != gd {
		return []string{gd, c}
	}
	return []string{gd}
}
