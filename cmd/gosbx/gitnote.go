package main

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// hasGitWord reports whether s holds the word git, as in a command line or a shell
// script (git, /usr/bin/git, `cd x && git commit`), not inside another name (.git,
// gitk, legit, git-lfs): "git" with no name byte ([A-Za-z0-9_.-]) on either side. A
// loop, not a regexp: a package-level regexp is compiled at every start of gosbx
// (docs/decisions.md, "Speed, sixth attempt: the launcher's start").
func hasGitWord(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "git" && (i == 0 || !nameByte(s[i-1])) && (i+3 == len(s) || !nameByte(s[i+3])) {
			return true
		}
	}
	return false
}

// nameByte is a byte that continues a command or file name: [A-Za-z0-9_.-].
func nameByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '.' || b == '-'
}

// gitNote is the note for a command of spec that failed after running git while
// the repository metadata was bound read-only (git mode gitMode, "" the default
// readonly): git says only "Read-only file system" (index.lock), with no word that the
// policy made it so or how to allow commits. Detection is the command line naming git
// (args[0], or a word of a shell's script): cheap, read from the spec, asked only after
// a failure; a git run by a program that does not name it (make, a script file) gets
// no note. "" otherwise.
func gitNote(spec *config.Config, gitMode string) string {
	if gitMode == policy.GitCommit || spec.Process == nil || spec.Linux == nil {
		return ""
	}
	var ro []string
	for _, p := range spec.Linux.ReadonlyPaths {
		if filepath.Base(p) == ".git" || strings.Contains(p, "/.git/worktrees/") {
			ro = append(ro, p)
		}
	}
	if len(ro) == 0 || !slices.ContainsFunc(spec.Process.Args, hasGitWord) {
		return ""
	}
	return "gosbx: note: the command ran git, and the repository metadata (" + strings.Join(shownAll(ro[:min(len(ro), 3)]), ", ") +
		") is read-only in this sandbox (the policy's git: readonly, the default): git add, commit, checkout and stash " +
		"fail with \"Read-only file system\". To allow them (hooks and config stay read-only): a policy file with " +
		"`extends: agent` and `filesystem: {git: commit}`, passed as --policy FILE (see README, Policies)"
}

// shownAll is policy.Shown of each of ss.
func shownAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = policy.Shown(s)
	}
	return out
}
