package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// gitNote is the note for a command of spec that failed after running a git
// subcommand that writes the repository (gitWrites) while the repository metadata was
// bound read-only (git mode gitMode, "" the default readonly): git says only "Read-only
// file system" (index.lock), with no word that the policy made it so or how to allow
// commits. Detection is the command line naming git and the subcommand (args, or the
// words of a shell's script): cheap, read from the spec, asked only after a failure; a
// git run by a program that does not name it (make, a script file) gets no note, and
// neither does a read-only subcommand whose non-zero exit is an answer (git diff
// --quiet, git grep -q) or a failure of its own (git ls-remote). A linked worktree's
// .git file is named by the git dirs it stands for (policy.GitDirsOf): git's error
// names those. "" otherwise.
func gitNote(spec *config.Config, gitMode string) string {
	if gitMode == policy.GitCommit || spec.Process == nil || spec.Linux == nil {
		return ""
	}
	var ro []string
	for _, p := range spec.Linux.ReadonlyPaths {
		if filepath.Base(p) == ".git" || strings.Contains(p, "/.git/worktrees/") {
			for _, d := range policy.GitDirsOf(p) {
				if !slices.Contains(ro, d) {
					ro = append(ro, d)
				}
			}
		}
	}
	if len(ro) == 0 || !slices.ContainsFunc(gitSubcommands(spec.Process.Args), gitWrites) {
		return ""
	}
	return "gosbx: note: the command ran git, and the repository metadata (" + strings.Join(shownAll(ro[:min(len(ro), 3)]), ", ") +
		") is read-only in this sandbox (the policy's git: readonly, the default): git add, commit, checkout and stash " +
		"fail with \"Read-only file system\". To allow them (hooks and config stay read-only; commits get your user.name " +
		"and user.email from your git config, not the file itself): a policy file with `extends: agent` and `filesystem: {git: commit}`, passed " +
		"as --policy FILE (see README, Policies)"
}

// gitWriting are the git subcommands that write the repository's metadata (index,
// objects, refs, logs, stash): the ones git: readonly makes fail. config and remote
// are not among them: they write .git/config, which git: commit keeps read-only too.
var gitWriting = []string{"add", "am", "bisect", "branch", "checkout", "cherry-pick", "commit", "commit-tree",
	"fetch", "gc", "hash-object", "init", "maintenance", "merge", "mv", "notes", "pack-refs", "prune", "pull",
	"push", "rebase", "reflog", "repack", "replace", "reset", "restore", "revert", "rm", "sparse-checkout",
	"stash", "submodule", "switch", "symbolic-ref", "tag", "update-index", "update-ref", "worktree", "write-tree"}

func gitWrites(sub string) bool { return slices.Contains(gitWriting, sub) }

// gitOptArg are git's global options (git(1), before the subcommand) that take their
// value as the next word.
var gitOptArg = []string{"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--exec-path", "--list-cmds"}

// gitSubcommands returns the subcommand of each git run that args name: in args
// themselves (each one word), and in a shell's script (the word after -c, -lc, -ec...,
// split at blanks, quotes and the shell's separators): a word git (or a path ending in
// /git) followed, after git's global options, by the subcommand. A heuristic for a
// note, never a decision of the sandbox.
func gitSubcommands(args []string) []string {
	subs := gitSubs(args)
	for i := 1; i < len(args); i++ {
		if f := args[i-1]; len(f) > 1 && f[0] == '-' && f[1] != '-' && strings.Contains(f, "c") {
			subs = append(subs, gitSubs(strings.FieldsFunc(args[i], func(r rune) bool { return strings.ContainsRune(" \t\n;&|()`'\"{}<>$", r) }))...)
		}
	}
	return subs
}

// gitSubs is gitSubcommands of a list of words.
func gitSubs(words []string) []string {
	var subs []string
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
				subs = append(subs, w)
				i = j
				break
			}
		}
	}
	return subs
}

// gitOwnerNote is the note for a root caller's command that ran git and failed while a
// read-only bind (--ro) holds a repository of the caller's: outside the workspace a
// root caller's files are seen as nobody's (uid 65534: host uid 0 has no id inside), so
// git refuses that repository ("detected dubious ownership", its safe.directory check).
// It names the fix, git's own: trusting the path for that run (git-config(1),
// safe.directory: the working tree's path, or the git dir's where git reads it as a
// remote). "" otherwise, and for a non-root caller (whose files are seen as its own).
func gitOwnerNote(spec *config.Config, callerUID int) string {
	if callerUID != 0 || spec.Process == nil || len(gitSubcommands(spec.Process.Args)) == 0 {
		return ""
	}
	var repos []string
	gitDir := ""
	for _, m := range spec.Mounts {
		if m.Type != "bind" || !slices.Contains(m.Options, "ro") || slices.Contains(m.Options, "idmap") {
			continue
		}
		g, bare := repoDirOf(m.Source)
		var st unix.Stat_t
		if g == "" || unix.Lstat(g, &st) != nil || st.Uid != uint32(callerUID) {
			continue
		}
		repos = append(repos, m.Destination)
		if !bare && gitDir == "" {
			gitDir = filepath.Join(m.Destination, ".git")
		}
	}
	if len(repos) == 0 {
		return ""
	}
	r, remote := policy.Shown(repos[0]), ""
	if gitDir != "" {
		remote = " (" + policy.Shown(gitDir) + " where git reads it as a remote: git fetch, clone)"
	}
	return "gosbx: note: the command ran git, and a read-only bind holds a repository of yours (" +
		strings.Join(shownAll(repos[:min(len(repos), 3)]), ", ") + "): a root caller's files outside the workspace are " +
		"owned by nobody (uid 65534) inside, so git refuses it (\"detected dubious ownership\"). If that is the error, " +
		"trust it for the run with the path git names: git -c safe.directory=" + r + remote + " ..., or --env GIT_CONFIG_COUNT=1 " +
		"--env GIT_CONFIG_KEY_0=safe.directory --env GIT_CONFIG_VALUE_0=PATH (README, \"The boundary\", row identity)"
}

// repoDirOf is the git dir of a repository at dir, whose owner git's safe.directory
// check compares: dir/.git (a directory or a worktree's .git file), or dir itself when
// it is a git dir (bare: a bare repository, or a .git bound alone, with HEAD and
// objects/); "" when neither.
func repoDirOf(dir string) (gitDir string, bare bool) {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
		return filepath.Join(dir, ".git"), false
	}
	if _, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil {
		return "", false
	}
	if st, err := os.Lstat(filepath.Join(dir, "objects")); err != nil || !st.IsDir() {
		return "", false
	}
	return dir, true
}

// shownAll is policy.Shown of each of ss.
func shownAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = policy.Shown(s)
	}
	return out
}
