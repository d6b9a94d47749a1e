package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of attack review 36's session findings F1, F2, F6 (git: commit sessions).

// hostMergeRepo makes the workspace a repository whose branches main and side
// conflict on tracked.txt, main checked out.
func (e *sessionEnv) hostMergeRepo() {
	e.t.Helper()
	id := []string{"-c", "user.name=h", "-c", "user.email=h@h"}
	e.newRepo(e.ws, "base")
	e.hostGit(e.ws, "tag", "v1")
	e.hostGit(e.ws, "checkout", "-q", "-b", "side")
	must(e.t, os.WriteFile(filepath.Join(e.ws, "tracked.txt"), []byte("side\n"), 0o644))
	e.hostGit(e.ws, append(id, "commit", "-qam", "side")...)
	e.hostGit(e.ws, "checkout", "-q", "main")
	must(e.t, os.WriteFile(filepath.Join(e.ws, "tracked.txt"), []byte("main\n"), 0o644))
	e.hostGit(e.ws, append(id, "commit", "-qam", "main")...)
}

// hostMerge starts a merge of side on the host, which stops at its conflict.
func (e *sessionEnv) hostMerge() {
	e.t.Helper()
	if out, err := e.hostGitOut(e.ws, "-c", "user.name=h", "-c", "user.email=h@h", "merge", "side"); err == nil {
		e.t.Fatalf("the merge did not conflict: %s", out)
	}
}

// TestSessionCommandWorktreeStaysNew: a linked worktree a request adds stays the
// session's at every later request: the config.worktree (core.fsmonitor) and the gitdir
// a later request plants in its entry are removed after that request, and the host's
// git status in the worktree runs nothing (attack review 36 F1: the pass after the first
// request took the entry as "known", so the second request's plant stayed and the host's
// git ran it).
func TestSessionCommandWorktreeStaysNew(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "c1")
		e.hostGit(e.ws, "config", "extensions.worktreeConfig", "true")
		marks := filepath.Join(e.base, "marks")
		must(t, os.Mkdir(marks, 0o755))
		e.chown(marks)
		victim := filepath.Join(e.base, "victim")
		must(t, os.Mkdir(victim, 0o755))
		e.chown(victim)
		e.start("w", "--policy", e.commitPolicy())
		entry := filepath.Join(e.ws, ".git", "worktrees", "x")
		plant := func(n string) string {
			return `printf '[core]\n\tfsmonitor = "echo ran > ` + marks + `/` + n + `; false #"\n' > .git/worktrees/x/config.worktree`
		}
		mustSucceed(t, e.in("w", nil, `git worktree add -q .wt/x && `+plant("1")), "request 1")
		for i, script := range []string{plant("2"), "echo " + victim + "/.git > .git/worktrees/x/gitdir", plant("3"), "true"} {
			r := e.in("w", nil, script)
			mustSucceed(t, r, "a later request")
			if _, err := os.Lstat(filepath.Join(entry, "config.worktree")); err == nil {
				t.Errorf("request %d: the config.worktree a request wrote into the worktree a request added is there after it\n%v", i+2, r)
			}
			if b, err := os.ReadFile(filepath.Join(entry, "gitdir")); err == nil && strings.Contains(string(b), victim) {
				t.Errorf("request %d: the worktree's gitdir names %s after it\n%v", i+2, victim, r)
			}
			e.hostGitOut(filepath.Join(e.ws, ".wt", "x"), "status", "--short")
			if ents, _ := os.ReadDir(marks); len(ents) > 0 {
				t.Fatalf("request %d: the host's git status in the worktree ran the command's core.fsmonitor (%s)\n%v", i+2, ents[0].Name(), r)
			}
		}
		r := e.gosbx("session", "stop", "w")
		mustSucceed(t, r, "stop")
		e.hostGitOut(filepath.Join(e.ws, ".wt", "x"), "status", "--short")
		if ents, _ := os.ReadDir(marks); len(ents) > 0 {
			t.Errorf("after stop: the host's git ran the command's core.fsmonitor\n%v", r)
		}
	})
}

// TestSessionWarningKeepsHostMerge: a request that leaves a warning (a sparse 600 MiB
// file in the Git LFS store, which no pass checks) does not make the next request undo
// the merge the user started on the host meanwhile; a MERGE_HEAD a later request
// rewrites is still removed (attack review 36 F2: any failure line of a pass made the
// next request judge the host's work against the stale baselines: MERGE_HEAD removed,
// the merge committed with one parent).
func TestSessionWarningKeepsHostMerge(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.hostMergeRepo()
		e.start("m", "--policy", e.commitPolicy())
		r := e.in("m", nil, `mkdir -p .git/lfs/objects/aa/bb && truncate -s 600M .git/lfs/objects/aa/bb/aabb$(printf "%060d" 0)`)
		mustSucceed(t, r, "request 1")
		if !strings.Contains(r.stderr, "WARNING") {
			t.Fatalf("request 1 left no warning\n%v", r)
		}
		e.hostMerge()
		r = e.in("m", nil, "true")
		mustSucceed(t, r, "request 2")
		for _, f := range []string{"MERGE_HEAD", "MERGE_MSG"} {
			if _, err := os.Lstat(filepath.Join(e.ws, ".git", f)); err != nil {
				t.Errorf(".git/%s of the host's merge is gone after the request that followed a warning: %v\n%v", f, err, r)
			}
		}
		if strings.Contains(r.stderr, "MERGE") {
			t.Errorf("request 2 blamed the session for the host's merge\n%v", r)
		}
		r = e.in("m", nil, `echo 0000000000000000000000000000000000000000 > .git/MERGE_HEAD`)
		mustSucceed(t, r, "request 3")
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "MERGE_HEAD")); err == nil {
			t.Errorf("the MERGE_HEAD request 3 rewrote is there after it\n%v", r)
		}
	})
}

// TestSessionSupervisorKilledKeepsHostGit: when a session's supervisor is killed, its
// init's cleanup leaves the user's git work since the start (a merge in progress, a tag
// moved with tag -f, a new tag) and still removes what stays wrong whoever made it (a
// FIFO a background process put in .git after the last pass) (attack review 36 F6:
// the init ran the start's baselines: MERGE_HEAD removed, the tag put back).
func TestSessionSupervisorKilledKeepsHostGit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.hostMergeRepo()
		e.start("k", "--policy", e.commitPolicy())
		mustSucceed(t, e.in("k", nil, "true"), "request 1")
		e.hostMerge()
		e.hostGit(e.ws, "tag", "-f", "v1", "main")
		e.hostGit(e.ws, "tag", "mine")
		mustSucceed(t, e.in("k", nil, "true"), "request 2")
		fifo := filepath.Join(e.ws, ".git", "planted")
		mustSucceed(t, e.in("k", nil, `(sleep 0.3; mkfifo .git/planted; exec sleep 1000) </dev/null >/dev/null 2>&1 &`), "request 3")
		if !waitPath(fifo, false, 20*time.Second) {
			t.Fatal("the background process made no FIFO")
		}
		main, err := e.hostGitOut(e.ws, "rev-parse", "main")
		must(t, err)
		must(t, syscall.Kill(e.info("k").Pid, syscall.SIGKILL))
		r := e.gosbx("session", "ls")
		mustSucceed(t, r, "session ls after the kill")
		if !strings.Contains(r.stderr, "session k: its supervisor is gone") {
			t.Errorf("session ls does not say it cleaned up\n%v", r)
		}
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "MERGE_HEAD")); err != nil {
			t.Errorf("the host's merge in progress is gone after the supervisor's death: %v\n%v", err, r)
		}
		if v1, err := e.hostGitOut(e.ws, "rev-parse", "v1"); err != nil || v1 != main {
			t.Errorf("tag v1 the user moved to %s is %s after the supervisor's death (%v)\n%v", main, v1, err, r)
		}
		if _, err := e.hostGitOut(e.ws, "rev-parse", "--verify", "-q", "mine"); err != nil {
			t.Errorf("the user's tag mine is gone after the supervisor's death\n%v", r)
		}
		if _, err := os.Lstat(fifo); err == nil {
			t.Errorf("the FIFO a background process put in .git is there after the supervisor's death\n%v", r)
		}
	})
}

// TestSessionKeepsHostMergeBeforeFirstRequest: a merge the user starts on the host
// between session start and the first request is that request's baseline too (before,
// only a pass retook baselines, and the first request judged the merge as the
// session's: MERGE_HEAD removed).
func TestSessionKeepsHostMergeBeforeFirstRequest(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.hostMergeRepo()
		e.start("f", "--policy", e.commitPolicy())
		e.hostMerge()
		r := e.in("f", nil, "true")
		mustSucceed(t, r, "request 1")
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "MERGE_HEAD")); err != nil {
			t.Errorf("the host's merge started before the first request is gone after it: %v\n%v", err, r)
		}
		r = e.gosbx("session", "stop", "f")
		mustSucceed(t, r, "stop")
		if _, err := os.Lstat(filepath.Join(e.ws, ".git", "MERGE_HEAD")); err != nil {
			t.Errorf("the host's merge is gone after session stop: %v\n%v", err, r)
		}
	})
}
