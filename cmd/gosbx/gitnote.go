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
// names those. A subcommand git: commit refuses too (gitCommitRefused: git gc) is not
// sent there: the note says to run it outside. "" otherwise.
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
	var writes, refused []string
	for _, sub := range gitSubcommands(spec.Process.Args) {
		if gitWrites(sub) && !slices.Contains(writes, sub) {
			writes = append(writes, sub)
			if gitCommitRefused(sub) != "" {
				refused = append(refused, sub)
			}
		}
	}
	if len(ro) == 0 || len(writes) == 0 {
		return ""
	}
	head := "gosbx: note: the command ran git, and the repository metadata (" + strings.Join(shownAll(ro[:min(len(ro), 3)]), ", ") +
		") is read-only in this sandbox (the policy's git: readonly, the default)"
	var why []string
	for _, sub := range refused {
		why = append(why, "git "+sub+" writes "+gitCommitRefused(sub))
	}
	if len(refused) == len(writes) {
		// git: commit would not help: say so rather than send the user there
		return head + ", and " + strings.Join(why, "; ") + ", which stay read-only under git: commit too: run it outside the sandbox"
	}
	note := head + ": git add, commit, checkout and stash " +
		"fail with \"Read-only file system\". To allow them (hooks and config stay read-only; commits get your user.name " +
		"and user.email from your git config, not the file itself): a policy file with `extends: agent` and `filesystem: {git: commit}`, passed " +
		"as --policy FILE (see README, Policies)"
	if len(why) > 0 {
		note += "; not " + strings.Join(refused, ", ") + " (" + strings.Join(why, "; ") + ", read-only under git: commit too: run it outside the sandbox)"
	}
	return note
}

// gitCommitRefused is what the writing git subcommand sub writes that git: commit
// keeps read-only too, "" when git: commit lets it run (measured with git 2.39: gc,
// repack and maintenance update info/refs and objects/info/packs, commit-graph
// objects/info, sparse-checkout and a second init write config). A switch, not a map:
// no allocation at init.
func gitCommitRefused(sub string) string {
	switch sub {
	case "gc", "repack", "maintenance":
		return "info/refs and objects/info"
	case "commit-graph", "multi-pack-index":
		return "objects/info"
	case "sparse-checkout":
		return "config and info/sparse-checkout"
	case "init":
		return "config"
	}
	return ""
}

// gitWriting are the git subcommands that write the repository's metadata (index,
// objects, refs, logs, stash): the ones git: readonly makes fail. config and remote
// are not among them: they write .git/config, which git: commit keeps read-only too.
var gitWriting = []string{"add", "am", "bisect", "branch", "checkout", "cherry-pick", "commit", "commit-graph", "commit-tree",
	"fetch", "gc", "hash-object", "init", "maintenance", "merge", "multi-pack-index", "mv", "notes", "pack-refs", "prune", "pull",
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
	var subs []string
	for _, run := range gitInvocations(args) {
		subs = append(subs, run[0])
	}
	return subs
}

// gitOwnerNote is the note for a root caller's command that ran git and failed while a
// read-only bind (--ro) holds a repository of the caller's: outside the workspace a
// root caller's files are seen as nobody's (uid 65534: host uid 0 has no id inside), so
// git refuses that repository ("detected dubious ownership", its safe.directory check).
// It names a fix that works for each way git reads it (git-config(1), safe.directory):
// the repository itself (git -C REPO, its working tree's path) takes git -c or
// GIT_CONFIG_COUNT; read as a remote (fetch, pull, clone), its git dir's path must be
// in a config file, since git's local transport clears GIT_CONFIG_PARAMETERS and
// GIT_CONFIG_COUNT for the upload-pack it spawns (git's local_repo_env): the sandbox's
// own global config, in its private HOME. "" otherwise, and for a non-root caller
// (whose files are seen as its own).
func gitOwnerNote(spec *config.Config, callerUID int) string {
	if callerUID != 0 || spec.Process == nil || len(gitSubcommands(spec.Process.Args)) == 0 {
		return ""
	}
	var repos []string
	remote := ""
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
		if remote == "" {
			// the path git names for a remote: the git dir (a bare repository's own)
			remote = m.Destination
			if !bare {
				remote = filepath.Join(m.Destination, ".git")
			}
		}
	}
	if len(repos) == 0 {
		return ""
	}
	r := shellWord(repos[0])
	return "gosbx: note: the command ran git, and a read-only bind holds a repository of yours (" +
		strings.Join(shownAll(repos[:min(len(repos), 3)]), ", ") + "): a root caller's files outside the workspace are " +
		"owned by nobody (uid 65534) inside, so git refuses it (\"detected dubious ownership\"). If that is the error, " +
		"trust the path git names for the run. The repository itself (git -C " + r + "): git -c safe.directory=" + r +
		" ..., or --env GIT_CONFIG_COUNT=1 --env GIT_CONFIG_KEY_0=safe.directory --env GIT_CONFIG_VALUE_0=" + r +
		". Read as a remote (git fetch, pull, clone of it), git drops -c and GIT_CONFIG_* for the process that serves it: " +
		"add its git dir to the sandbox's own global config (its HOME is private; yours is not changed) in the same command: " +
		"-- sh -c '" + safeDirAdd(remote) + " && git fetch ...' (README, \"The boundary\", row identity)"
}

// safeDirAdd is the shell command that trusts dir in the sandbox's global git config,
// as it is written between the single quotes of sh -c '...' (each single quote in dir
// closed, escaped and reopened).
func safeDirAdd(dir string) string {
	return "git config --global --add safe.directory " + strings.ReplaceAll(shellWord(dir), "'", `'\''`)
}

// shellWord is p as one word of a POSIX shell command line: as it is when it holds only
// characters no shell treats specially, else in double quotes with ", $, ` and \
// escaped. A path with a control byte is shown quoted (policy.Shown) instead: a note
// never prints one raw.
func shellWord(p string) string {
	if policy.Shown(p) != p {
		return policy.Shown(p)
	}
	plain := true
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_./@%+=:,-", c)) {
			plain = false
			break
		}
	}
	if plain {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range p {
		if strings.ContainsRune("\"$`\\", c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	b.WriteByte('"')
	return b.String()
}

// gitIdentNote is the note for a command that ran a git subcommand that records an
// identity (commit, merge, tag, ...: gitIdentSubs) and failed under git: commit while
// the sandbox sets no full git identity (GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL,
// GIT_COMMITTER_NAME, GIT_COMMITTER_EMAIL in spec's environment): git then asks for
// one ("Author identity unknown ... git config --global user.email"), advice that is
// lost inside, where HOME is private. It says where gosbx takes the identity from (the
// caller's git config on the host, user.name and user.email only: policy.GitIdentity)
// and the two fixes that work. "" otherwise.
func gitIdentNote(spec *config.Config, gitMode string) string {
	if gitMode != policy.GitCommit || spec.Process == nil || !slices.ContainsFunc(gitSubcommands(spec.Process.Args), gitIdentSub) {
		return ""
	}
	var missing []string
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"} {
		if !slices.ContainsFunc(spec.Process.Env, func(kv string) bool { v, ok := strings.CutPrefix(kv, k+"="); return ok && v != "" }) {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "gosbx: note: the command ran git, and this sandbox sets no full git identity (" + strings.Join(missing, ", ") +
		" unset): git: commit takes user.name and user.email from your git config on the host (~/.gitconfig, " +
		"~/.config/git/config, read when the sandbox starts) and found none there. If git said \"Author identity unknown\", " +
		"its advice does not last: git config --global inside writes the sandbox's private HOME. Set them on the host, " +
		"as the user who runs gosbx: git config --global user.name NAME; git config --global user.email EMAIL. Or give them " +
		"for the run: --env GIT_AUTHOR_NAME=NAME --env GIT_AUTHOR_EMAIL=EMAIL --env GIT_COMMITTER_NAME=NAME " +
		"--env GIT_COMMITTER_EMAIL=EMAIL"
}

// gitIdentSubs are the git subcommands that record an author or committer (a commit,
// an annotated tag, a note, a stash, a reflog entry's committer): the ones that fail
// without an identity.
var gitIdentSubs = []string{"am", "cherry-pick", "commit", "commit-tree", "merge", "notes", "pull", "rebase", "revert", "stash", "tag"}

func gitIdentSub(sub string) bool { return slices.Contains(gitIdentSubs, sub) }

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

// gitCommitLaunchNote is the note printed before a command runs with git: commit when
// stderr is a terminal (a person is there to read it), "" otherwise: the cleanup that
// removes what the command plants in a git dir (a commondir, config.worktree, symlinks)
// runs only when the command has ended, and a host git run in the repository
// meanwhile (an editor's polling, a git-aware prompt) follows it (attack review 29 F4;
// docs/decisions.md "Attack review 29: commit mode's index, objects and refs").
func gitCommitLaunchNote(gitMode string, stderrTTY bool) string {
	if gitMode != policy.GitCommit || !stderrTTY {
		return ""
	}
	return "gosbx: note: git: commit: run no git in this repository (an editor's git integration included) until the command ends; what it plants in .git is removed only then"
}

// isTerminal reports whether fd is a terminal (TCGETS answers: isatty(3)).
func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}
