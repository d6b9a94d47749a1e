package policy

import (
	"path/filepath"
	"strings"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// guardTags puts back after the run every tag of the git dir gd that the command moved
// (git tag -f), loose or packed, wherever git pack-refs moved it: git keeps no reflog
// for tags (core.logAllRefUpdates), so a moved release tag would leave no trace, and
// the host's next checkout of it, or git push --tags, takes the command's commit
// (attack review 33 F11). New tags are the command's and stay; a deleted one is not
// made again (it is gone, visibly).
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
	keepLoose := append([]string{}, loose...)
	keepPacked := append([]string{}, packed...)
	have := map[string]bool{}
	for _, l := range loose {
		rel, content, _ := strings.Cut(l, "\x00")
		have[rel] = true
		if oid := strings.TrimSpace(content); !strings.HasPrefix(oid, "ref:") {
			keepPacked = append(keepPacked, oid+" refs/tags/"+rel)
		}
	}
	for _, l := range packed {
		oid, ref, _ := strings.Cut(l, " ")
		// a loose tag made over a packed one takes its place for git: put back too
		if rel := strings.TrimPrefix(ref, "refs/tags/"); !have[rel] {
			keepLoose = append(keepLoose, rel+"\x00"+oid+"\n")
		}
	}
	plan.cleanups = append(plan.cleanups,
		cleanup.Entry{Kind: cleanup.RemoveChangedRefs, Path: dir, Keep: keepLoose, KeepNew: true},
		cleanup.Entry{Kind: cleanup.RemovePackedRefs, Path: packedFile, Prefix: "refs/tags/", Keep: keepPacked, KeepNew: true})
	return nil
}
