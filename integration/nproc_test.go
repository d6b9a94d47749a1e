package integration

// Issue 19 item 3: a process limit for every caller. Where no cgroup can be had (an
// unprivileged caller on a cgroup v1 or hybrid host) the limit is RLIMIT_NPROC in the
// sandbox's fresh user namespace, which since Linux 5.14 counts that namespace's tasks
// alone (kernel/ucount.c): a fork loop inside stops at the limit while the caller's
// other processes on the host, more than the limit, go on and are not counted.

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
	if r.stderr != "" {
		t.Errorf("stderr %q; want empty", r.stderr)
	}
}
