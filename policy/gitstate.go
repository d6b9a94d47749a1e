package policy

import (
	"os"
	"path/filepath"
)

// gitInProgress are the files of a checkout's git dir (per worktree: not in path.c's
// common list) that hold an operation in progress, which the checkout's next git
// commit, merge --continue or bisect reset takes up: a CHERRY_PICK_HEAD gives the next
// commit its author, a MERGE_HEAD makes it a merge of that commit (its history pushed
// with the user's), BISECT_START names what git bisect reset checks out.
var gitInProgress = []string{"CHERRY_PICK_HEAD", "REVERT_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE",
	"MERGE_AUTOSTASH", "AUTO_MERGE", "REBASE_HEAD", "SQUASH_MSG", "BISECT_START", "BISECT_LOG", "BISECT_NAMES",
	"BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_FIRST_PARENT", "BISECT_HEAD", "BISECT_RUN"}

// gitOtherCheckout are the other per-worktree files of a checkout the sandbox does not
// work in: what git reset --hard ORIG_HEAD, git merge FETCH_HEAD and git bisect take.
var gitOtherCheckout = []string{"ORIG_HEAD", "FETCH_HEAD", "refs/bisect"}

// guardCheckoutState guards the per-worktree state in the git dir d of a checkout
// (attack review 33 F6). theirs: the checkout is not the sandbox's (the main checkout,
// outside the writable trees, of the linked worktree the sandbox works in): each of
// gitInProgress and gitOtherCheckout there at launch is read-only, and one the command
// makes is removed after the run. Otherwise (the sandbox's own checkout) an operation
// the command leaves unfinished (gitInProgress absent at launch) is removed after the
// run, as an unfinished rebase is; the user's own, there at launch, is left to the
// command to finish. Found later (a launcher killed), either is only reported: the
// user's own git may have made it since.
func (plan *gitPlan) guardCheckoutState(d string, theirs bool) {
	files := gitInProgress
	if theirs {
		files = append(append([]string{}, gitInProgress...), gitOtherCheckout...)
	}
	for _, f := range files {
		p := filepath.Join(d, f)
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			plan.absentAfter(p, false)
		} else if err == nil && theirs {
			plan.readOnly = append(plan.readOnly, p)
		}
	}
}
