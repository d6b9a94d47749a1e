package policy

import (
	"errors"
	"path/filepath"
	"strings"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// guardTags keeps the tags of the writable git dir gd that exist at launch (loose and
// packed) as they are: after the run, one the command moved or deleted is written back
// with its launch value (cleanup.RestoreRefs) and said in a note (TagNote); the tags
// it made are left. git keeps no reflog for refs/tags, so a moved tag (git tag -f v1.0
// <its commit>) would leave no trace, and a release build (git checkout v1.0) or git
// push --tags would take the command's commit (attack review 33 F11). A linked
// worktree's git dir (with a commondir) has no tags of its own; guardReplaceRefs calls
// this for a main git dir only.
func (plan *gitPlan) guardTags(gd string) error {
	dir := filepath.Join(gd, "refs", "tags")
	keep, err := cleanup.RefValues(dir, maxPackedKept)
	switch {
	case errors.Is(err, cleanup.ErrTooManyRefs):
		// a bound of gosbx's, not a fault of the file (attack review 39 F3)
		return errorf("protected", dir, err, "the repository has more than %d tags, the most gosbx keeps as at launch (each is a line of the launch's journal); use git: readonly for it, or delete old tags (git tag -d)", maxPackedKept)
	case errors.Is(err, cleanup.ErrNulName):
		return errorf("protected", dir, err, "cannot read the repository's tags as git reads them, so cannot keep the command from moving them; delete that line of packed-refs")
	case err != nil:
		return errorf("protected", dir, err, "cannot read the repository's tags as git reads them, so cannot keep the command from moving them; "+
			"a packed-refs line git may read otherwise (a tag on two lines, lines out of order) is fixed by deleting the wrong line, or the word sorted from the file's first line")
	}
	if len(keep) == 0 {
		return nil
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RestoreRefs, Path: dir, Keep: keep})
	return nil
}

// TagNote returns, for a path the after-run cleanup reported (nsinit.Result.Removed),
// the stderr line that says a tag the command moved or deleted was put back ("gosbx:
// note: …", no newline), and "" for any other path.
func TagNote(p string) string {
	what, ok := strings.CutSuffix(p, " (a tag put back as at launch)")
	if !ok {
		return ""
	}
	tag := what
	if i := strings.LastIndex(what, "/refs/tags/"); i >= 0 {
		tag = what[i+len("/refs/tags/"):]
	}
	return "gosbx: note: put back as at launch the tag " + Shown(tag) + " that the command moved or deleted (" + Shown(what) +
		"): git keeps no reflog for tags, so a release build or git push --tags would have taken the command's commit; the tags it made are left"
}
