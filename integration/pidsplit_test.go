package integration

// The init outside its commands' pids limit (cgroup/pids.go): a command that fills the
// process limit of a session leaves its init alive.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidsFiller forks sleepers until a fork is refused (the process limit), writes "full"
// and holds every pid.
const pidsFiller = `import os, signal
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        while True:
            signal.pause()
open("full", "w").close()
while True:
    signal.pause()
`

// A session with --pids 32 (root caller: a v1 group): from the host, the sandbox's
// pids group G has pids.max 32+32 (the init's headroom) and G/cmd 32; the init is in
// G, a command in G/cmd. A command fills the limit (G/cmd's pids.current is 32, a
// refusal counted in its pids.events) and holds it; meanwhile 20 requests, each making
// the session's init serve a request and fork, fail with 125 naming the limit, and the
// init stays alive (host: its pid; session ls: running) with pids to spare in G. Once
// the filler is killed from the host, a request succeeds in the same session and holds
// no descriptor of the group. Without the split G has no pid free for the init's
// threads (the death this prevents needs the runtime to want one then), and without
// the join step the filler is not in G/cmd.
func TestSessionSurvivesPidsFull(t *testing.T) {
	requireV1(t)
	requireBinary(t)
	t.Parallel()
	e := newSessionEnv(t, rootCaller)
	e.start("full", "--pids", "32")
	in := e.info("full")
	initPid := in.InitPid
	group := sandboxGroup(t, int64(initPid), "pids")
	if filepath.Base(group) != "gosbx-"+in.SandboxID {
		t.Fatalf("host: the init's pids group is %s; want the sandbox's own gosbx-%s", group, in.SandboxID)
	}
	cmdGroup := filepath.Join(group, "cmd")
	if got := readTrim(filepath.Join(group, "pids.max")); got != "64" {
		t.Errorf("host: the sandbox group's pids.max %q; want 64 (32 and the init's headroom)", got)
	}
	if got := readTrim(filepath.Join(cmdGroup, "pids.max")); got != "32" {
		t.Fatalf("host: the commands' group's pids.max %q; want 32", got)
	}
	mustSucceed(t, e.gosbx("exec", "--session", "full", "--detach", "--", python, "-c", pidsFiller), "filler")
	full := filepath.Join(e.ws, "full")
	for i := 0; ; i++ {
		if _, err := os.Stat(full); err == nil {
			break
		}
		if i == 1000 {
			t.Fatal("the filler never filled the pids limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	procs := strings.Fields(readTrim(filepath.Join(cmdGroup, "cgroup.procs")))
	if len(procs) == 0 {
		t.Fatal("host: no process in the commands' group")
	}
	for _, p := range procs {
		pid, _ := strconv.ParseInt(p, 10, 64)
		if got := sandboxGroup(t, pid, "pids"); got != cmdGroup {
			t.Errorf("host: command process %d is in %s; want %s", pid, got, cmdGroup)
		}
	}
	if got := sandboxGroup(t, int64(initPid), "pids"); got != group {
		t.Errorf("host: the init is in %s; want %s", got, group)
	}
	if got := readTrim(filepath.Join(cmdGroup, "pids.current")); got != "32" {
		t.Errorf("host: the commands' pids.current %q with the limit full; want 32", got)
	}
	// the init's headroom is still there: without the split the commands took it all
	cur, _ := strconv.Atoi(readTrim(filepath.Join(group, "pids.current")))
	if free := 64 - cur; free < 16 {
		t.Errorf("host: %d pids free in the sandbox group for the init with the commands' limit full; want 16 or more", free)
	}
	if n := eventCount(t, filepath.Join(cmdGroup, "pids.events")); n < 1 {
		t.Errorf("host: no refused fork counted in the commands' pids.events")
	}
	for i := 0; i < 20; i++ {
		r := e.gosbx("exec", "--session", "full", "--", shellPath, "-c", "echo ran; /bin/true")
		if !alive(initPid) {
			t.Fatalf("request %d with the limit full: the session's init died\n%v", i, r)
		}
		if r.code != 125 || !strings.Contains(r.stderr, "process limit is reached") {
			t.Fatalf("request %d with the limit full: want 125 naming the limit\n%v", i, r)
		}
	}
	if st := e.info("full").State; st != "running" {
		t.Fatalf("session ls: state %q with the limit full; want running", st)
	}
	for _, p := range strings.Fields(readTrim(filepath.Join(cmdGroup, "cgroup.procs"))) {
		pid, _ := strconv.Atoi(p)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	for i := 0; readTrim(filepath.Join(cmdGroup, "pids.current")) != "0"; i++ {
		if i == 500 {
			t.Fatalf("host: the filler's processes did not go: pids.current %s", readTrim(filepath.Join(cmdGroup, "pids.current")))
		}
		time.Sleep(10 * time.Millisecond)
	}
	// ... and holds none of the init's descriptors of the commands' group
	r := e.in("full", nil, "echo after; sh -c 'echo child'; for f in /proc/$$/fd/*; do readlink $f; done; true")
	mustSucceed(t, r, "a request after the filler was killed")
	if !strings.HasPrefix(r.stdout, "after\nchild\n") || strings.Contains(r.stdout, "cgroup") || strings.Contains(r.stdout, "pids.") {
		t.Errorf("stdout %q; want after, child, and no cgroup file among the shell's descriptors", r.stdout)
	}
	if got := e.info("full").InitPid; got != initPid || !alive(initPid) {
		t.Errorf("the session's init %d is not the one it started with (%d), or gone", got, initPid)
	}
}

// eventCount reads the "max" count of a pids.events file.
func eventCount(t *testing.T, file string) int {
	t.Helper()
	for _, l := range strings.Split(readTrim(file), "\n") {
		if v, ok := strings.CutPrefix(l, "max "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
