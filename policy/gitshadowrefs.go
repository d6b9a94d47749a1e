package policy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// guardShadowRefs keeps the command from making a ref that git's ref lookup finds
// before a remote-tracking one (gitrevisions(7): <name>, refs/<name>, refs/tags/<name>,
// refs/heads/<name>, then refs/remotes/<name>): a tag origin/main, a branch
// origin/main, refs/origin/main or <gitdir>/origin/main would be what the host's
// `git reset --hard origin/main` checks out, with only git's "ambiguous" warning
// (attack review 31 F8; guardRemoteRefs keeps refs/remotes/ itself). For each remote
// (its remote-tracking refs at launch, and the remotes the repository's config
// names), what lies at <gitdir>/<remote>, refs/<remote>, refs/tags/<remote> and
// refs/heads/<remote> after the run is as at launch: a name not there then is removed
// (with all below it), a directory there keeps only its loose refs as they were (a
// moved one put back), and packed-refs lines for <prefix> or <prefix>/… not there at
// launch are removed; a ref that existed at launch (loose or packed, by name and id)
// is kept wherever it lives after the run, or put back (attack review 32 F2). The
// cost: a branch or tag the command makes named <remote>/x does not outlive the run.
func (plan *gitPlan) guardShadowRefs(gd string) error {
	remotes, err := plan.remoteNames(gd)
	if err != nil {
		return err
	}
	packedFile := filepath.Join(gd, "packed-refs")
	for _, r := range remotes {
		for _, base := range []string{"", "refs", "refs/tags", "refs/heads"} {
			q := filepath.Join(gd, base, r)
			st, err := os.Lstat(q)
			switch {
			case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
				// git never makes <gitdir>/<remote>: one found later is removed too
				plan.absentAfter(q, base == "")
			case err != nil:
				return errorf("protected", q, err, "cannot inspect this path, whose refs git would take for the remote-tracking refs of %s, so cannot guard it", r)
			}
			var loose []string
			if err == nil && (st.IsDir() || st.Mode().IsRegular()) {
				loose, err = cleanup.LooseRefs(q, maxPackedKept)
				if err != nil {
					return errorf("protected", q, err, "cannot read these refs, which git would take for the remote-tracking refs of %s, so cannot keep the command from moving them", r)
				}
				if st.IsDir() {
					plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveChangedRefs, Path: q, Keep: loose})
				}
			}
			if base == "" {
				continue
			}
			prefix := base + "/" + r
			packed, err := packedRefsUnder(packedFile, prefix)
			if err != nil {
				return errorf("protected", packedFile, err, "cannot read the repository's packed refs, so cannot guard the names that shadow its remote-tracking refs")
			}
			// the user's loose refs there at launch are kept too, by name and id,
			// wherever they live after the run: git pack-refs or gc inside moves them
			// into packed-refs (attack review 32 F2: the user's branches deleted)
			for _, l := range loose {
				rel, content, _ := strings.Cut(l, "\x00")
				oid := strings.TrimSpace(content)
				if strings.HasPrefix(oid, "ref:") {
					continue // a symbolic ref is never packed
				}
				ref := prefix
				if rel != "." {
					ref += "/" + rel
				}
				packed = append(packed, oid+" "+ref)
			}
			plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemovePackedRefs, Path: packedFile, Prefix: prefix, Keep: packed})
		}
	}
	return nil
}

// remoteNames are the remotes of the git dir gd: the first component of each
// remote-tracking ref at launch (loose and packed) and each remote its config names,
// sorted, each a plain path component.
func (plan *gitPlan) remoteNames(gd string) ([]string, error) {
	var out []string
	add := func(n string) {
		if n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00") && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if ents, err := readDirCapped(filepath.Join(gd, "refs", "remotes")); err == nil {
		for _, e := range ents {
			add(e.Name())
		}
	}
	packed, err := packedRefsUnder(filepath.Join(gd, "packed-refs"), "refs/remotes/")
	if err != nil {
		return nil, errorf("protected", filepath.Join(gd, "packed-refs"), err, "cannot read the repository's packed refs, so cannot guard its remote-tracking refs")
	}
	for _, l := range packed {
		ref := cleanup.PackedLineName(l)
		n, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/remotes/"), "/")
		add(n)
	}
	if b, err := plan.reads.config(filepath.Join(gd, "config")); err == nil {
		if entries, ok := parseGitConfig(string(b)); ok {
			for _, e := range entries {
				if e.section == "remote" && e.sub != "" {
					n, _, _ := strings.Cut(e.sub, "/")
					add(n)
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
