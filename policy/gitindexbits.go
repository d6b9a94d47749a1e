package policy

import (
	"path/filepath"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// guardIndexBits keeps the command from hiding a change from the host's git status and
// git diff with the index's assume-unchanged or skip-worktree bits
// (git-update-index(1)): the bits of the writable git dir gd's index (and of the linked
// worktree own's, when given) are noted at launch, and those the command sets are
// cleared after the run (cleanup.RemoveIndexBits; attack review 28 F8); an index the
// command wrote is written anew with no cached stat data or cache tree (review 29 F2,
// F14).
func (plan *gitPlan) guardIndexBits(gd, own string) error {
	hashLen := 20
	format, err := plan.reads.objectFormat(gd)
	if err != nil {
		return errorf("protected", filepath.Join(gd, "config"), err, "cannot read the repository's object format, so cannot guard its index")
	}
	if format == "sha256" {
		hashLen = 32
	}
	for _, d := range []string{gd, own} {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "index")
		keep, err := cleanup.IndexHidden(p, hashLen)
		if err != nil {
			return errorf("protected", p, err, "cannot read the index's assume-unchanged and skip-worktree bits, so cannot keep the command from hiding a change with them")
		}
		was, err := cleanup.IndexStamps(p, hashLen)
		if err != nil {
			return errorf("protected", p, err, "cannot read the index, so cannot tell after the run whether the command wrote it")
		}
		plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen, Was: was})
	}
	return nil
}
