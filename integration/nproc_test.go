package integration

// Issue 19 item 3: a process limit for every caller. Where no cgroup can be had (an
// unprivileged caller on a cgroup v1 or hybrid host) the limit is RLIMIT_NPROC in the
// sandbox's fresh user namespace, which since Linux 5.14 counts that namespace's tasks
// alone (kernel/ucount.c): a fork loop inside stops at the limit while the caller's
// other processes on the host, more than the limit, go on and are not counted.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const forkLoop = `
import os, sys, time
n = 0
try:
    while n < 200:
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno, flush=True)
    sys.exit(0)
print("unlimited", n, flush=True)
`

func TestLimitsNprocUnprivileged(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	s := newSandbox(t, nobodyCaller)
	// more host processes of uid 65534 than the limit: were they counted, the sandbox
	// could not fork at all
	var host []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range host {
			c.Process.Kill()
			c.Wait()
		}
	})
	startNobody := func() *exec.Cmd {
		c := exec.Command("sleep", "120")
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyID, Gid: nobodyID, NoSetGroups: true}}
		if err := c.Start(); err != nil {
			t.Fatalf("start a host process as uid %d: %v", nobodyID, err)
		}
		host = append(host, c)
		return c
	}
	const limit = 24
	for i := 0; i < limit+8; i++ {
		startNobody()
	}
	r := s.runStatus("--pids", strconv.Itoa(limit), "--", python, "-c", forkLoop)
	mustSucceed(t, r.result, "--pids as nobody")
	f := strings.Fields(r.stdout)
	if len(f) < 2 || f[0] != "stopped" {
		t.Fatalf("the fork loop under --pids %d as nobody: %q; want it stopped at the limit", limit, r.stdout)
	}
	n, _ := strconv.Atoi(f[1])
	// the sandbox's own tasks (the init's threads) count too: fewer than the limit,
	// but the command got some
	if n < 1 || n >= limit {
		t.Errorf("the command forked %d processes under --pids %d; want 1..%d", n, limit, limit-1)
	}
	if len(f) < 3 || f[2] != strconv.Itoa(int(syscall.EAGAIN)) {
		t.Errorf("fork failed with %q; want EAGAIN", r.stdout)
	}
	ev := exitEvent(t, r.events, r.raw)
	wantKey(t, ev, "limits", "rlimit")
	if note, _ := ev["limits-note"].(string); note != "" {
		t.Errorf("limits-note %q; want none, the limit asked for was applied", note)
	}
	// the host's processes of the uid are untouched, and the uid can still start more
	for _, c := range host {
		if err := c.Process.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("host process %d of uid %d: %v", c.Process.Pid, nobodyID, err)
		}
	}
	startNobody()
	// (the fork loop's children still run when it exits: the note that says so is due)
	if rest := withoutLeftNote(r.stderr); rest != "" {
		t.Errorf("stderr %q; want empty but for the left-running note", rest)
	}
}

// A pooled sandbox (nsinit.Pool) of uid 65534, which has no cgroup here, gets its
// template's process limit as RLIMIT_NPROC as an unpooled one does
// (testdata/poolnproc: a pool of one with --pids 24's limit, running the fork loop).
// Before, a pooled sandbox got no process limit where no cgroup could be had: the
// limit asked for stopped the build (125), a profile's default was dropped.
func TestPoolNprocUnprivileged(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	s := newSandbox(t, nobodyCaller)
	bin := buildTestdata(t, s, "poolnproc")
	const limit = 24
	out, err := s.hostAs(bin, s.ws, strconv.Itoa(limit), python, "-c", forkLoop)
	if err != nil {
		t.Fatalf("poolnproc as nobody: %v\n%s", err, out)
	}
	f := strings.Fields(out)
	if len(f) < 5 || f[0] != "stopped" {
		t.Fatalf("the fork loop in a pooled sandbox as nobody: %q; want it stopped at the limit", out)
	}
	if n, _ := strconv.Atoi(f[1]); n < 1 || n >= limit {
		t.Errorf("the pooled command forked %d processes under a limit of %d; want 1..%d", n, limit, limit-1)
	}
	if f[2] != strconv.Itoa(int(syscall.EAGAIN)) {
		t.Errorf("fork failed with %q; want EAGAIN", out)
	}
	if !strings.Contains(out, "LIMITS rlimit\n") {
		t.Errorf("Result.Limits: %q; want rlimit", out)
	}
}

// TestSessionNprocUnprivileged (from an attack review): a session started with --pids
// as an unprivileged caller, where no cgroup can be had, holds the limit on every
// command as RLIMIT_NPROC, as a one-shot exec does: a fork loop in `exec --session`
// stops below the limit, and `--limits required` is no longer met by dropping it.
func TestSessionNprocUnprivileged(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	e := newSessionEnv(t, nobodyCaller)
	const limit = 24
	e.start("np", "--pids", strconv.Itoa(limit), "--limits", "required", "--timeout", "120")
	for round := 0; round < 2; round++ { // each command gets it, not only the first
		r := e.gosbx("exec", "--session", "np", "--", python, "-c", forkLoop)
		mustSucceed(t, r, "exec --session under --pids as nobody")
		f := strings.Fields(r.stdout)
		if len(f) < 3 || f[0] != "stopped" {
			t.Fatalf("round %d: the fork loop in a session under --pids %d as nobody: %q; want it stopped at the limit", round, limit, r.stdout)
		}
		if n, _ := strconv.Atoi(f[1]); n < 1 || n >= limit {
			t.Errorf("round %d: the session command forked %d processes under --pids %d; want 1..%d", round, n, limit, limit-1)
		}
		if f[2] != strconv.Itoa(int(syscall.EAGAIN)) {
			t.Errorf("round %d: fork failed with %q; want EAGAIN", round, r.stdout)
		}
	}
	r := e.gosbx("exec", "--session", "np", "--", shellPath, "-c", "grep 'Max processes' /proc/self/limits")
	mustSucceed(t, r, "read the limits in the session")
	if f := strings.Fields(r.stdout); len(f) < 4 || f[2] != strconv.Itoa(limit) || f[3] != strconv.Itoa(limit) {
		t.Errorf("the session command's RLIMIT_NPROC: %q; want %d %d", r.stdout, limit, limit)
	}
	mustSucceed(t, e.gosbx("session", "stop", "np"), "session stop")
}

// buildTestdata builds the program integration/testdata/NAME (CGO_ENABLED=0) into the
// sandbox's base directory, readable and executable by every caller, and returns its path.
func buildTestdata(t *testing.T, s *sandbox, name string) string {
	t.Helper()
	return buildProgram(t, s, name, "./integration/testdata/"+name, "CGO_ENABLED=0")
}

// buildProgram builds the package pkg (a path from the project's root) into s.base/name,
// mode 0755, with env added to the environment; it returns the program's path.
func buildProgram(t *testing.T, s *sandbox, name, pkg string, env ...string) string {
	t.Helper()
	bin := filepath.Join(s.base, name)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	build.Dir = ".."
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s %s (%v): %v\n%s", bin, pkg, env, err, out)
	}
	must(t, os.Chmod(bin, 0o755))
	return bin
}
