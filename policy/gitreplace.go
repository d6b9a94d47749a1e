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

// maxPackedKept bounds the packed replace refs, and remote-tracking refs, a repository
// may hold at launch (each is kept by its line in the after-run cleanup's entry, which
// the journal holds: 100000 lines are about 8 MB).
const maxPackedKept = 100000

// guardReplaceRefs keeps the writable git dir gd from gaining replace refs
// (git-replace(1): refs/replace/<oid> makes every read of <oid> by the host's git, log,
// diff, show, checkout, show another object, while a push sends the real one: a
// reviewed diff that is not what is pushed). refs/replace is read-only (created empty
// when missing); what the command adds anyway (in a refs directory it renamed and made
// again, or as a line of packed-refs) is removed after the run. A repository whose refs
// are in a reftable (extensions.refStorage, git 2.45) is refused: gosbx cannot check
// one. Remote-tracking refs (refs/remotes/) are kept as at launch after the run
// (guardRemoteRefs). A linked worktree's git dir (with a commondir) has no refs of
// either kind of its own.
func (plan *gitPlan) guardReplaceRefs(gd string) error {
	if _, err := os.Lstat(filepath.Join(gd, "commondir")); err == nil {
		return nil
	}
	if _, err := os.Lstat(filepath.Join(gd, "reftable")); !errors.Is(err, fs.ErrNotExist) {
		return errorf("protected", filepath.Join(gd, "reftable"), err,
			"this repository keeps its refs in a reftable, where gosbx cannot find the replace refs (git replace) a command could add to make the host's git show other content than it pushes; use git: readonly for it")
	}
	if err := plan.guardRefsUnder(gd, "replace"); err != nil {
		return err
	}
	if err := plan.guardRemoteRefs(gd); err != nil {
		return err
	}
	if err := plan.guardShadowRefs(gd); err != nil {
		return err
	}
	return plan.guardTags(gd)
}

// guardRemoteRefs keeps the host's remote-tracking refs (refs/remotes/) from naming
// the command's commits (attack review 29 F16: `git reset --hard origin/main`, the
// usual way to throw away the command's work, would check one out). They stay writable,
// so that a git fetch inside works (a local remote needs no network), but after the
// run every loose one not as it was at launch is removed (cleanup.RemoveChangedRefs),
// and so is every packed-refs line under refs/remotes/ not there at launch: the host's
// git then has the launch's value (a packed one) or none until its own git fetch.
func (plan *gitPlan) guardRemoteRefs(gd string) error {
	dir := filepath.Join(gd, "refs", "remotes")
	loose, err := cleanup.LooseRefs(dir, maxPackedKept)
	if err != nil {
		return errorf("protected", dir, err, "cannot read the repository's remote-tracking refs, so cannot keep the command from moving them")
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveChangedRefs, Path: dir, Keep: loose})
	packed, err := packedRefsUnder(filepath.Join(gd, "packed-refs"), "refs/remotes/")
	if err != nil {
		return errorf("protected", filepath.Join(gd, "packed-refs"), err, "cannot read the repository's packed refs, so cannot guard its remote-tracking refs")
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemovePackedRefs, Path: filepath.Join(gd, "packed-refs"), Prefix: "refs/remotes/", Keep: packed})
	return nil
}

// guardRefsUnder keeps the refs under refs/<sub>/ of the writable git dir gd as they
// were at launch: refs/<sub> read-only (created empty when missing), what the command
// adds anyway (a refs directory renamed and made again, a packed-refs line) removed
// after the run. Used for replace refs.
func (plan *gitPlan) guardRefsUnder(gd, sub string) error {
	rr := filepath.Join(gd, "refs", sub)
	what := "the repository's refs/" + sub
	ents, err := readDirCapped(rr)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		plan.makeDirs = append(plan.makeDirs, rr)
	case err != nil:
		return errorf("protected", rr, err, "cannot read %s, so cannot guard them", what)
	}
	keep, ids := []string{}, []cleanup.ID{}
	for _, e := range ents {
		var st unix.Stat_t
		p := filepath.Join(rr, e.Name())
		if err := unix.Lstat(p, &st); err != nil {
			return errorf("protected", p, err, "cannot read %s, so cannot guard them", what)
		}
		keep, ids = append(keep, e.Name()), append(ids, cleanup.IDOf(&st))
	}
	plan.readOnly = append(plan.readOnly, rr)
	plan.noNewEntries(rr, keep, ids)
	prefix := "refs/" + sub + "/"
	packed, err := packedRefsUnder(filepath.Join(gd, "packed-refs"), prefix)
	if errors.Is(err, cleanup.ErrNulName) {
		// the first guard to read the file (attack review 39 F2): the fix is the file's
		return errorf("protected", filepath.Join(gd, "packed-refs"), err, "gosbx cannot say which ref git reads there, so cannot guard the repository's refs; delete that line")
	}
	if err != nil {
		return errorf("protected", filepath.Join(gd, "packed-refs"), err, "cannot read the repository's packed refs, so cannot guard its refs/%s", sub)
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemovePackedRefs, Path: filepath.Join(gd, "packed-refs"), Prefix: prefix, Keep: packed})
	return nil
}

// ReplaceRefNote returns, for a path the after-run cleanup removed (nsinit.Result.Removed),
// the stderr line that says it was a replace ref the command added, a packed-refs
// moved aside, or an index bit cleared ("gosbx: note: …", no newline), and "" for any
// other path.
func ReplaceRefNote(p string) string {
	if note := TagNote(p); note != "" {
		return note
	}
	file, ref, packed := strings.Cut(p, ": ")
	if packed && filepath.Base(file) == "index" {
		for _, bit := range []string{"skip-worktree", "assume-unchanged"} {
			if name, ok := strings.CutSuffix(ref, " ("+bit+")"); ok {
				return "gosbx: note: cleared the " + bit + " bit the command set on " + Shown(name) + " in " + Shown(file) +
					" (it hid the file's change from git status and git diff)"
			}
		}
	}
	if packed && filepath.Base(file) == "index" && strings.HasPrefix(ref, "moved aside to ") {
		to, why, _ := strings.Cut(strings.TrimPrefix(ref, "moved aside to "), " (")
		return "gosbx: note: the command left an index at " + Shown(file) + " that gosbx cannot check for what would hide a change from git status (" +
			Shown(strings.TrimSuffix(why, ")")) + "); moved it aside to " + Shown(to) + ": git now reads no index (git status shows every file as new) until you run git reset or check it and move it back"
	}
	if packed && strings.HasPrefix(ref, "Git LFS object moved aside to ") {
		to, why, _ := strings.Cut(strings.TrimPrefix(ref, "Git LFS object moved aside to "), " (")
		return "gosbx: note: the Git LFS object " + Shown(file) + " was written during the run and " + strings.TrimSuffix(why, ")") +
			" (git lfs would check out its content unverified); moved it aside to " + Shown(to) + ": git lfs fetch brings the remote's back"
	}
	if !packed && isHistoryHider(p) {
		return "gosbx: note: removed " + Shown(p) + ", which the command made: " + historyHider(filepath.Base(p))
	}
	if packed && strings.HasPrefix(ref, "object moved aside to ") {
		to, why, _ := strings.Cut(strings.TrimPrefix(ref, "object moved aside to "), " (")
		return "gosbx: note: the git object " + Shown(file) + " was written during the run and " + Shown(strings.TrimSuffix(why, ")")) +
			" (git would check out its content unverified); moved it aside to " + Shown(to)
	}
	if packed && strings.HasPrefix(ref, "moved aside to ") && (strings.Contains(ref, " (a cache of the packs") || strings.Contains(ref, " (a commit-graph")) {
		to, why, _ := strings.Cut(strings.TrimPrefix(ref, "moved aside to "), " (")
		return "gosbx: note: moved aside to " + Shown(to) + " " + Shown(file) + ", " + Shown(strings.TrimSuffix(why, ")")) +
			" (git reads it before the objects it indexes)"
	}
	if name, ok := strings.CutSuffix(ref, cleanup.NulNameNote); packed && ok && filepath.Base(file) == "packed-refs" {
		return "gosbx: note: removed from " + Shown(file) + " a line the command added whose name holds a NUL byte after " + Shown(name) +
			": git lists it as a second " + Shown(name) + " (for-each-ref, push --tags) but never finds it by that name"
	}
	if what, ok := strings.CutSuffix(p, " (put back as at launch)"); ok {
		return "gosbx: note: put back as at launch the ref the command moved at " + Shown(what) +
			" (a remote-tracking ref, or one named after a remote that git would find before it)"
	}
	if packed && filepath.Base(file) == "packed-refs" && strings.HasPrefix(ref, "moved aside to ") {
		to, why, _ := strings.Cut(strings.TrimPrefix(ref, "moved aside to "), " (")
		return "gosbx: note: the command left " + Shown(file) + " where gosbx cannot look for replace refs (" + Shown(strings.TrimSuffix(why, ")")) +
			"); moved it aside to " + Shown(to) + ", where git does not read it: the refs packed in it are not seen until you check it and move it back"
	}
	if (packed && filepath.Base(file) == "packed-refs" && strings.HasPrefix(ref, "refs/remotes/")) || strings.Contains(p, "/refs/remotes/") {
		return "gosbx: note: removed the remote-tracking ref the command added or moved at " + Shown(p) +
			" (git reset --hard origin/… would check out the command's commit; git fetch brings the remote's back)"
	}
	// only guardShadowRefs removes tags and branches: one named after a remote
	if (packed && filepath.Base(file) == "packed-refs" && (strings.HasPrefix(ref, "refs/tags/") || strings.HasPrefix(ref, "refs/heads/"))) ||
		strings.Contains(p, "/refs/tags/") || strings.Contains(p, "/refs/heads/") {
		return "gosbx: note: removed the ref the command made at " + Shown(p) +
			", named after a remote: git would find it before the remote-tracking ref (git reset --hard origin/… would check out the command's commit)"
	}
	if !(packed && filepath.Base(file) == "packed-refs" && strings.HasPrefix(ref, "refs/replace/")) &&
		!strings.Contains(p, "/refs/replace/") {
		return ""
	}
	return "gosbx: note: removed the replace ref the command added at " + Shown(p) +
		" (git replace: the host's git would show other content than it pushes)"
}

// historyHider says why the command may not leave a git dir's file named name (absent
// at launch; policy's guard): "" for a name that is not one of them.
func historyHider(name string) string {
	switch name {
	case "shallow":
		return "it makes git take the commits it names as having no parents, and the next git gc (run by git commit on its own) deletes the history it hides"
	case "rr-cache":
		return "its recorded conflict resolutions are what git's next conflicted merge writes into the working tree"
	}
	return ""
}

// isHistoryHider reports whether p is a git dir's shallow or rr-cache.
func isHistoryHider(p string) bool {
	return historyHider(filepath.Base(p)) != "" && (filepath.Base(filepath.Dir(p)) == ".git" || gitDirLike(filepath.Dir(p)))
}

// NotRemovedNote returns the stderr line for what the after-run cleanup could not do
// (nsinit.Result.NotRemoved: "path: reason" or a path); who is "the command" or "the
// session's commands". An index or packed-refs it could not check is said as such;
// anything else is a file that would redirect git outside the sandbox.
func NotRemovedNote(p, who string) string {
	file, why, ok := strings.Cut(p, ": ")
	if ok && filepath.Base(file) == "pack" && strings.HasPrefix(why, "not checked") {
		// no "if the command could not have run git gc" escape: git is in every
		// commit-mode sandbox, and a pack's index can name an object you have with the
		// command's content (attack review 31 F4)
		return "gosbx: WARNING: pack files in " + Shown(file) + " are " + Shown(strings.TrimPrefix(why, "not checked, ")) +
			"; gosbx could not check them against their indexes (past its bounds, unreadable, or a pack without its index), and git reads an object from a pack without hashing it, so they may replace objects you have (git checkout or reset would write the command's content): run git fsck there before git checkout, reset or push"
	}
	if ok && strings.Contains(file, "/lfs/objects/") && strings.Contains(why, "not checked") {
		return "gosbx: WARNING: could not check the Git LFS object at " + Shown(file) + " after " + who + " ran (" + why + "): run git lfs fsck there before git checkout or reset"
	}
	if ok && strings.Contains(file, "/objects/") && strings.Contains(why, "not checked") {
		return "gosbx: WARNING: could not check the git objects at " + Shown(file) + " after " + who + " ran (" + Shown(why) + "): run git fsck there before git checkout or reset"
	}
	if cause, isState := strings.CutPrefix(why, cleanup.StateNotRead); ok && isState {
		// cleanup.Snapshot (attack review 36 F2): nothing was left; the next request
		// cannot tell the host's changes there from the session's
		return "gosbx: WARNING: could not read " + Shown(file) + " after " + who + " ran (" + Shown(cause) + "): what your own git changes there before the next request is judged as the session's, and may be undone"
	}
	if base := filepath.Base(file); ok && (base == "index" || strings.HasPrefix(base, "sharedindex.") || base == "packed-refs") {
		return "gosbx: WARNING: could not check " + Shown(file) + " after " + who + " ran (" + Shown(why) + "): it may hide a change from git status and git diff, or name replace refs; look at it (git ls-files -v, git replace -l) before trusting git there"
	}
	return "gosbx: WARNING: could not remove what " + who + " created (or replaced) at " + Shown(p) + "; it would redirect git outside the sandbox: remove it before running git there"
}

// packedRefsUnder returns the lines ("<oid> <prefix>…") of the packed-refs file p whose
// refs start with prefix, none when p is missing; read with the after-run cleanup's
// bounds (cleanup.PackedRefLines: a file it would move aside is an error here, so one
// a command planted refuses no later launch).
func packedRefsUnder(p, prefix string) ([]string, error) {
	return cleanup.PackedRefLines(p, maxPackedKept, func(ref string) bool { return strings.HasPrefix(ref, prefix) })
}
