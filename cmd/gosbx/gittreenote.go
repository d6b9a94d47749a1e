package main

import "github.com/gosbx/gosbx/policy"

// gitTreeNotes removes, after a command of eff ran, what it left at a name git opens in
// the working tree that is not a regular file (a FIFO .gitignore: the host's git status
// would hang; policy.RemoveGitTreeSpecials), and returns the lines that say so; who is
// "the command" or "the session's commands". Outside the sandbox's after-run cleanup
// (nsinit/cleanup), so that a launch with none keeps its fast path: a launcher killed
// before this leaves it for the next launch's search, which refuses it.
func gitTreeNotes(eff *policy.Policy, host policy.Host, who string) []string {
	cwd := eff.Process.Cwd
	if cwd == "" {
		cwd = host.Cwd
	}
	removed, failed := eff.Trees(cwd, host).RemoveGitTreeSpecials()
	return policy.GitTreeNotes(removed, failed, who)
}

// treeNotes is gitTreeNotes for a session's command or job that ended, over the trees
// its start searched, each line with its newline.
func (sv *supervisor) treeNotes() []string {
	removed, failed := sv.trees.RemoveGitTreeSpecials()
	var out []string
	for _, n := range policy.GitTreeNotes(removed, failed, "the session's commands") {
		out = append(out, n+"\n")
	}
	return out
}
