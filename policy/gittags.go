package policy

import (
	"path/filepath"
	"slices"
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
	loose, err := cleanup.LooseRefs(dir, maxPackedKept)
	if err != nil {
		return errorf("protected", dir, err, "cannot read the repository's tags, so cannot keep the command from moving them")
	}
	packedFile := filepath.Join(gd, "packed-refs")
	packed, err := packedRefsUnder(packedFile, "refs/tags/")
	if err != nil {
		return errorf("protected", packedFile, err, "cannot read the repository's packed refs, so cannot keep the command from moving its tags")
	}
	// git reads a loose ref before a packed one of the same name
	at := map[string]string{}
	for _, l := range packed {
		oid, ref, _ := strings.Cut(l, " ")
		at[strings.TrimPrefix(ref, "refs/tags/")] = oid
	}
	for _, l := range loose {
		rel, content, _ := strings.Cut(l, "\x00")
		at[rel] = strings.TrimSpace(content)
	}
	var keep []string
	for rel, v := range at {
		if v != "" && !strings.ContainsAny(v, "\x00\n") {
			keep = append(keep, rel+"\x00"+v)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	slices.Sort(keep)
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
