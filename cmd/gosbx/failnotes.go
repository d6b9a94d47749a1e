package main

import (
	"slices"
	"strings"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// gitFailureNotes are the notes, one line each without its newline, for a command of
// spec that exited non-zero, under the git mode gitMode of its policy, for a caller of
// uid callerUID: the git: readonly note (gitNote), a root caller's --ro repository
// (gitOwnerNote), the missing identity (gitIdentNote), a local remote outside the
// sandbox (gitRemoteNote) and a change of the repository's config (gitConfigNote). gosbx exec and a session's supervisor both give them, so a
// command says the same in a session as alone (trial finding: a session's git failures
// came with git's words only); a session's gitMode and caller are its start's.
//
// In a session (inSession) a fix that is a flag of the policy's (--policy, --ro) is
// said as one of session start's: exec --session refuses those flags, and the session
// keeps the policy it started with.
func gitFailureNotes(spec *config.Config, gitMode string, creds []string, callerUID int, inSession bool) []string {
	var out []string
	for _, n := range []string{gitNote(spec, gitMode), gitOwnerNote(spec, callerUID), gitIdentNote(spec, gitMode), gitRemoteNote(spec, creds),
		gitConfigNote(spec, gitMode)} {
		if n == "" {
			continue
		}
		if inSession {
			n = strings.Replace(n, "passed as --policy FILE (see README, Policies)", "passed as --policy FILE to gosbx session start "+
				"(a session keeps the policy it started with: stop it and start it again; see README, Policies)", 1)
			n = strings.Replace(n, "to fetch from it, add --ro ", "to fetch from it, start the session again (it keeps the policy it started with) with --ro ", 1)
		}
		out = append(out, n)
	}
	return out
}

// gitRemoteSubs are the git subcommands that read or write a remote repository named in
// the repository's config.
var gitRemoteSubs = []string{"fetch", "pull", "push", "ls-remote", "remote"}

// gitRemoteNote is the note for a command of spec that ran git fetch, pull, push,
// ls-remote or remote (update) and failed while a remote of the repository at its
// working directory is a local path the sandbox does not show (policy.HiddenLocalRemotes):
// git says only "'PATH' does not appear to be a git repository". It names the fix as
// gosbx's not-found hints do (--ro PATH). A push is not fixed so: a local remote is
// read-only inside even under --rw (its hooks would run on the host), so the note says
// to push outside. "" otherwise.
func gitRemoteNote(spec *config.Config, creds []string) string {
	if spec.Process == nil {
		return ""
	}
	subs := gitSubcommands(spec.Process.Args)
	if !slices.ContainsFunc(subs, func(s string) bool { return slices.Contains(gitRemoteSubs, s) }) {
		return ""
	}
	hidden := policy.HiddenLocalRemotes(spec, spec.Process.Cwd, creds)
	if len(hidden) == 0 {
		return ""
	}
	var named, flags []string
	for _, r := range hidden[:min(len(hidden), 3)] {
		named = append(named, policy.Shown(r.Name)+" ("+policy.Shown(r.Path)+")")
		flags = append(flags, "--ro "+shellWord(r.Path))
	}
	note := "gosbx: note: the command ran git, and the repository's remote " + strings.Join(named, ", ") +
		" is a local path outside the sandbox, which git inside cannot see (\"does not appear to be a git repository\"): " +
		"to fetch from it, add " + strings.Join(flags, " ")
	if slices.Contains(subs, "push") {
		note += "; a push to it cannot run inside (a local remote stays read-only there: its hooks would run on the host): push outside the sandbox"
	}
	return note
}

// causeKnown reports whether gosbx itself ended the command, and has said so: the
// timeout, or a limit (the memory limit's OOM kill, a fork the pids limit refused). The
// notes that guess why a command failed (a read-only git dir, a toolchain the sandbox
// does not show, a write outside the workspace) are then left out: after an OOM kill, a
// note naming python3's toolchain sent a new user after the wrong cause (new-user trial
// 2026-12-03 F5).
func causeKnown(r *nsinit.Result) bool {
	return r.TimedOut || r.OOMKilled || r.LimitHit != ""
}
