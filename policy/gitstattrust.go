package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gosbx/gosbx/nsinit/cleanup"
)

// statUntrusted reports whether the repository whose git dir is gd (its common dir's
// config for a linked worktree) sets core.trustctime false or core.checkStat minimal
// (git-config(1)): then git's stat cache no longer sees a change that keeps a file's
// inode, size and mtime, all of which the command controls (an in-place rewrite of the
// same size with its mtime put back; attack review 31 F11).
func (g *gitReads) statUntrusted(gd string) (bool, error) {
	c, err := g.commondirOf(gd)
	if err != nil {
		return false, err
	}
	if c != "" {
		gd = c
	}
	b, err := g.config(filepath.Join(gd, "config"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	entries, ok := parseGitConfig(string(b))
	if !ok {
		return false, fmt.Errorf("%s: does not parse as git config (git refuses it too)", filepath.Join(gd, "config"))
	}
	switch strings.ToLower(configLast(entries, "core", "trustctime")) {
	case "false", "no", "off", "0":
		return true, nil
	}
	return strings.ToLower(configLast(entries, "core", "checkstat")) == "minimal", nil
}

// guardStatTrust has the index of the read-only git dir gd written anew after every
// run, its cached stat data zeroed (cleanup.RemoveIndexBits with no launch stamps), when
// the repository trusts less than git's default stat data (statUntrusted): the host's
// next git status then hashes every tracked file and sees what the command rewrote in
// place. Commit mode does the same in guardIndexBits.
func (plan *gitPlan) guardStatTrust(gd string) error {
	untrusted, err := plan.reads.statUntrusted(gd)
	if err != nil {
		return errorf("protected", filepath.Join(gd, "config"), err, "cannot read the repository's core.trustctime and core.checkStat, so cannot tell whether git would see a file the command rewrites in place")
	}
	if !untrusted {
		return nil
	}
	hashLen := 20
	if format, err := plan.reads.objectFormat(gd); err != nil {
		return errorf("protected", filepath.Join(gd, "config"), err, "cannot read the repository's object format, so cannot guard its index")
	} else if format == "sha256" {
		hashLen = 32
	}
	p := filepath.Join(gd, "index")
	keep, err := cleanup.IndexHidden(p, hashLen)
	if err != nil {
		return errorf("protected", p, err, "cannot read the index's assume-unchanged and skip-worktree bits, so cannot write it anew after the run")
	}
	plan.cleanups = append(plan.cleanups, cleanup.Entry{Kind: cleanup.RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen})
	return nil
}
