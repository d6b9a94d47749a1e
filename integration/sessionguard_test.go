package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of a session's guards per request (attack review 13: F9, F9b, F7, F10, F11,
// F12): what gosbx exec does for one sandbox holds for each command of a session.

// waitPath waits up to d for path to exist (or, with gone, not to) on the host.
func waitPath(path string, gone bool, d time.Duration) bool {
	for end := time.Now().Add(d); ; {
		_, err := os.Lstat(path)
		if (err == nil) != gone {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSessionGitGuardPerRequest: under git: commit, a commondir planted by a session's
// command is removed before its `exec --session` returns (said on stderr), not when the
// session ends; one planted by a process the command left in the background, between
// two requests, is removed before the next command starts (checked from inside and on
// the host). Without the per-request cleanup both stay on the host until session stop,
// where the host's git follows them.
func TestSessionGitGuardPerRequest(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.newRepo(e.ws, "host-commit")
		e.start("g", "--policy", e.commitPolicy())
		commondir := filepath.Join(e.ws, ".git", "commondir")
		r := e.in("g", nil, "git init -q --bare evil && echo ../evil > .git/commondir")
		mustSucceed(t, r, "plant")
		if _, err := os.Lstat(commondir); err == nil {
			t.Errorf("the planted %s is on the host after its request returned", commondir)
		}
		if !strings.Contains(r.stderr, "commondir") || !strings.Contains(r.stderr, "removed") {
			t.Errorf("the removal is not said on stderr\n%v", r)
		}
		// a background process plants once the host makes ws/go, after its request
		mustSucceed(t, e.in("g", nil, `(while [ ! -e go ]; do sleep 0.02; done; echo ../evil > .git/commondir) >/dev/null 2>&1 </dev/null &`), "background planter")
		must(t, os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644))
		if !waitPath(commondir, false, 10*time.Second) {
			t.Fatalf("the background process did not plant %s", commondir)
		}
		r = e.in("g", nil, "test ! -e .git/commondir")
		if r.code != 0 || !strings.Contains(r.stderr, "removed") {
			t.Errorf("the next command found the background plant (or was not told of its removal)\n%v", r)
		}
		if _, err := os.Lstat(commondir); err == nil {
			t.Errorf("the background plant %s is still on the host after the next request", commondir)
		}
		// a job's plant: removed when the job ends (job wait returns after it), said in its log
		mustSucceed(t, e.gosbx("exec", "--session", "g", "--detach", "--", shellPath, "-c", "echo ../evil > .git/commondir"), "a planting job")
		mustSucceed(t, e.gosbx("job", "wait", "g/1"), "job wait")
		if _, err := os.Lstat(commondir); err == nil {
			t.Errorf("a job's plant %s is on the host after the job ended", commondir)
		}
		if r := e.gosbx("job", "logs", "g/1"); !strings.Contains(r.stdout, "removed") {
			t.Errorf("the job's log does not say the removal\n%v", r)
		}
		// the session's own writes to the git dir still work (commit mode)
		mustSucceed(t, e.in("g", nil, "echo v2 > tracked.txt && git -c user.name=s -c user.email=s@s commit -qam s"), "commit in the session")
	})
}

// TestSessionNewRepoRefused: a repository a session's command or job makes (git init)
// while it runs is the command's own, as in one-shot: later requests run, and its .git
// is writable from the session (README, Known limits). One the user makes in the
// workspace on the host between requests has no read-only .git in the sandbox (its
// mounts are fixed): the next request is refused (125, naming session stop) rather than
// run where it could plant a hook the host's git would run; after a restart the
// repository is guarded as usual. One a process left in the background makes between
// requests is refused the same way. Without the per-request search the hook is planted on
// the host; without telling the two apart, the request after a git init is refused.
func TestSessionNewRepoRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("n")
		mustSucceed(t, e.in("n", nil, "git init -q mine"), "git init in a request")
		mustSucceed(t, e.gosbx("exec", "--session", "n", "--detach", "--", "git", "init", "-q", "jobs"), "git init in a job")
		mustSucceed(t, e.gosbx("job", "wait", "n/1"), "job wait")
		// the known limit: a repository the session made is not protected
		mustSucceed(t, e.in("n", nil, "true"), "a request after the command's git init")
		mustSucceed(t, e.in("n", nil, "printf x > mine/.git/description && printf x > jobs/.git/description"), "writing the session's own repositories")
		if b, err := os.ReadFile(filepath.Join(e.ws, "mine", ".git", "description")); err != nil || string(b) != "x" {
			t.Errorf("the known limit does not hold as README says: %q, %v", b, err)
		}
		dep := filepath.Join(e.ws, "dep")
		e.newRepo(dep, "dep-commit")
		hook := filepath.Join(dep, ".git", "hooks", "post-commit")
		r := e.in("n", nil, `printf '#!/bin/sh\ntouch /tmp/x\n' > dep/.git/hooks/post-commit && chmod +x dep/.git/hooks/post-commit`)
		if r.code != 125 || !strings.Contains(r.stderr, "session stop n") || !strings.Contains(r.stderr, dep) {
			t.Errorf("a request after the host made a repository: want 125 naming it and session stop\n%v", r)
		}
		if _, err := os.Lstat(hook); err == nil {
			t.Errorf("the session planted %s in the user's new repository", hook)
		}
		if r := e.in("n", nil, "true"); r.code != 125 {
			t.Errorf("a second request: want the refusal again (until the restart)\n%v", r)
		}
		mustSucceed(t, e.gosbx("session", "stop", "n"), "stop")
		e.start("n")
		r = e.in("n", nil, `printf x > dep/.git/hooks/post-commit`)
		if r.code == 0 {
			t.Errorf("the restarted session could write the new repository's hooks\n%v", r)
		}
		if _, err := os.Lstat(hook); err == nil {
			t.Errorf("%s planted after the restart", hook)
		}
		// a process a request left in the background makes one between requests:
		// refused as the host's (its command had ended)
		mustSucceed(t, e.in("n", nil, `(while [ ! -e go ]; do sleep 0.02; done; git init -q bg) >/dev/null 2>&1 </dev/null &`), "background git init")
		must(t, os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644))
		if !waitPath(filepath.Join(e.ws, "bg", ".git", "HEAD"), false, 10*time.Second) {
			t.Fatal("the background process made no repository")
		}
		if r := e.in("n", nil, "true"); r.code != 125 || !strings.Contains(r.stderr, filepath.Join(e.ws, "bg", ".git")) {
			t.Errorf("a request after a background process made a repository between requests: want 125 naming it\n%v", r)
		}
	})
}

// TestSessionMountOverRefused: a file system mounted on the host over a directory of a
// session's workspace, with a .git in it, between requests, is seen (a mount sends no
// inotify event: the supervisor takes the mount table's change and checks each
// directory's state) and refused as a host-made repository; once unmounted, requests run
// again. Without the mount table check the request runs.
func TestSessionMountOverRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the test mounts on the host: root only")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		sub := filepath.Join(e.ws, "sub")
		must(t, os.Mkdir(sub, 0o755))
		e.start("m")
		mustSucceed(t, e.in("m", nil, "true"), "a first command")
		must(t, syscall.Mount("none", sub, "tmpfs", 0, "mode=755"))
		mounted := true
		unmount := func() {
			if mounted {
				mounted = false
				must(t, syscall.Unmount(sub, syscall.MNT_DETACH))
			}
		}
		t.Cleanup(unmount)
		must(t, os.Mkdir(filepath.Join(sub, ".git"), 0o755))
		if r := e.in("m", nil, "true"); r.code != 125 || !strings.Contains(r.stderr, filepath.Join(sub, ".git")) {
			t.Errorf("a request after a mount over the workspace brought a .git: want 125 naming it\n%v", r)
		}
		unmount()
		mustSucceed(t, e.in("m", nil, "true"), "a request once it is unmounted")
	})
}

// TestSessionClientKilledKillsGroup: SIGKILL of an `exec --session` client kills its
// command's whole process group, as --timeout does: the child it started with & is gone
// too (checked on the host). Without it only the command's first process was killed.
func TestSessionClientKilledKillsGroup(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("k")
		link := e.sleepLink("grp")
		cmd := e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "k", "--", shellPath, "-c", `"$0" 331 & exec "$0" 337`, link)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		must(t, cmd.Start())
		if p := waitHostPIDs(link, 10*time.Second, func(n int) bool { return n == 2 }); len(p) != 2 {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command's two sleeps on the host: %v", p)
		}
		// setpriv execs gosbx: the pid is the client's
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		if left := waitHostPIDs(link, 5*time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("processes of the command's group outlived its killed client: %v", left)
		}
	})
}

// TestSessionStopAnswersRunning: `session kill` (and stop) while a command runs gives its
// client the command's end (137, 143), never 125 ("never ran"): the supervisor exits only
// once the exit status is sent. The race was rare (1 in ~40 in the review); several
// rounds, which do not fail reliably without the fix.
func TestSessionStopAnswersRunning(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		for i := 0; i < 6; i++ {
			how := []string{"kill", "stop"}[i%2]
			e.start("s")
			ready := filepath.Join(e.ws, "ready")
			os.Remove(ready)
			cmd := e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "s", "--", shellPath, "-c", "touch ready; exec sleep 30")
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			var errb strings.Builder
			cmd.Stderr = &errb
			must(t, cmd.Start())
			if !waitPath(ready, false, 10*time.Second) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the command did not start")
			}
			mustSucceed(t, e.gosbx("session", how, "s"), how)
			err := cmd.Wait()
			code := exitCode(err, cmd.ProcessState)
			if code != 137 && code != 143 {
				t.Fatalf("round %d (%s): the client of a command that ran got %d, want 137 or 143\nstderr: %s", i, how, code, errb.String())
			}
		}
	})
}

// TestSessionStopWaitsForAnswer: with a supervisor whose answer to a command comes
// 300 ms after the command's end (a -tags gosbxfault build, GOSBX_FAULT=session slow
// answer), `session kill` while the command runs still gives its client 137, not 125:
// the supervisor exits only once every started command's exit status is sent. Before
// the fix it exited first, every time.
func TestSessionStopWaitsForAnswer(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		with := func(cmd *exec.Cmd) *exec.Cmd {
			for i, a := range cmd.Args {
				if a == gosbxBin {
					cmd.Args[i] = bin
				}
			}
			if cmd.Path == gosbxBin {
				cmd.Path = bin
			}
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "GOSBX_FAULT=session slow answer")
			return cmd
		}
		ctx := e.limitCtx(runLimit)
		mustSucceed(t, e.runCmd(ctx, with(e.rawCommand(ctx, "session", "start", "f", "--workspace", e.ws))), "session start")
		ready := filepath.Join(e.ws, "ready")
		cmd := with(e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "f", "--", shellPath, "-c", "touch ready; exec sleep 30"))
		var errb strings.Builder
		cmd.Stderr = &errb
		must(t, cmd.Start())
		if !waitPath(ready, false, 10*time.Second) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command did not start")
		}
		mustSucceed(t, e.gosbx("session", "kill", "f"), "kill")
		err := cmd.Wait()
		if code := exitCode(err, cmd.ProcessState); code != 137 {
			t.Errorf("the client of a command killed with its session got %d, want 137\nstderr: %s", code, errb.String())
		}
	})
}

// TestSessionSupervisorGoneBeforeExecReport: a supervisor killed after it handed the
// command to the session but before it relayed the exec (a -tags gosbxfault build,
// GOSBX_FAULT=session slow exec report: the command runs, the report waits 5 s) gives
// its client 137, never 125 ("did not run", which a caller may retry): the dispatch
// frame sent before the command can run tells the client it may have. Without it the
// client said 125 every time; TestSessionSupervisorGoneAfterStart met that window by
// chance.
func TestSessionSupervisorGoneBeforeExecReport(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		with := func(cmd *exec.Cmd) *exec.Cmd {
			for i, a := range cmd.Args {
				if a == gosbxBin {
					cmd.Args[i] = bin
				}
			}
			if cmd.Path == gosbxBin {
				cmd.Path = bin
			}
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "GOSBX_FAULT=session slow exec report")
			return cmd
		}
		ctx := e.limitCtx(runLimit)
		mustSucceed(t, e.runCmd(ctx, with(e.rawCommand(ctx, "session", "start", "g", "--workspace", e.ws))), "session start")
		in := e.info("g")
		ready := filepath.Join(e.ws, "ready")
		cmd := with(e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "g", "--", shellPath, "-c", "touch ready; exec sleep 30"))
		var errb strings.Builder
		cmd.Stderr = &errb
		must(t, cmd.Start())
		if !waitPath(ready, false, 10*time.Second) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the command did not start: %s", errb.String())
		}
		must(t, syscall.Kill(in.Pid, syscall.SIGKILL))
		err := cmd.Wait()
		if code := exitCode(err, cmd.ProcessState); code != 137 {
			t.Errorf("the client of a command that ran, its exec not yet reported, got %d when its supervisor was killed, want 137\nstderr: %s", code, errb.String())
		}
		e.gosbx("session", "ls") // removes the killed session's leftovers
	})
}

// faultSessionCmd returns with: cmd run by the fault binary bin with
// GOSBX_FAULT=fault and e's runtime directory.
func faultSessionCmd(e *sessionEnv, bin, fault string) func(cmd *exec.Cmd) *exec.Cmd {
	return func(cmd *exec.Cmd) *exec.Cmd {
		for i, a := range cmd.Args {
			if a == gosbxBin {
				cmd.Args[i] = bin
			}
		}
		if cmd.Path == gosbxBin {
			cmd.Path = bin
		}
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "GOSBX_FAULT="+fault)
		return cmd
	}
}

// TestSessionSupervisorGoneBeforeJobReport: `exec --session --detach` whose supervisor
// is killed after the job started, before it answered the job's id (GOSBX_FAULT=session
// slow exec report holds that answer 5 s), gives its client 137 "may have started",
// never 125: the detached request gets the dispatch frame before the job can start, as
// a plain one (attack review 18, F1: without the frame the client said 125).
func TestSessionSupervisorGoneBeforeJobReport(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		with := faultSessionCmd(e, bin, "session slow exec report")
		ctx := e.limitCtx(runLimit)
		mustSucceed(t, e.runCmd(ctx, with(e.rawCommand(ctx, "session", "start", "j", "--workspace", e.ws))), "session start")
		in := e.info("j")
		ready := filepath.Join(e.ws, "ready")
		cmd := with(e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "j", "--detach", "--", shellPath, "-c", "touch ready; exec sleep 30"))
		var errb strings.Builder
		cmd.Stderr = &errb
		must(t, cmd.Start())
		if !waitPath(ready, false, 10*time.Second) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the job did not start: %s", errb.String())
		}
		must(t, syscall.Kill(in.Pid, syscall.SIGKILL))
		err := cmd.Wait()
		if code := exitCode(err, cmd.ProcessState); code != 137 || !strings.Contains(errb.String(), "may have started") {
			t.Errorf("the client of a job that ran, its id not yet answered, got %d when its supervisor was killed, want 137 \"may have started\"\nstderr: %s", code, errb.String())
		}
		e.gosbx("session", "ls") // removes the killed session's leftovers
	})
}

// TestSessionInitGoneBeforeExecReport: a session's init that dies after it forked the
// command, before its exec report (GOSBX_FAULT=session exec report: it waits for the
// command's end, then exits), leaves the supervisor with no report after the dispatch
// frame: its client, plain or --detach, exits 137 "may have started", never 125, and
// the command ran (its file on the host). Attack review 18, F2: it said 125 "the
// session ended before the command started".
func TestSessionInitGoneBeforeExecReport(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		for i, detach := range []bool{false, true} {
			e := newSessionEnv(t, c)
			with := faultSessionCmd(e, bin, "session exec report")
			name := fmt.Sprintf("k%d", i)
			ctx := e.limitCtx(runLimit)
			mustSucceed(t, e.runCmd(ctx, with(e.rawCommand(ctx, "session", "start", name, "--workspace", e.ws))), "session start")
			args := []string{"exec", "--session", name}
			if detach {
				args = append(args, "--detach")
			}
			cmd := with(e.rawCommand(e.limitCtx(runLimit), append(args, "--", shellPath, "-c", "touch ran")...))
			var errb strings.Builder
			cmd.Stderr = &errb
			err := cmd.Run()
			if code := exitCode(err, cmd.ProcessState); code != 137 || !strings.Contains(errb.String(), "may have started") {
				t.Errorf("--detach %v: the client of a command whose session's init died before its exec report got %d, want 137 \"may have started\"\nstderr: %s", detach, code, errb.String())
			}
			if _, err := os.Lstat(filepath.Join(e.ws, "ran")); err != nil {
				t.Errorf("--detach %v: the command did not run (the fault did not fire where it should): %v", detach, err)
			}
			e.gosbx("session", "ls")
		}
	})
}

// TestSessionSupervisorGoneAfterStart: a supervisor killed (SIGKILL) while a command
// runs cannot send its exit status; the client, told the command was executed, exits
// 137 ("killed"), never 125 ("did not run"), with and without --status-fd.
func TestSessionSupervisorGoneAfterStart(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, statusFd := range []bool{false, true} {
			e := newSessionEnv(t, c)
			e.start("v")
			in := e.info("v")
			ready := filepath.Join(e.ws, "ready")
			args := []string{"exec", "--session", "v"}
			if statusFd {
				args = append(args, "--status-fd", "3")
			}
			cmd := e.rawCommand(e.limitCtx(runLimit), append(args, "--", shellPath, "-c", "touch ready; exec sleep 30")...)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			if statusFd {
				f, err := os.Create(filepath.Join(e.base, "status"))
				must(t, err)
				defer f.Close()
				e.chown(f.Name())
				cmd.ExtraFiles = []*os.File{f}
			}
			var errb strings.Builder
			cmd.Stderr = &errb
			must(t, cmd.Start())
			if !waitPath(ready, false, 10*time.Second) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("--status-fd %v: the command did not start: %s", statusFd, errb.String())
			}
			must(t, syscall.Kill(in.Pid, syscall.SIGKILL))
			err := cmd.Wait()
			if code := exitCode(err, cmd.ProcessState); code != 137 {
				t.Errorf("--status-fd %v: the client of a command that ran got %d when its supervisor was killed, want 137\nstderr: %s", statusFd, code, errb.String())
			}
			e.gosbx("session", "ls") // removes the killed session's leftovers
		}
	})
}

// TestSessionClientCwdUmask: `exec --session` starts the command in the caller's
// current directory when it lies inside the workspace (else the workspace), with the
// caller's umask, as gosbx exec does; --chdir still wins.
func TestSessionClientCwdUmask(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		sub := filepath.Join(e.ws, "sub")
		must(t, os.Mkdir(sub, 0o755))
		e.chown(sub)
		e.start("d")
		run := func(dir, umask string, args ...string) result {
			t.Helper()
			ctx := e.limitCtx(runLimit)
			cmd := e.rawCommand(ctx, append([]string{"exec", "--session", "d"}, args...)...)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			cmd.Dir = dir
			// the caller's umask: set by a shell that then execs the client
			cmd.Args = append([]string{"/bin/sh", "-c", "umask " + umask + ` && exec "$@"`, "sh"}, cmd.Args...)
			p, err := exec.LookPath("/bin/sh")
			must(t, err)
			cmd.Path = p
			return e.runCmd(ctx, cmd)
		}
		if r := run(sub, "077", "--", shellPath, "-c", "pwd; umask"); r.code != 0 || r.stdout != sub+"\n0077\n" {
			t.Errorf("from %s with umask 077: want %s and 0077\n%v", sub, sub, r)
		}
		if r := run(e.base, "022", "--", shellPath, "-c", "pwd; umask"); r.code != 0 || r.stdout != e.ws+"\n0022\n" {
			t.Errorf("from outside the workspace: want the workspace and 0022\n%v", r)
		}
		if r := run(sub, "027", "--chdir", e.ws, "--", shellPath, "-c", "pwd; umask"); r.code != 0 || r.stdout != e.ws+"\n0027\n" {
			t.Errorf("--chdir from %s: want the workspace\n%v", sub, r)
		}
	})
}

// TestSessionStartKilledBeforeReady: a `session start` killed before it reported the
// session ready leaves no session: its supervisor, having no acknowledgement, ends the
// sandbox. The client is stopped as soon as its supervisor has started the session's
// init (the config read, the sandbox not yet ready), then killed; a round where the
// client had returned already is tried again. Without the acknowledgement the session
// ran on.
func TestSessionStartKilledBeforeReady(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		for round := 0; round < 5; round++ {
			cmd := e.rawCommand(e.limitCtx(runLimit), "session", "start", "z", "--workspace", e.ws)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			must(t, cmd.Start())
			pid := cmd.Process.Pid
			sup, init := 0, 0
			for end := time.Now().Add(10 * time.Second); init == 0 && time.Now().Before(end); {
				if sup == 0 {
					sup = childWithArg(pid, "gosbx-session-supervisor")
				}
				if sup != 0 {
					init = anyChild(sup)
				}
				if init == 0 {
					time.Sleep(200 * time.Microsecond)
				}
			}
			syscall.Kill(pid, syscall.SIGSTOP)
			syscall.Kill(pid, syscall.SIGKILL)
			cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				e.stopAll() // it had returned: the session is its caller's
				continue
			}
			if sup == 0 || init == 0 {
				t.Fatalf("no supervisor (%d) or init (%d) appeared", sup, init)
			}
			for end := time.Now().Add(10 * time.Second); (alive(sup) || alive(init)) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			if alive(sup) || alive(init) {
				t.Errorf("the supervisor %d or init %d of a session start killed before ready runs on", sup, init)
			}
			if f := e.runtimeFiles(); len(f) > 0 {
				t.Errorf("runtime files left: %q", f)
			}
			return
		}
		t.Skip("the client returned before it could be killed in every round")
	})
}

// anyChild is a child of pid (any thread's), or 0.
func anyChild(pid int) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		if c := strings.Fields(string(b)); len(c) > 0 {
			n, _ := strconv.Atoi(c[0])
			return n
		}
	}
	return 0
}

// childWithArg is the pid of a child of pid (any thread's) whose argv[1] is arg, or 0.
func childWithArg(pid int, arg string) int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, c := range strings.Fields(string(b)) {
			cl, _ := os.ReadFile("/proc/" + c + "/cmdline")
			parts := strings.Split(string(cl), "\x00")
			if len(parts) > 1 && parts[1] == arg {
				n, _ := strconv.Atoi(c)
				return n
			}
		}
	}
	return 0
}
