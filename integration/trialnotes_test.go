package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The trial's note findings (trial of a0d3bc5): gosbx's git notes in a session's
// commands, as in gosbx exec's; a local git remote outside the sandbox.

// startHome is start with HOME at home for the session's start (the git identity is
// read from the caller's git config then).
func (e *sessionEnv) startHome(home, name string, flags ...string) {
	e.t.Helper()
	ctx := e.limitCtx(runLimit)
	args := append([]string{"session", "start", name, "--workspace", e.ws, "--die-with-owner", strconv.Itoa(os.Getpid())}, flags...)
	cmd := e.rawCommand(ctx, args...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "HOME="+home)
	e.scope.wrap(cmd)
	mustSucceed(e.t, e.runCmd(ctx, cmd), "session start "+name)
}

// gitIdentNoteHead and gitReadonlyNoteHead begin gosbx exec's notes (gitnotes_test.go
// has the whole identity note).
const (
	gitIdentNoteHead    = "gosbx: note: the command ran git, and this sandbox sets no full git identity"
	gitReadonlyNoteHead = "gosbx: note: the command ran git, and the repository metadata ("
)

// A session's failed git commands get the notes gosbx exec gives, under the session's
// policy: git add under the default git: readonly (the note pointing at git: commit),
// git commit under git: commit with no identity in the caller's git config at the
// session's start. The one-shot exec gives the same note; the host's repository is
// unchanged by the failures (nothing committed).
func TestGitNotesInSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		home := filepath.Join(e.base, "home") // no git config at all
		must(t, os.Mkdir(home, 0o755))
		e.chown(home)
		e.writeWS("tracked.txt", "v2\n", 0o644)

		one := e.sh(nil, "git add -A")
		e.startHome(home, "ro")
		in := e.in("ro", nil, "git add -A")
		for what, r := range map[string]result{"gosbx exec": one, "exec --session": in} {
			if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") || !strings.Contains(r.stderr, gitReadonlyNoteHead) ||
				!strings.Contains(r.stderr, "`filesystem: {git: commit}`") {
				t.Errorf("%s -- git add -A under git: readonly: %v\nwant git's failure and gosbx's note naming git: commit", what, r)
			}
		}
		// exec --session refuses --policy: the session's note names session start
		if !strings.Contains(in.stderr, "passed as --policy FILE to gosbx session start") || strings.Contains(one.stderr, "session start") {
			t.Errorf("the readonly note's fix: in the session %q, alone %q; want session start named in the session only", in.stderr, one.stderr)
		}

		pol := e.commitPolicy()
		one = e.runHome(home, []string{"--policy", pol}, "git commit -qam x")
		e.startHome(home, "c2", "--policy", pol)
		in = e.in("c2", nil, "git commit -qam x")
		for what, r := range map[string]result{"gosbx exec": one, "exec --session": in} {
			if r.code == 0 || !strings.Contains(r.stderr, "Author identity unknown") || !strings.Contains(r.stderr, gitIdentNoteHead) ||
				!strings.Contains(r.stderr, "--env GIT_AUTHOR_NAME=NAME") {
				t.Errorf("%s -- git commit with no identity: %v\nwant git's refusal and gosbx's identity note", what, r)
			}
		}
		if out, err := e.hostGitOut(e.ws, "log", "-1", "--format=%s"); err != nil || strings.TrimSpace(out) != "host-commit" {
			t.Errorf("the host's last commit: %q %v; want host-commit", out, err)
		}
		// a success gets no note
		r := e.in("c2", []string{"--env", "GIT_AUTHOR_NAME=a", "--env", "GIT_AUTHOR_EMAIL=a@a", "--env", "GIT_COMMITTER_NAME=a",
			"--env", "GIT_COMMITTER_EMAIL=a@a"}, "git commit -qam inside-"+e.id)
		if r.code != 0 || strings.Contains(r.stderr, "gosbx: note") {
			t.Errorf("git commit with an identity in session c2: %v; want exit 0 and no note", r)
		}
	})
}

// A local remote outside the sandbox: git fetch fails with git's "does not appear to be
// a git repository", and gosbx's note names the remote and --ro for its path; with that
// flag git reaches it (the not-found error is gone). A session's fetch gets the same
// note.
func TestGitHiddenLocalRemoteNote(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		origin := filepath.Join(e.base, "origin.git")
		e.newRepo(filepath.Join(e.base, "src"), "origin-commit")
		must(t, os.Mkdir(origin, 0o755))
		e.chown(origin)
		e.hostGit(e.base, "clone", "-q", "--bare", filepath.Join(e.base, "src"), origin)
		e.newRepo(e.ws, "ws-commit")
		e.hostGit(e.ws, "remote", "add", "origin", origin)
		pol := []string{"--policy", e.commitPolicy()}
		want := "gosbx: note: the command ran git, and the repository's remote origin (" + origin + ") is a local path outside the sandbox"
		r := e.sh(pol, "git fetch -q origin")
		if r.code == 0 || !strings.Contains(r.stderr, "does not appear to be a git repository") || !strings.Contains(r.stderr, want) ||
			!strings.Contains(r.stderr, "to fetch from it, add --ro "+origin+"\n") {
			t.Fatalf("git fetch of a local remote outside the sandbox: %v\nwant git's error and the note %q ... --ro %s", r, want, origin)
		}
		r = e.sh(append(pol, "--ro", origin), "git fetch -q origin")
		if strings.Contains(r.stderr, "does not appear to be a git repository") || strings.Contains(r.stderr, want) {
			t.Errorf("git fetch with the note's --ro: %v; want the remote seen (no not-found error, no note)", r)
		}
		if c.uid != 0 {
			// a root caller's --ro repository is nobody's inside (TestGitOwnerNoteRemoteFix)
			mustSucceed(t, r, "git fetch with the note's --ro")
		}
		e.start("f", pol...)
		r = e.in("f", nil, "git fetch -q origin")
		if r.code == 0 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "start the session again (it keeps the policy it started with) with --ro "+origin) {
			t.Errorf("git fetch in a session of a local remote outside it: %v\nwant the note %q, its fix on session start", r, want)
		}
	})
}

// After the memory limit's OOM kill of a shell whose foreground child still ran (the
// trial's command: /tmp filled past --memory, then ls), the leftover note does not call
// that child a background process nor send the user to a session: it says the command
// was killed by the memory limit. The raw init (the default launch) and the Go init
// (--net proxy takes it) alike; three runs each, as the child is not always caught
// running (nor always killed: the OOM killer may take head alone).
func TestLeftNoteAfterOOMKill(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	for _, mode := range [][]string{nil, {"--net", "proxy"}} {
		for i := 0; i < 3; i++ {
			r := s.sh(append([]string{"--memory", "64M"}, mode...), "head -c 100M /dev/zero > /tmp/big; echo wrote $?; ls -l /tmp/big")
			// the OOM killer may take head alone (ls then runs: exit 0) or the shell too
			// (137); either way the memory limit's note is there
			if (r.code != 137 && r.code != 0) || !strings.Contains(r.stderr, "memory limit") {
				t.Fatalf("%v: the trial's tmpfs fill under --memory 64M: %v; want 137 or 0 and the memory limit's note", mode, r)
			}
			if strings.Contains(r.stderr, "still ran when the command exited") || strings.Contains(r.stderr, "use a session") {
				t.Errorf("%v: after the OOM kill: %v; want no leftover note calling a foreground child a background process", mode, r)
			}
			if strings.Contains(r.stderr, "still ran when the command was killed") && !strings.Contains(r.stderr, "(SIGKILL, by the memory limit)") {
				t.Errorf("%v: the leftover note does not say the memory limit killed the command: %v", mode, r)
			}
		}
	}
}

// The exit line's cpu-usec has microseconds where the kernel counts them (cgroup v1's
// cpuacct.usage, in ns), not ticks: a short command's is above 0 and, as a tick count
// of a kernel at HZ 100, 250 or 1000 never is, not a multiple of 1000 (trial finding:
// "cpu-usec":0; cpuacct.usage_user gave multiples of 4000 here).
func TestCPUUsecResolution(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	var seen []int64
	for i := 0; i < 3; i++ {
		r := s.runStatus("--memory", "256M", "--", shellPath, "-c", "nproc >/dev/null; ls / >/dev/null")
		mustSucceed(t, r.result, "a short command under --memory")
		cpu, ok := num(exitEvent(t, r.events, r.raw), "cpu-usec")
		if !ok {
			t.Fatalf("no cpu-usec in the exit line: %s", r.raw)
		}
		if cpu > 0 && cpu%1000 != 0 {
			return
		}
		seen = append(seen, cpu)
	}
	t.Errorf("cpu-usec of three short commands: %v; want one above 0 and not a multiple of 1000 (a tick count)", seen)
}

// git config in the sandbox cannot change the repository's config under either git
// mode: git's bare errno ("Device or resource busy" under git: commit, whose bind of
// .git/config git's rename cannot replace) comes with gosbx's note saying why and what
// works inside (git -c, git config --global), and following it works; the host's
// .git/config is unchanged. A session's command gets the same note.
func TestGitConfigNoteCommitMode(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		cfg := filepath.Join(e.ws, ".git", "config")
		before, err := os.ReadFile(cfg)
		must(t, err)
		pol := []string{"--policy", e.commitPolicy()}
		const note = "gosbx: note: the command ran git to change the repository's config (.git/config), which is read-only in this sandbox"
		r := e.sh(pol, "git config core.editor vim")
		if r.code == 0 || !strings.Contains(r.stderr, "Device or resource busy") || !strings.Contains(r.stderr, note) ||
			!strings.Contains(r.stderr, "git -c KEY=VALUE") {
			t.Errorf("git config under git: commit: %v\nwant git's EBUSY and the note", r)
		}
		r = e.sh(nil, "git config core.editor vim")
		if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") || !strings.Contains(r.stderr, note) {
			t.Errorf("git config under git: readonly: %v\nwant git's EROFS and the note", r)
		}
		r = e.sh(pol, "git config --global core.editor vim && git config core.editor")
		if r.code != 0 || strings.TrimSpace(r.stdout) != "vim" || strings.Contains(r.stderr, "gosbx: note") {
			t.Errorf("the note's git config --global: %v; want vim and no note", r)
		}
		e.start("cfg", pol...)
		r = e.in("cfg", nil, "git config core.editor vim")
		if r.code == 0 || !strings.Contains(r.stderr, note) {
			t.Errorf("git config in a git: commit session: %v\nwant the note", r)
		}
		if after, err := os.ReadFile(cfg); err != nil || string(after) != string(before) {
			t.Errorf("the host's .git/config changed: %q -> %q (%v)", before, after, err)
		}
	})
}
