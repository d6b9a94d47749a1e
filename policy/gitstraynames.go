package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// gitDirNames are the names git (2.39: gitrepository-layout(5), its state and lock
// files, git gui's) and the tools that keep a directory in a git dir (git-lfs, git-annex,
// git-svn, git-crypt, transcrypt, git filter-repo, magit, git-branchless, gosbx's own
// aside files) make at the top of a git dir, as
// path.Match patterns. Any other name is a ref to git's lookup ($GIT_DIR/<name> comes
// first: gitrevisions(7)), so a command's upstream/main would be what the host's git
// takes for a remote added later (attack review 33 F8).
var gitDirNames = []string{"HEAD", "config", "config.worktree", "description", "hooks", "info", "objects",
	"refs", "logs", "index", "packed-refs", "shallow", "commondir", "gitdir", "locked", "modules", "worktrees",
	"branches", "remotes", "rr-cache", "sequencer", "rebase-merge", "rebase-apply", "lost-found", "common",
	"fsmonitor--daemon", "fsmonitor--daemon.ipc", "gitk.cache", "gc.pid", "gc.log", "*_HEAD", "*_EDITMSG",
	"*_MSG", "MERGE_MODE", "MERGE_RR", "MERGE_AUTOSTASH", "BISECT_*", "NOTES_MERGE_*", "EDIT_DESCRIPTION",
	"sharedindex.*", "*.lock", "*.gosbx-*", "GITGUI_*", "lfs", "annex", "svn", "git-crypt", "crypt",
	"filter-repo", "magit", "branchless"}

// gitRefNamespaces are the directories (and files) git makes in refs/, as prefixes of
// ref names (git-stash, git-notes, git-replace, git-bisect, git-rebase's rewritten, the
// worktree and prefetch refs, filter-branch's original). refs/<name> is the second
// place git's lookup looks.
var gitRefNamespaces = []string{"refs/heads/", "refs/tags/", "refs/remotes/", "refs/notes/", "refs/stash",
	"refs/replace/", "refs/bisect/", "refs/rewritten/", "refs/worktree/", "refs/prefetch/", "refs/original/"}

// guardStrayNames has removed after the run what the command adds to the git dir gd
// (or, refs false, a linked worktree's own git dir) under a name git does not make
// there: a new top-level entry, a new refs/<x> outside git's namespaces, and a line of
// packed-refs for a name outside them (refs/<x>/…, or no refs/ at all: "main") not
// there at launch (attack review 33 F8: <gitdir>/upstream/main, found before
// refs/remotes/upstream/main once the user adds that remote; review 36 F3: the packed
// line "<oid> origin/main"). What was there at launch is kept.
func (plan *gitPlan) guardStrayNames(gd string, refs bool) error {
	dirs := []struct{ dir, rel string }{{gd, ""}}
	if refs {
		dirs = append(dirs, struct{ dir, rel string }{filepath.Join(gd, "refs"), "refs/"})
	}
	for _, d := range dirs {
		ents, err := readDirCapped(d.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return errorf("protected", d.dir, err, "cannot read this part of the git dir, so cannot keep the command from adding refs git would find first")
		}
		keep := []string{}
		for _, e := range ents {
			keep = append(keep, e.Name())
		}
		var skip []string
		if d.rel == "" {
			skip = gitDirNames
		} else {
			for _, ns := range gitRefNamespaces {
				skip = append(skip, strings.TrimSuffix(strings.TrimPrefix(ns, "refs/"), "/"))
			}
		}
		plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveNewEntries, Path: d.dir, Keep: keep, Skip: skip})
	}
	if !refs {
		return nil
	}
	packedFile := filepath.Join(gd, "packed-refs")
	packed, err := packedRefsOutside(packedFile, gitRefNamespaces)
	if err != nil {
		return errorf("protected", packedFile, err, "cannot read the repository's packed refs, so cannot keep the command from adding refs git would find first")
	}
	packed = append(packed, looseRefsOutside(filepath.Join(gd, "refs"), gitRefNamespaces)...)
	// Prefix "": a line whose name is not under refs/ ("<oid> main", "<oid> origin/main")
	// is found by git's lookup as $GIT_DIR/<name>, before refs/heads/main and
	// refs/remotes/origin/main, and git pack-refs never writes one (attack review 36 F3)
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemovePackedRefs, Path: packedFile, Prefix: "", Keep: packed, Skip: gitRefNamespaces})
	return nil
}

// looseRefsOutside returns, as packed-refs lines ("<oid> refs/<x>/…"), the loose refs
// under the directory refs (a git dir's) outside the prefixes namespaces that hold an
// object id: a git pack-refs --all in the run moves them into packed-refs, where they
// are then lines the launch's packed-refs had not (attack review 35 F4: before, the
// pass removed them, and the refs were gone; jj's refs/jj/keep/ keep its commits from
// gc). A directory git would refuse too (a symlink, too many refs) gives none.
func looseRefsOutside(refs string, namespaces []string) []string {
	ents, err := readDirCapped(refs)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		name := "refs/" + e.Name()
		if slices.ContainsFunc(namespaces, func(ns string) bool { return name == strings.TrimSuffix(ns, "/") || strings.HasPrefix(name, ns) }) || !e.IsDir() {
			continue
		}
		loose, err := cleanup.LooseRefs(filepath.Join(refs, e.Name()), maxPackedKept)
		if err != nil {
			continue
		}
		for _, l := range loose {
			rel, content, _ := strings.Cut(l, "\x00")
			if oid := strings.TrimSpace(content); isHexOID(oid) {
				out = append(out, oid+" "+name+"/"+rel)
			}
		}
	}
	return out
}

// isHexOID reports whether s is a SHA-1 or SHA-256 object id in lower-case hex.
func isHexOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// packedRefsOutside returns the lines of the packed-refs file p for refs in none of
// namespaces (under refs/ or not: "<oid> main"), none when p is missing
// (cleanup.PackedRefLines' bounds).
func packedRefsOutside(p string, namespaces []string) ([]string, error) {
	return cleanup.PackedRefLines(p, maxPackedKept, func(ref string) bool {
		for _, ns := range namespaces {
			if strings.HasPrefix(ref, ns) {
				return false
			}
		}
		return true
	})
}
