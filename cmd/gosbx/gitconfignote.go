package main

import (
	"slices"
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// gitConfigNote is the note for a command of spec that failed after running a git
// command that writes the repository's own config (gitConfigWrite: git config KEY
// VALUE, --unset..., git remote add/set-url...): .git/config is read-only under either
// git mode, and git says only "could not write config file .git/config: Device or
// resource busy" (git: commit binds the file read-only, and git's rename onto a mount
// point fails with EBUSY) or "Read-only file system" (git: readonly). It says why (the
// host's git runs programs a repository's config names) and what works inside: git -c,
// or the sandbox's own global config. Only when the policy guards a repository
// (spec's read-only paths name a .git). "" otherwise.
func gitConfigNote(spec *config.Config, gitMode string) string {
	if spec.Process == nil || spec.Linux == nil || !slices.ContainsFunc(gitInvocations(spec.Process.Args), gitConfigWrite) {
		return ""
	}
	if !slices.ContainsFunc(spec.Linux.ReadonlyPaths, func(p string) bool { return strings.Contains(p, ".git") }) {
		return ""
	}
	errno := "\"Read-only file system\": the policy's git: readonly, the default, binds the whole .git read-only"
	if gitMode == policy.GitCommit {
		errno = "\"Device or resource busy\": git: commit binds .git/config read-only, and git's rename onto it fails so"
	}
	return "gosbx: note: the command ran git to change the repository's config (.git/config), which is read-only in this sandbox (" +
		errno + "), under git: commit too: a repository's config names programs the host's git runs (core.hooksPath, " +
		"core.fsmonitor, aliases, filters), so no command inside may change it. Inside, give a setting for one command with " +
		"git -c KEY=VALUE ..., or for this sandbox with git config --global KEY VALUE (its private HOME, not yours); " +
		"to keep it in the repository, run git config outside the sandbox"
}

// gitConfigWrite reports whether the git command words (a subcommand and the words
// after it, gitInvocations) write the repository's own config: git config with a value
// or a writing option, and not another file (--global, --system, --file, --blob); git
// remote add, rename, remove, set-url, set-branches. A heuristic for a note: a
// shell's words after the command count as its arguments.
func gitConfigWrite(words []string) bool {
	if len(words) == 0 {
		return false
	}
	rest := words[1:]
	switch words[0] {
	case "remote":
		return len(rest) > 0 && slices.Contains([]string{"add", "rename", "remove", "rm", "set-url", "set-branches"}, rest[0])
	case "config":
	default:
		return false
	}
	positional := 0
	for _, w := range rest {
		switch {
		case slices.Contains([]string{"--global", "--system", "--file", "-f", "--blob", "--get", "--get-all", "--get-regexp",
			"--get-urlmatch", "--get-color", "--get-colorbool", "--list", "-l"}, w) || strings.HasPrefix(w, "--file=") || strings.HasPrefix(w, "--blob="):
			return false
		case slices.Contains([]string{"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"}, w):
			return true
		case positional == 0 && slices.Contains([]string{"get", "list"}, w):
			return false // git 2.46's subcommands
		case positional == 0 && slices.Contains([]string{"set", "unset", "rename-section", "remove-section", "edit"}, w):
			return true
		case !strings.HasPrefix(w, "-"):
			positional++
		}
	}
	return positional >= 2
}

// gitInvocations returns, for each git run that args name (as gitSubcommands finds
// them), its subcommand and the words after it up to the next git.
func gitInvocations(args []string) [][]string {
	out := gitWordRuns(args)
	for i := 1; i < len(args); i++ {
		if f := args[i-1]; len(f) > 1 && f[0] == '-' && f[1] != '-' && strings.Contains(f, "c") {
			out = append(out, gitWordRuns(strings.FieldsFunc(args[i], func(r rune) bool { return strings.ContainsRune(" \t\n;&|()`'\"{}<>$", r) }))...)
		}
	}
	return out
}

// gitWordRuns is gitInvocations of a list of words.
func gitWordRuns(words []string) [][]string {
	var out [][]string
	for i := 0; i < len(words); i++ {
		if words[i] != "git" && !strings.HasSuffix(words[i], "/git") {
			continue
		}
		for j := i + 1; j < len(words); j++ {
			w := words[j]
			if slices.Contains(gitOptArg, w) {
				j++
				continue
			}
			if !strings.HasPrefix(w, "-") {
				end := j + 1
				for end < len(words) && words[end] != "git" && !strings.HasSuffix(words[end], "/git") {
					end++
				}
				out = append(out, words[j:end])
				i = end - 1
				break
			}
		}
	}
	return out
}
