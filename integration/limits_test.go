package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// v1Controllers are the v1 hierarchies gosbx makes a sandbox's group in.
var v1Controllers = []string{"memory", "pids", "cpu", "cpuacct"}

// requireV1 skips unless the host has the v1 hierarchies gosbx uses here (hybrid or
// legacy); these tests run the sandbox as root, where the groups can be made.
func requireV1(t *testing.T) {
	t.Helper()
	requireBinary(t)
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "tasks")); err != nil {
			t.Skipf("no cgroup v1 %s hierarchy: %v", c, err)
		}
	}
}

// cgroupPaths parses /proc/PID/cgroup as the host sees it: controller → path.
func cgroupPaths(pid string) map[string]string {
	b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m
}

// ownV1 is the test process's group in each v1 hierarchy: gosbx exec, its child, makes
// its groups there.
func ownV1(t *testing.T) map[string]string {
	t.Helper()
	paths := cgroupPaths("self")
	own := map[string]string{}
	for _, c := range v1Controllers {
		own[c] = filepath.Join("/sys/fs/cgroup", c, paths[c])
	}
	return own
}

// sandboxGroups lists the groups (in every v1 hierarchy) of the sandbox id (the
// "sandbox-id" of its first status line): gosbx-<id>.
func sandboxGroups(t *testing.T, id string) []string {
	t.Helper()
	if id == "" {
		t.Fatal("no sandbox id in the status lines")
	}
	var out []string
	for _, d := range ownV1(t) {
		if _, err := os.Stat(filepath.Join(d, "gosbx-"+id)); err == nil {
			out = append(out, filepath.Join(d, "gosbx-"+id))
		}
	}
	return out
}

// sandboxID is the "sandbox-id" of a status line.
func sandboxID(ev map[string]any) string {
	id, _ := ev["sandbox-id"].(string)
	return id
}

// noGroupsLeft fails the test if any group of the sandbox id is left; it waits a
// little, since nothing removes them after gosbx exec has exited, the wait only avoids
// reporting a group another run's gc is removing right now.
func noGroupsLeft(t *testing.T, id string, when string) {
	t.Helper()
	var left []string
	for i := 0; i < 10; i++ {
		if left = sandboxGroups(t, id); len(left) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s: cgroup directories left behind by the sandbox %s: %q", when, id, left)
}

// sandboxGroup is the directory of the sandbox's group in controller c, from the host's
// view of /proc/PID/cgroup of a process inside it.
func sandboxGroup(t *testing.T, pid int64, c string) string {
	t.Helper()
	p, ok := cgroupPaths(strconv.FormatInt(pid, 10))[c]
	if !ok {
		t.Fatalf("pid %d has no %s cgroup", pid, c)
	}
	return filepath.Join("/sys/fs/cgroup", c, p)
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// statusResult is a gosbx run with --status-fd 3, its events and the launcher's pid.
type statusResult struct {
	result
	events []map[string]any
	exit   map[string]any // the event with exit-code, or nil
	pid    int            // gosbx exec's pid (setpriv execs it for nobody)
	id     string         // the sandbox id (its first status line's sandbox-id)
	raw    string
}

func (r statusResult) String() string { return r.result.String() + "\nstatus: " + r.raw }

// runStatus runs gosbx exec with --status-fd 3 and args, and collects the status lines.
func (s *sandbox) runStatus(args ...string) statusResult {
	s.t.Helper()
	return s.runStatusEnv(nil, args...)
}

// exitEvent returns the exit line of a status run, failing the test without one.
func exitEvent(t *testing.T, events []map[string]any, raw string) map[string]any {
	t.Helper()
	for _, m := range events {
		if _, ok := m["exit-code"]; ok {
			return m
		}
	}
	t.Fatalf("no exit line in the status output:\n%s", raw)
	return nil
}

func wantKey(t *testing.T, ev map[string]any, k string, want any) {
	t.Helper()
	if got := ev[k]; got != want {
		t.Errorf("status %q = %v (%T); want %v\nexit line: %v", k, got, got, want, ev)
	}
}

// A memory hog under --memory 64M is killed by the OOM killer: 137, reported as such,
// with the peak at the limit; its group is removed.
func TestLimitsMemoryOOM(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.runStatus("--memory", "64M", "--", python, "-c", "b = bytearray(1<<30)")
	if r.code != 137 {
		t.Fatalf("want exit 137 (SIGKILL by the OOM killer)\n%v", r)
	}
	ev := exitEvent(t, r.events, r.raw)
	wantKey(t, ev, "oom-killed", true)
	wantKey(t, ev, "limit-hit", "memory")
	wantKey(t, ev, "limits", "cgroup-v1")
	peak, ok := num(ev, "memory-peak-bytes")
	if !ok || peak < 48<<20 || peak > 65<<20 {
		t.Errorf("memory-peak-bytes %d (present %v); want about the 64 MiB limit", peak, ok)
	}
	noGroupsLeft(t, r.id, "after an OOM kill")
}

// 32 MiB (written, so charged) fits under --memory 128M, and the peak shows it.
func TestLimitsMemoryFits(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.runStatus("--memory", "128M", "--", python, "-c", "b = b'x' * (32 << 20); print(len(b))")
	mustSucceed(t, r.result, "32 MiB under --memory 128M")
	ev := exitEvent(t, r.events, r.raw)
	wantKey(t, ev, "oom-killed", false)
	wantKey(t, ev, "limits", "cgroup-v1")
	if _, hit := ev["limit-hit"]; hit {
		t.Errorf("limit-hit %v; want none", ev["limit-hit"])
	}
	peak, ok := num(ev, "memory-peak-bytes")
	if !ok || peak < 32<<20 || peak > 128<<20 {
		t.Errorf("memory-peak-bytes %d (present %v); want between 32 and 128 MiB", peak, ok)
	}
	if cpu, ok := num(ev, "cpu-usec"); !ok || cpu <= 0 || cpu > 10_000_000 {
		t.Errorf("cpu-usec %d (present %v); want a plausible positive time (python started)", cpu, ok)
	}
	noGroupsLeft(t, r.id, "after a normal exit")
}

// The private /tmp is tmpfs: its pages count against --memory, so 1 GiB cannot be
// written there under 128M.
func TestLimitsMemoryTmpfs(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.runStatus("--memory", "128M", "--", shellPath, "-c",
		"dd if=/dev/zero of=/tmp/fill bs=1M count=1024 2>/dev/null; stat -c %s /tmp/fill")
	size, _ := strconv.ParseInt(strings.TrimSpace(r.stdout), 10, 64)
	if r.code == 0 && size >= 1<<30 {
		t.Fatalf("wrote a 1 GiB file to /tmp under --memory 128M\n%v", r)
	}
	if r.code == 125 {
		t.Fatalf("refused\n%v", r)
	}
	t.Logf("exit %d, size %q, status %v", r.code, strings.TrimSpace(r.stdout), r.exit)
	noGroupsLeft(t, r.id, "after a tmpfs fill")
}

// A fork bomb under --pids 32 never has more than 32 tasks, counted from the host in
// the sandbox's own pids group and by argv, while the host can still fork.
func TestLimitsPidsForkBomb(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	tok := "gosbx-it-bomb-" + s.id
	// A real fork bomb (every child forks again) for 1.5 s, held back until the host has
	// seen pids.max in place; then every process sleeps while the host counts.
	script := `import os, time
while not os.path.exists("go"):
    time.sleep(0.01)
end = time.monotonic() + 1.5
while time.monotonic() < end:
    try:
        os.fork()
    except OSError:
        time.sleep(0.01)
time.sleep(1.5)
`
	t.Cleanup(func() {
		for _, p := range bombPIDs(tok) {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	ctx := s.limitCtx(runLimit)
	sr := s.startStatus(ctx, "--pids", "32", "--", python, "-c", script, tok)
	sr.stdin.Close()
	first := sr.next(10 * time.Second)
	// The command is in the group from its start (the Go init placed before it forks;
	// a raw init, which stays out, has each command join before its execve): by the exec
	// line it is in.
	ex := sr.next(10 * time.Second)
	cmdPid, ok := num(ex, "pid")
	if ex["exec"] != true || !ok {
		sr.cmd.Process.Kill()
		t.Fatalf("second status line %v; want the exec line", ex)
	}
	dir := sandboxGroup(t, cmdPid, "pids")
	if filepath.Base(dir) != "gosbx-"+sandboxID(first) {
		t.Errorf("the sandbox's pids group %s is not named for its sandbox id %q", dir, sandboxID(first))
	}
	if got := readTrim(filepath.Join(dir, "pids.max")); got != "32" {
		sr.cmd.Process.Kill()
		t.Fatalf("pids.max of %s = %q; want 32 (not starting the bomb)", dir, got)
	}
	s.writeWS("go", "", 0o644)
	maxCur, maxTasks, maxArgv, hostForks := 0, 0, 0, 0
	end := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(end) {
		if n, err := strconv.Atoi(readTrim(filepath.Join(dir, "pids.current"))); err == nil && n > maxCur {
			maxCur = n
		}
		if n := len(strings.Fields(readTrim(filepath.Join(dir, "tasks")))); n > maxTasks {
			maxTasks = n
		}
		if n := len(bombPIDs(tok)); n > maxArgv {
			maxArgv = n
		}
		if exec.Command("/bin/true").Run() == nil {
			hostForks++
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs := sr.rest(30 * time.Second)
	err := sr.cmd.Wait()
	t.Logf("max pids.current %d, tasks %d, bomb processes by argv %d; host forks ok %d; gosbx: %v", maxCur, maxTasks, maxArgv, hostForks, err)
	if maxCur > 32 || maxTasks > 32 || maxArgv > 32 {
		t.Errorf("more than 32 tasks under --pids 32: pids.current %d, tasks %d, by argv %d", maxCur, maxTasks, maxArgv)
	}
	if maxArgv < 16 {
		t.Errorf("the bomb reached only %d processes: it did not run into the limit", maxArgv)
	}
	if hostForks == 0 {
		t.Error("the host could not fork during the bomb")
	}
	ev := exitEvent(t, evs, sr.raw.String())
	wantKey(t, ev, "limit-hit", "pids")
	wantKey(t, ev, "limits", "cgroup-v1")
	if pk, ok := num(ev, "pids-peak"); ok && pk > 32 {
		t.Errorf("pids-peak %d > 32", pk)
	}
	noGroupsLeft(t, sandboxID(first), "after a fork bomb")
	if left := waitBomb(tok); left != 0 {
		t.Errorf("%d bomb processes left on the host", left)
	}
}

// bombPIDs are the host processes running python with tok in their argv.
func bombPIDs(tok string) []int {
	var out []int
	for _, p := range hostPIDs(python) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if bytes.Contains(b, []byte(tok)) {
			out = append(out, p)
		}
	}
	return out
}

func waitBomb(tok string) int {
	end := time.Now().Add(5 * time.Second)
	for {
		n := len(bombPIDs(tok))
		if n == 0 || time.Now().After(end) {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A spinner under --cpus 0.2 uses about a fifth of a core (generous band), by
// cpu-usec against wall-ms.
func TestLimitsCPU(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.runStatus("--cpus", "0.2", "--", python, "-c", "import time\nend = time.time() + 2\nwhile time.time() < end: pass")
	mustSucceed(t, r.result, "spinner")
	ev := exitEvent(t, r.events, r.raw)
	wantKey(t, ev, "limits", "cgroup-v1")
	cpu, ok1 := num(ev, "cpu-usec")
	wall, ok2 := num(ev, "wall-ms")
	if !ok1 || !ok2 || wall < 1900 {
		t.Fatalf("cpu-usec %d wall-ms %d: missing or too short\n%v", cpu, wall, r)
	}
	ratio := float64(cpu) / float64(wall*1000)
	t.Logf("cpu-usec %d over wall-ms %d: %.3f of a core", cpu, wall, ratio)
	if ratio < 0.05 || ratio > 0.45 {
		t.Errorf("the spinner used %.3f of a core under --cpus 0.2; want 0.05..0.45", ratio)
	}
	user, _ := num(ev, "cpu-user-usec")
	sys, _ := num(ev, "cpu-system-usec")
	if user+sys != cpu {
		t.Errorf("cpu-user-usec %d + cpu-system-usec %d != cpu-usec %d", user, sys, cpu)
	}
	noGroupsLeft(t, r.id, "after the spinner")
}

// --fsize and --nofile are rlimits: they work for root and nobody alike, and are seen
// from the host in /proc/PID/limits of the command, with the core size 0.
func TestLimitsRlimits(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// dd is stopped at 1 MiB: SIGXFSZ (153) or, with it ignored, EFBIG
		r := s.run("--fsize", "1M", "--", "dd", "if=/dev/zero", "of=big", "bs=1M", "count=5")
		if r.code == 0 || (r.code != 128+int(syscall.SIGXFSZ) && !strings.Contains(r.stderr, "File too large")) {
			t.Errorf("dd of 5 MB under --fsize 1M: want SIGXFSZ or EFBIG\n%v", r)
		}
		if st, err := os.Stat(filepath.Join(s.ws, "big")); err != nil || st.Size() > 1<<20 {
			t.Errorf("big: %v, size %v; want at most 1 MiB", err, st)
		}
		// python ignores SIGXFSZ: the write fails with EFBIG
		r = s.run("--fsize", "1M", "--", python, "-c",
			"import errno\ntry:\n open('big2','wb').write(b'x'*(5<<20))\nexcept OSError as e:\n print(errno.errorcode[e.errno])")
		if strings.TrimSpace(r.stdout) != "EFBIG" {
			t.Errorf("python write of 5 MB under --fsize 1M: want EFBIG\n%v", r)
		}
		// 100 open files under --nofile 32
		r = s.run("--nofile", "32", "--", python, "-c", "fs = [open('/dev/null') for _ in range(100)]")
		if r.code == 0 || !strings.Contains(r.stderr, "Too many open files") {
			t.Errorf("100 open files under --nofile 32: want EMFILE\n%v", r)
		}
		mustSucceed(t, s.run("--nofile", "32", "--", python, "-c", "fs = [open('/dev/null') for _ in range(20)]"), "20 files under --nofile 32")

		// from the host
		ctx := s.limitCtx(runLimit)
		sr := s.startStatus(ctx, "--nofile", "32", "--fsize", "1M", "--", shellPath, "-c", "read x")
		var pid int64
		for pid == 0 {
			ev := sr.next(10 * time.Second)
			if ev == nil {
				sr.cmd.Process.Kill()
				t.Fatalf("no exec event: %s", sr.raw)
			}
			pid, _ = num(ev, "pid")
		}
		limits, err := os.ReadFile("/proc/" + strconv.FormatInt(pid, 10) + "/limits")
		sr.stdin.Close()
		sr.rest(30 * time.Second)
		sr.cmd.Wait()
		must(t, err)
		for _, want := range [][]string{
			{"Max open files", "32", "32"},
			{"Max file size", "1048576", "1048576"},
			{"Max core file size", "0", "0"},
		} {
			found := false
			for _, line := range strings.Split(string(limits), "\n") {
				if rest, ok := strings.CutPrefix(line, want[0]); ok {
					f := strings.Fields(rest)
					found = len(f) >= 2 && f[0] == want[1] && f[1] == want[2]
				}
			}
			if !found {
				t.Errorf("/proc/%d/limits: want %q %s %s\n%s", pid, want[0], want[1], want[2], limits)
			}
		}
	})
}

// No group is left after a normal exit (seen while it ran), a --timeout, and a kill -9
// of gosbx exec followed by the next run (a default one: it makes no group, and still
// removes the dead launcher's).
func TestLimitsCgroupCleanup(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)

	t.Run("normal exit, pids limit", func(t *testing.T) {
		ctx := s.limitCtx(runLimit)
		sr := s.startStatus(ctx, "--pids", "8192", "--", shellPath, "-c", "read x; exit 0")
		first := sr.next(10 * time.Second)
		// the command's groups (by the exec line it is in them, whichever init: the raw
		// init itself never joins)
		ex := sr.next(10 * time.Second)
		child, ok := num(ex, "pid")
		if ex["exec"] != true || !ok {
			sr.cmd.Process.Kill()
			t.Fatalf("second status line %v; want the exec line", ex)
		}
		id := sandboxID(first)
		for _, c := range v1Controllers {
			dir := sandboxGroup(t, child, c)
			if filepath.Base(dir) != "gosbx-"+id {
				t.Errorf("%s group %s: not the group of this sandbox (id %q)", c, dir, id)
			}
			if strings.Contains(filepath.Base(dir), strconv.Itoa(sr.cmd.Process.Pid)) {
				t.Errorf("%s group %s is named for the launcher's pid %d", c, dir, sr.cmd.Process.Pid)
			}
		}
		if got := readTrim(filepath.Join(sandboxGroup(t, child, "pids"), "pids.max")); got != "8192" {
			t.Errorf("pids.max = %q with --pids 8192", got)
		}
		if n := len(sandboxGroups(t, id)); n != len(v1Controllers) {
			t.Errorf("%d groups of the sandbox while it runs; want %d", n, len(v1Controllers))
		}
		sr.stdin.Close()
		evs := sr.rest(30 * time.Second)
		if err := sr.cmd.Wait(); err != nil {
			t.Fatalf("gosbx: %v\n%s", err, sr.stderr)
		}
		ev := exitEvent(t, evs, sr.raw.String())
		wantKey(t, ev, "limits", "cgroup-v1")
		if note, ok := ev["limits-note"]; ok {
			t.Errorf("limits-note %q with the limits applied", note)
		}
		noGroupsLeft(t, id, "after a normal exit")
	})

	t.Run("timeout", func(t *testing.T) {
		r := s.runStatus("--timeout", "1", "--pids", "64", "--", "sleep", "30")
		if r.code != 124 {
			t.Fatalf("want 124\n%v", r)
		}
		noGroupsLeft(t, r.id, "after --timeout")
	})

	// The owner (gosbx exec) SIGKILLed: its cgroup and its host id's lock file stay
	// behind (nothing removes them), and the next launch, seeing the owner's locks free,
	// reclaims both.
	t.Run("kill -9 of gosbx exec, then the next run", func(t *testing.T) {
		// In a cgroup scope: no other launch's sweep takes the dead owner's groups, or
		// keeps the next run's sweep from them (it skips a parent a launch holds).
		s := *s
		s.scope = newCgroupScope(t)
		sandboxGroups := func(t *testing.T, id string) []string {
			out := sandboxGroups(t, id)
			if s.scope == nil {
				return out
			}
			for _, d := range s.scope.dirs {
				if _, err := os.Stat(filepath.Join(d, "gosbx-"+id)); err == nil {
					out = append(out, filepath.Join(d, "gosbx-"+id))
				}
			}
			return out
		}
		sleep := s.sleepLink("kill9")
		ctx := s.limitCtx(runLimit)
		sr := s.startStatus(ctx, "--memory", "64M", "--", sleep, "30")
		var id string
		var hostID int64
		for {
			ev := sr.next(10 * time.Second)
			if ev == nil {
				sr.cmd.Process.Kill()
				t.Fatalf("no exec event: %s", sr.raw)
			}
			if _, ok := ev["child-pid"]; ok {
				id = sandboxID(ev)
				hostID, _ = num(ev, "host-uid")
			}
			if ev["exec"] == true {
				break
			}
		}
		if n := len(sandboxGroups(t, id)); n != len(v1Controllers) {
			t.Errorf("%d groups while it runs; want %d", n, len(v1Controllers))
		}
		lock := filepath.Join(rootIDDir, strconv.FormatInt(hostID, 10))
		if b, err := os.ReadFile(lock); hostID == 0 || err != nil || strings.TrimSpace(string(b)) != id {
			t.Errorf("host id %d: lock file %s holds %q (%v); want the sandbox id %q", hostID, lock, b, err, id)
		}
		must(t, sr.cmd.Process.Signal(syscall.SIGKILL))
		sr.cmd.Wait()
		t.Logf("groups right after kill -9: %q", sandboxGroups(t, id))
		if n := len(waitHostPIDs(sleep, 5*time.Second, func(n int) bool { return n == 0 })); n != 0 {
			t.Errorf("%d sandbox processes outlived gosbx exec", n)
		}
		if _, err := os.Stat(lock); err != nil {
			t.Logf("the lock file is already gone (%v): another launch swept it", err)
		}
		// the next run: its sweep must remove the dead owner's groups and lock file
		mustSucceed(t, s.run("--", "true"), "the next run")
		noLockLeft(t, hostID)
		var left []string
		if left = sandboxGroups(t, id); len(left) != 0 {
			t.Errorf("after kill -9 of gosbx exec and the next run, groups are left: %q", left)
		}
		if n := len(waitHostPIDs(sleep, 5*time.Second, func(n int) bool { return n == 0 })); n != 0 {
			t.Errorf("%d sandbox processes outlived gosbx exec", n)
		}
		if len(left) != 0 {
			// a later run, once the sandbox is surely gone, so nothing stays behind
			s.run("--", "true")
			if left = sandboxGroups(t, id); len(left) != 0 {
				t.Errorf("still left after a second run: %q", left)
			}
		}
	})

	// The same, with the next run in another cgroup than the killed launch (one user's
	// launches from an agent server's scope and from a terminal): its sweep finds the
	// dead owner's lock file free but no group in its own parents, and must still
	// remove the groups (their directories are recorded in the lock file), then the
	// file. Before the record it removed the file alone, and no later launch looked for
	// the groups again.
	t.Run("kill -9 of gosbx exec, then the next run from another cgroup", func(t *testing.T) {
		killed, next := *s, *s
		killed.scope, next.scope = newCgroupScope(t), newCgroupScope(t)
		if killed.scope == nil || next.scope == nil {
			t.Skip("no cgroup v1 scope here")
		}
		left := func(id string) []string {
			var out []string
			for _, d := range killed.scope.dirs {
				if _, err := os.Lstat(filepath.Join(d, "gosbx-"+id)); err == nil {
					out = append(out, filepath.Join(d, "gosbx-"+id))
				}
			}
			return out
		}
		sleep := killed.sleepLink("kill9other")
		sr := killed.startStatus(killed.limitCtx(runLimit), "--memory", "64M", "--", sleep, "30")
		var id string
		for {
			ev := sr.next(10 * time.Second)
			if ev == nil {
				sr.cmd.Process.Kill()
				t.Fatalf("no exec event: %s", sr.raw)
			}
			if _, ok := ev["child-pid"]; ok {
				id = sandboxID(ev)
			}
			if ev["exec"] == true {
				break
			}
		}
		lock := filepath.Join("/run/gosbx/cgroups", "gosbx-"+id) // the owner's lock file (cgroup/owner.go)
		if len(left(id)) == 0 {
			t.Errorf("no group of the sandbox in the killed launch's scope %q", killed.scope.dirs)
		}
		if b, err := os.ReadFile(lock); err != nil || !strings.Contains(string(b), "/gosbx-"+id+"\n") {
			t.Errorf("the owner's lock file %s records %q (%v); want the group's directories", lock, b, err)
		}
		must(t, sr.cmd.Process.Signal(syscall.SIGKILL))
		sr.cmd.Wait()
		if n := len(waitHostPIDs(sleep, 5*time.Second, func(n int) bool { return n == 0 })); n != 0 {
			t.Errorf("%d sandbox processes outlived gosbx exec", n)
		}
		mustSucceed(t, next.run("--", "true"), "the next run, from another cgroup")
		if l := left(id); len(l) != 0 {
			t.Errorf("after kill -9 of gosbx exec and the next run from another cgroup, groups are left: %q", l)
		}
		for _, l := range []string{lock, filepath.Join(filepath.Dir(lock), "record.gosbx-"+id)} { // both its names
			if _, err := os.Lstat(l); !os.IsNotExist(err) {
				t.Errorf("the dead owner's lock file %s is left (%v)", l, err)
			}
		}
		if l := next.scope.leftovers(); len(l) != 0 {
			t.Errorf("the next run left groups in its own scope: %q", l)
		}
	})
}

// nobody cannot make v1 groups: limits asked for (but the process limit, which holds as
// RLIMIT_NPROC: nproc_test.go) → 125 naming cgroup and the way out, nothing ran;
// --limits best-effort → runs and says why there is no cgroup; no flags at all → runs
// with the profile's process limit and no gosbx words on stderr.
func TestLimitsUnprivileged(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, nobodyCaller)
	marker := filepath.Join(s.ws, "marker")
	for _, flags := range [][]string{{"--memory", "64M"}, {"--memory", "64M", "--pids", "64"}, {"--cpus", "0.5"}, {"--memory", "64M", "--limits", "required"}} {
		os.Remove(marker)
		r := s.run(append(flags, "--", "touch", marker)...)
		if r.code != 125 {
			t.Errorf("%q as nobody: want 125 (no cgroup can be made)\n%v", flags, r)
		}
		if !strings.Contains(r.stderr, "cgroup") || !strings.Contains(r.stderr, "--limits best-effort") {
			t.Errorf("%q: the message does not name cgroup and the --limits best-effort way out:\n%s", flags, r.stderr)
		}
		// the cause, not the owner's lock directory it would have needed next (the
		// trial saw "mkdir /run/user/65534: permission denied" with XDG_RUNTIME_DIR set)
		// the CLI's words: flags and policy-file keys, no library field (trial T11)
		if strings.Contains(r.stderr, "config.Limits") || strings.Contains(r.stderr, "policy.Resources") || !strings.Contains(r.stderr, "limits: best-effort") {
			t.Errorf("%q: the CLI's message names library fields, or not the policy file's key:\n%s", flags, r.stderr)
		}
		if !strings.Contains(r.stderr, "unprivileged callers cannot create v1 groups") || strings.Contains(r.stderr, "/run/user") {
			t.Errorf("%q: the message does not name the v1 rule, or blames /run/user:\n%s", flags, r.stderr)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%q: the command ran although its limits could not be applied", flags)
		}
	}

	os.Remove(marker)
	r := s.runStatus("--memory", "64M", "--limits", "best-effort", "--", "touch", marker)
	mustSucceed(t, r.result, "--limits best-effort")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the command did not run with --limits best-effort: %v", err)
	}
	// the downgrade is said on stderr too, once, not only on the status fd
	if strings.Count(r.stderr, "gosbx: warning: running without the limits asked for (memory)") != 1 {
		t.Errorf("--limits best-effort without a cgroup: stderr %q; want one warning naming the limit", r.stderr)
	}
	// the memory limit is not applied; the profile's process limit is, as RLIMIT_NPROC
	ev := exitEvent(t, r.events, r.raw)
	wantKey(t, ev, "limits", "rlimit")
	if note, _ := ev["limits-note"].(string); !strings.Contains(note, "cgroup") {
		t.Errorf("limits-note %q; want why there is no cgroup", note)
	}
	// Without a cgroup nothing was measured: "cpu-usec": 0 and "oom-killed": false
	// would be false data (a spinner reports 0 µs), not "unknown".
	for _, k := range []string{"cpu-usec", "oom-killed", "memory-peak-bytes"} {
		if v, ok := ev[k]; ok {
			t.Errorf("exit line with limits none has %q: %v; want it absent (unknown without a cgroup)", k, v)
		}
	}

	r2 := s.run("--", shellPath, "-c", "echo only-this >&2")
	mustSucceed(t, r2, "no limit flags as nobody")
	if r2.stderr != "only-this\n" {
		t.Errorf("stderr %q; want exactly the command's (no gosbx note for a best-effort default)", r2.stderr)
	}
	r3 := s.runStatus("--", "true")
	mustSucceed(t, r3.result, "no limit flags as nobody, with --status-fd")
	// the profile's default process limit holds as RLIMIT_NPROC (nproc_test.go)
	ev = exitEvent(t, r3.events, r3.raw)
	wantKey(t, ev, "limits", "rlimit")
	if note, _ := ev["limits-note"].(string); note != "" {
		t.Errorf("limits-note %q; want none, the profile's default process limit is applied", note)
	}
	if r3.stderr != "" {
		t.Errorf("stderr %q; want empty", r3.stderr)
	}
}

// A host without the hierarchy a limit needs (booted with cgroup_disable=memory, or a
// kernel without the controller; shown in a private mount namespace where only that
// v1 hierarchy is missing): the limit asked for is refused (125), never silently not
// applied.
func TestLimitsMissingController(t *testing.T) {
	requireV1(t)
	s := newSandbox(t, rootCaller)
	for _, c := range []struct{ hide, flag, value string }{{"memory", "--memory", "16M"}, {"pids", "--pids", "16"}} {
		var keep []string
		for _, h := range []string{"memory", "pids", "cpu", "cpuacct", "freezer", "systemd", "unified", "devices", "blkio", "cpuset"} {
			if _, err := os.Stat("/sys/fs/cgroup/" + h); err == nil && h != c.hide {
				keep = append(keep, h)
			}
		}
		m := s.marker("nocontroller-" + c.hide)
		script := fmt.Sprintf(`B=$1; shift
S=$B/cgsave-%[1]s; L="%[2]s"
for h in $L; do mkdir -p $S/$h && mount --bind /sys/fs/cgroup/$h $S/$h || exit 77; done
mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup || exit 77
for h in $L; do mkdir /sys/fs/cgroup/$h && mount --bind $S/$h /sys/fs/cgroup/$h || exit 77; done
exec "$@" exec --workspace %[3]s %[4]s %[5]s -- touch %[6]s`, c.hide, strings.Join(keep, " "), s.ws, c.flag, c.value, m)
		r := s.inPrivateMountNS(script)
		wantRefused(t, "without the "+c.hide+" hierarchy", r, m, c.hide)
	}
}

// A root caller's default process limit (the agent profile's 8192, not asked for) is
// RLIMIT_NPROC on the sandbox's own host id, not a cgroup: seen from the host on the
// command; no group is made; the exit line says "limits": "rlimit" and has no usage.
func TestLimitsRootDefaultNproc(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	ctx := s.limitCtx(runLimit)
	sr := s.startStatus(ctx, "--", shellPath, "-c", "read x; exit 0")
	first := sr.next(10 * time.Second)
	if _, ok := num(first, "host-uid"); !ok {
		sr.cmd.Process.Kill()
		t.Fatalf("first status line %v: no host-uid, the launch was not mapped", first)
	}
	ex := sr.next(10 * time.Second)
	if ex["exec"] != true {
		sr.cmd.Process.Kill()
		t.Fatalf("second status line %v; want the exec line", ex)
	}
	cmdPid, _ := num(ex, "pid")
	limits, err := os.ReadFile("/proc/" + strconv.FormatInt(cmdPid, 10) + "/limits")
	if err != nil {
		sr.cmd.Process.Kill()
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(limits), "\n") {
		if f := strings.Fields(strings.TrimPrefix(l, "Max processes")); strings.HasPrefix(l, "Max processes") && len(f) >= 2 {
			found = f[0] == "8192" && f[1] == "8192"
		}
	}
	if !found {
		t.Errorf("the command's limits, from the host: want Max processes 8192 8192\n%s", limits)
	}
	if g := sandboxGroups(t, sandboxID(first)); len(g) != 0 {
		t.Errorf("groups made for a default launch: %q", g)
	}
	sr.stdin.Close()
	evs := sr.rest(30 * time.Second)
	if err := sr.cmd.Wait(); err != nil {
		t.Fatalf("gosbx: %v\n%s", err, sr.stderr)
	}
	ev := exitEvent(t, evs, sr.raw.String())
	wantKey(t, ev, "limits", "rlimit")
	for _, k := range []string{"cpu-usec", "oom-killed", "memory-peak-bytes"} {
		if _, ok := ev[k]; ok {
			t.Errorf("exit line has %s without a cgroup: %v", k, ev)
		}
	}
}

// --cgroup-parent names a cgroup v2 group; on a host whose controllers are in v1 a
// root caller's launch with limits is refused (125) saying to drop it, not "run as
// root" (a new user's trial, as root).
func TestCgroupParentOnV1AsRoot(t *testing.T) {
	requireV1(t)
	s := newSandbox(t, rootCaller)
	r := s.run("--cgroup-parent", "gosbx-test-parent", "--pids", "64", "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "drop --cgroup-parent") || strings.Contains(r.stderr, "run as root") {
		t.Errorf("--cgroup-parent on a v1 host as root: want 125 saying to drop it, not to run as root\n%v", r)
	}
}

// Trial finding: a limit's kill or refusal said nothing on stderr (only the status
// line's limit-hit did), where --timeout prints a line. Now one line each, from the
// status gosbx reads; a run within its limits prints none.
func TestLimitsHitSaysSo(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.run("--memory", "64M", "--", python, "-c", "b = bytearray(200 << 20)")
	if r.code != 137 || !strings.Contains(r.stderr, "gosbx: killed by the memory limit (64M)") {
		t.Errorf("OOM under --memory 64M: want 137 and the line\n%v", r)
	}
	// 40 background sleeps under --pids 20: the shell's fork fails (it exits 2)
	r = s.sh([]string{"--pids", "20"}, `i=0; while [ $i -lt 40 ]; do sleep 30 & i=$((i+1)); done; exit 0`)
	if !strings.Contains(r.stderr, "gosbx: the pids limit (20) refused a fork") {
		t.Errorf("forks past --pids 20: want the line\n%v", r)
	}
	r = s.run("--memory", "64M", "--pids", "20", "--", shellPath, "-c", "true")
	if r.code != 0 || strings.Contains(r.stderr, "limit") {
		t.Errorf("within the limits: want exit 0 and no line\n%v", r)
	}
}

// Trial finding: --cpus 3 on a 2-CPU host gave nproc 2 and no word. Now a warning
// (the quota still applies); a limit within the CPUs gives none.
func TestLimitsCPUsAboveHost(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	var own unix.CPUSet
	must(t, unix.SchedGetaffinity(0, &own))
	n := own.Count()
	r := s.run("--cpus", fmt.Sprint(n+1), "--", "nproc")
	want := fmt.Sprintf("gosbx: warning: --cpus %d is more than the %d CPUs you may run on", n+1, n)
	if r.code != 0 || r.stdout != fmt.Sprintf("%d\n", n) || !strings.Contains(r.stderr, want) {
		t.Errorf("--cpus %d on %d CPUs: want nproc %d and %q\n%v", n+1, n, n, want, r)
	}
	r = s.run("--cpus", fmt.Sprint(n), "--", "nproc")
	if r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Errorf("--cpus %d on %d CPUs: want no warning\n%v", n, n, r)
	}
}

// TestLimitsLockDirFIFO: a FIFO in root's lock directory, at the markers' directory's
// name (swept), at a lock file's two names and then at this cgroup's marker name in
// swept/, stalls no launch (attack review 18, F3: a FIFO at the marker hung every
// launch in open(2) for good). Run in a
// mount namespace of its own (unshare -m, private) with a directory of the test's bound
// on /run/gosbx/cgroups, so the host's lock directory is never touched; from the host,
// both launches end at once with 0, swept is a directory and the FIFO at the marker's
// name in it is a regular file.
func TestLimitsLockDirFIFO(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	mustSucceed(t, s.run("--memory", "64M", "--", "/bin/true"), "a launch that makes /run/gosbx/cgroups")
	locks := filepath.Join(s.base, "locks")
	must(t, os.Mkdir(locks, 0o700))
	script := `set -e
mount --bind "$1" /run/gosbx/cgroups
mkfifo -m600 /run/gosbx/cgroups/swept /run/gosbx/cgroups/gosbx-aaaa000000000001 /run/gosbx/cgroups/record.gosbx-aaaa000000000002
"$2" exec --workspace "$3" --memory 64M -- /bin/true
m=$(cd /run/gosbx/cgroups/swept && ls)
rm /run/gosbx/cgroups/swept/$m
mkfifo -m600 /run/gosbx/cgroups/swept/$m
"$2" exec --workspace "$3" --memory 64M -- /bin/true
echo "swept/$m"`
	ctx := s.limitCtx(30 * time.Second)
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", locks, gosbxBin, s.ws)
	// In a cgroup scope of its own: with a private lock directory these launches see no
	// other launch's lock file, so their sweep would take a concurrent test's group whose
	// directory lock its owner had not yet taken for one of theirs.
	newCgroupScope(t).wrap(cmd)
	cmd.Dir = s.base
	// a launch blocked in open(2) ends only by SIGKILL: the whole process group's
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the launches stalled on a FIFO in the lock directory (30 s)\n%s", out)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	marker := filepath.Join(locks, lines[len(lines)-1])
	if fi, err := os.Lstat(marker); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the FIFO at the marker's name %s was not replaced by the marker: %v %v", marker, fi, err)
	}
}

// TestLimitsSweptMarkersMoved: the markers of whole sweeps are in root's lock
// directory's swept/, not in the directory itself, which every launch lists; the 2,000
// markers an older gosbx left there (swept.<hash>) are removed by the launch that makes
// swept/. Run as TestLimitsLockDirFIFO, on a directory of the test's bound on
// /run/gosbx/cgroups in a mount namespace of its own; checked from the host.
func TestLimitsSweptMarkersMoved(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	mustSucceed(t, s.run("--memory", "64M", "--", "/bin/true"), "a launch that makes /run/gosbx/cgroups")
	locks := filepath.Join(s.base, "locks")
	must(t, os.Mkdir(locks, 0o700))
	for i := range 2000 {
		must(t, os.WriteFile(filepath.Join(locks, fmt.Sprintf("swept.%032x", i)), nil, 0o600))
	}
	script := `set -e
mount --bind "$1" /run/gosbx/cgroups
"$2" exec --workspace "$3" --memory 64M -- /bin/true
"$2" exec --workspace "$3" --memory 64M -- /bin/true`
	ctx := s.limitCtx(30 * time.Second)
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", locks, gosbxBin, s.ws)
	newCgroupScope(t).wrap(cmd) // no concurrent test's lock files in view: see TestLimitsLockDirFIFO
	cmd.Dir = s.base
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	es, err := os.ReadDir(locks)
	must(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "swept" || !es[0].IsDir() {
		t.Errorf("the lock directory after two launches holds %d entries (first %q), want only the directory swept", len(names), names[:min(4, len(names))])
	}
	fi, err := os.Stat(filepath.Join(locks, "swept"))
	must(t, err)
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("swept/ is mode %v, want 0700", fi.Mode().Perm())
	}
	if ms, err := os.ReadDir(filepath.Join(locks, "swept")); err != nil || len(ms) != 1 || !ms[0].Type().IsRegular() {
		t.Errorf("swept/ holds %v (%v), want one marker, a regular file", ms, err)
	}
}
