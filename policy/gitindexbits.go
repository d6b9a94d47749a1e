package policy

import (
	"os"
	"path/filepath"
	"time"

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
	untrusted, err := plan.reads.statUntrusted(gd)
	if err != nil {
		return errorf("protected", filepath.Join(gd, "config"), err, "cannot read the repository's core.trustctime and core.checkStat, so cannot tell whether git would see a file the command rewrites in place")
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
		if untrusted {
			was = nil // written anew after every run: statUntrusted (attack review 31 F11)
		}
		plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen, Was: was})
	}
	return nil
}

// guardObjects has the loose objects of the writable git dir gd that the command may
// write checked after the run (cleanup.VerifyObjects): git reads a loose object
// without hashing it, so one rewritten in place (the command owns the files) would be
// what the host's next git checkout -- f or reset --hard writes (attack review 29
// F15). Since is taken two seconds before now: a file's ctime comes from the kernel's
// coarse clock, which may lag time.Now by a tick. The Git LFS store (lfs/objects) is
// checked the same way (cleanup.VerifyLFSObjects). A linked worktree's git dir (with a
// commondir) has no objects of its own.
func (plan *gitPlan) guardObjects(gd string) error {
	if _, err := os.Lstat(filepath.Join(gd, "commondir")); err == nil {
		return nil
	}
	hashLen := 20
	format, err := plan.reads.objectFormat(gd)
	if err != nil {
		return errorf("protected", filepath.Join(gd, "config"), err, "cannot read the repository's object format, so cannot check its objects")
	}
	if format == "sha256" {
		hashLen = 32
	}
	objs := filepath.Join(gd, "objects")
	packs, err := cleanup.PackStamps(objs)
	if err != nil {
		return errorf("protected", filepath.Join(objs, "pack"), err, "cannot read the repository's packs, so cannot tell after the run which the command wrote")
	}
	since := time.Now().Add(-2 * time.Second).UnixNano()
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.VerifyObjects, Path: objs, HashLen: hashLen,
		Since: since, Was: packs},
		// the Git LFS store, which git-lfs's smudge copies into the working tree
		// without hashing (attack review 33 F4); made by the command or not
		cleanup.Entry{Kind: cleanup.VerifyLFSObjects, Path: filepath.Join(gd, "lfs", "objects"), Since: since})
	return nil
}
