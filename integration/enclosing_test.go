package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A workspace inside a repository (issue 15, item 2): "mono" has a deinitialised
// submodule at svc/vendor/lib; with the workspace mono/svc, the command makes a
// repository at vendor/lib with core.fsmonitor set to a script of its own. The host's
// git status in mono (which recurses into a populated submodule path) must run nothing
// of it: the enclosing repository's submodule paths inside the writable tree are guarded
// like those of a repository below it.
func TestEnclosingRepoSubmoduleGuarded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, how := range []string{"workspace", "rw", "missing"} {
			t.Run(how, func(t *testing.T) {
				s := newSandbox(t, c)
				mono := filepath.Join(s.ws, "mono")
				src := filepath.Join(s.base, "libsrc")
				s.newRepo(src, "lib")
				s.newRepo(mono, "mono")
				must(t, os.MkdirAll(filepath.Join(mono, "svc"), 0o755))
				s.chown(filepath.Join(mono, "svc"))
				s.hostGit(mono, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "svc/vendor/lib")
				s.hostGit(mono, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "-m", "lib")
				s.hostGit(mono, "submodule", "deinit", "-q", "-f", "svc/vendor/lib")
				if how == "missing" {
					// not even its parent directory is there
					must(t, os.RemoveAll(filepath.Join(mono, "svc", "vendor")))
				}
				marker := filepath.Join(s.ws, "FSMONITOR-RAN") // the caller can write there
				svc := filepath.Join(mono, "svc")
				script := `cd "$1" || exit 3
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > hook.sh && chmod +x hook.sh
mkdir -p vendor/lib 2>/dev/null; git init -q vendor/lib 2>/dev/null && git -C vendor/lib config core.fsmonitor "$1/hook.sh" && echo PLANTED
mkdir -p vendor/other && git init -q vendor/other 2>/dev/null && echo OTHER
exit 0`
				var r result
				if how != "rw" {
					ctx := s.limitCtx(runLimit)
					cmd := s.rawCommand(ctx, "exec", "--workspace", svc, "--", shellPath, "-c", script, "_", svc, marker)
					r = s.runCmd(ctx, cmd)
				} else {
					// the workspace elsewhere, mono/svc a read-write bind
					other := filepath.Join(s.base, "elsewhere")
					must(t, os.Mkdir(other, 0o755))
					s.chown(other)
					ctx := s.limitCtx(runLimit)
					cmd := s.rawCommand(ctx, "exec", "--workspace", other, "--rw", svc, "--", shellPath, "-c", script, "_", svc, marker)
					r = s.runCmd(ctx, cmd)
				}
				mustSucceed(t, r, "the command")
				if strings.Contains(r.stdout, "PLANTED") {
					t.Errorf("the command made a repository at the enclosing repository's submodule path:\n%v", r)
				}
				if !strings.Contains(r.stdout, "OTHER") {
					t.Errorf("the rest of the tree was not writable:\n%v", r)
				}
				out, _ := s.hostGitOut(mono, "status")
				if _, err := os.Stat(marker); err == nil {
					t.Errorf("the host's git status in the enclosing repository ran the command's fsmonitor\n%s", out)
				}
			})
		}
	})
}

// A linked worktree of the enclosing repository lying in the workspace deeper than the
// scan for protected paths reaches: its .git file stays read-only, so the command cannot
// point it at a git dir of its own making, whose config the host's git would run there.
func TestEnclosingRepoWorktreeGuarded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mono := filepath.Join(s.ws, "mono")
		s.newRepo(mono, "mono")
		svc := filepath.Join(mono, "svc")
		must(t, os.MkdirAll(svc, 0o755))
		s.chown(svc)
		wt := filepath.Join(svc, "a", "b", "c", "d", "wt")
		s.hostGit(mono, "worktree", "add", "-q", "-b", "deep", wt)
		for d := filepath.Dir(wt); d != svc; d = filepath.Dir(d) {
			s.chown(d)
		}
		marker := filepath.Join(s.ws, "FSMONITOR-RAN")
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "exec", "--workspace", svc, "--", shellPath, "-c", `cd "$1" || exit 3
printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > hook.sh && chmod +x hook.sh
git init -q --bare evil.git && git --git-dir=evil.git config core.fsmonitor "$1/hook.sh" && git --git-dir=evil.git config core.bare false
(printf 'gitdir: %s/evil.git\n' "$1" > a/b/c/d/wt/.git) 2>/dev/null && echo REPOINTED
exit 0`, "_", svc, marker)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "the command")
		if strings.Contains(r.stdout, "REPOINTED") {
			t.Errorf("the command rewrote the enclosing repository's worktree .git file:\n%v", r)
		}
		out, _ := s.hostGitOut(wt, "status")
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the host's git status in the worktree ran the command's fsmonitor\n%s", out)
		}
	})
}

// The after-run cleanup does not depend on the launcher surviving (issue 15, item 1 B):
// gosbx is SIGKILLed while the command sleeps after planting .git/commondir (pointing at
// a git dir whose core.fsmonitor is the command's), and the sandbox's own cleanup is
// defeated (a fault build skips the init's; a command could cripple pid 1). The next
// launch, on another workspace, completes the journal the first left: the planted file
// is gone before its command runs, and the host's git status runs nothing planted.
func TestCleanupJournalAfterLauncherKilled(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		// fault: a fault build skips the init's own cleanup; prlimit: the command
		// lowers pid 1's RLIMIT_NOFILE to 0 itself (the attack of issue 15), which
		// defeats that cleanup wherever pid 1 is reachable
		// doctor: gosbx doctor, not a second launch, completes the journal
		for _, how := range []string{"fault", "prlimit", "doctor"} {
			t.Run(how, func(t *testing.T) { journalAfterKill(t, c, bin, how) })
		}
	})
}

func journalAfterKill(t *testing.T, c caller, bin, how string) {
	s := newSandbox(t, c)
	s.newRepo(s.ws, "host-commit")
	// a journal directory of this test's own: launches of other tests running at the
	// same time (their own journal directory) must not complete this one
	rt := filepath.Join(s.base, "runtime")
	must(t, os.Mkdir(rt, 0o700))
	s.chown(rt)
	rtEnv := "XDG_RUNTIME_DIR=" + rt
	ready := filepath.Join(s.ws, "ready")
	marker := filepath.Join(s.ws, "FSMONITOR-RAN")
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", `trap '' TERM
git init -q --bare evil && printf '#!/bin/sh\ntouch %s\nexit 1\n' "$2" > evil/hook.sh && chmod +x evil/hook.sh
git --git-dir=evil config core.fsmonitor "$PWD/evil/hook.sh" && git --git-dir=evil config core.bare false
echo ../evil > .git/commondir
[ "$3" = prlimit ] && prlimit --pid 1 --nofile=0:0
touch "$1"; sleep 30`, "_", ready, marker, how)
	cmd.Env = s.env(rtEnv)
	if how != "prlimit" {
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = s.env(rtEnv, "GOSBX_FAULT=init cleanup")
	}
	must(t, cmd.Start())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first command never planted")
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	commondir := filepath.Join(s.ws, ".git", "commondir")
	if how != "prlimit" {
		// the sandbox ends without its own cleanup: the planted file stays
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if faultInitsGone("init cleanup") || time.Now().After(deadline) {
				break
			}
		}
		if _, err := os.Lstat(commondir); err != nil {
			t.Fatalf("the sandbox's own cleanup ran (the fault build should skip it): %v", err)
		}
	} else {
		// the sandbox's init ends (its pid namespace with it) once the launcher is gone
		waitHostPIDs("gosbx-init", 5*time.Second, func(int) bool { return initsOf(s.ws) == 0 })
	}
	if how == "doctor" {
		ctx := s.limitCtx(runLimit)
		dc := s.rawCommand(ctx, "doctor")
		dc.Env = s.env(rtEnv)
		r := s.runCmd(ctx, dc)
		if _, err := os.Lstat(commondir); err == nil {
			t.Errorf("gosbx doctor left the planted commondir:\n%v", r)
		}
		if !strings.Contains(r.stderr, commondir) {
			t.Errorf("gosbx doctor did not say it removed %s:\n%v", commondir, r)
		}
		return
	}
	// a second launch, elsewhere: its command sees the workspace of the first
	other := newSandbox(t, c)
	ctx = other.limitCtx(runLimit)
	second := other.command(ctx, "--ro", s.ws, "--", shellPath, "-c", `test -e "$1" && echo STILL-THERE; exit 0`, "_", commondir)
	second.Env = other.env(rtEnv)
	r := other.runCmd(ctx, second)
	mustSucceed(t, r, "the second launch")
	if strings.Contains(r.stdout, "STILL-THERE") {
		t.Errorf("the planted commondir was still there when the second command ran:\n%v", r)
	}
	if how == "fault" && !strings.Contains(r.stderr, commondir) {
		t.Errorf("the second launch did not say it removed %s:\n%v", commondir, r)
	}
	out, _ := s.hostGitOut(s.ws, "status")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the host's git status ran the planted fsmonitor\n%s", out)
	}
}

// initsOf counts the sandbox inits that have ws among their mounts: those of this
// test's first launch.
func initsOf(ws string) int {
	n := 0
	for _, pid := range hostPIDs("gosbx-init") {
		b, err := os.ReadFile("/proc/" + itoa(pid) + "/mountinfo")
		if err == nil && strings.Contains(string(b), ws) {
			n++
		}
	}
	return n
}

// faultInitsGone reports whether no init of a fault-build launch for step is left.
func faultInitsGone(step string) bool { return len(faultInits(step)) == 0 }
