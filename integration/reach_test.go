package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// reachProbe is a command that tries everything a process can do to another of the
// same ids (issue 15, item 1) on pid 1 and on every other process it can see: lower
// its RLIMIT_NOFILE to 0 (prlimit(2), and prlimit(1) on pid 1), write its
// oom_score_adj, clear_refs, autogroup and sched, list its fds, send it SIGSEGV by
// kill(2) and with an SI_QUEUE si_code, and PTRACE_ATTACH and PTRACE_SEIZE it. Then
// it runs the commands in argv[1:] (a shell line) and exits with argv[2].
const reachProbe = `
import ctypes, os, struct, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
me = os.getpid()
pids = sorted({1} | {int(p) for p in os.listdir("/proc") if p.isdigit()} - {me})
class rlimit(ctypes.Structure):
    _fields_ = [("cur", ctypes.c_ulong), ("max", ctypes.c_ulong)]
def try_(what, f):
    try:
        r = f()
        print("DONE", what, r)
    except OSError as e:
        print("FAILED", what, e.errno)
for pid in pids:
    zero = rlimit(0, 0)
    rc = libc.syscall(302, pid, 7, ctypes.byref(zero), None)  # prlimit64 RLIMIT_NOFILE
    print("PRLIMIT", pid, rc, ctypes.get_errno())
    for f, v in (("oom_score_adj", "1000"), ("clear_refs", "1"), ("autogroup", "19"), ("sched", "0")):
        def w(f=f, v=v):
            with open("/proc/%d/%s" % (pid, f), "w") as fh:
                fh.write(v)
        try_("write %d %s" % (pid, f), w)
    try_("list %d fd" % pid, lambda: os.listdir("/proc/%d/fd" % pid))
    try_("kill %d SEGV" % pid, lambda: os.kill(pid, 11))
    info = struct.pack("iii", 11, 0, -1) + bytes(116)  # SI_QUEUE
    print("SIGQUEUE", pid, libc.syscall(129, pid, 11, info), ctypes.get_errno())
    for name, req in (("ATTACH", 16), ("SEIZE", 0x4206)):
        print("PTRACE", name, pid, libc.ptrace(req, pid, None, None), ctypes.get_errno())
print(subprocess.run(["prlimit", "--pid", "1", "--nofile=0:0"], capture_output=True).returncode, "prlimit(1)")
subprocess.run(["/bin/sh", "-c", sys.argv[1]])
print("READY", flush=True)
sys.stdin.read()
sys.exit(int(sys.argv[2]))
`

// The command cannot reach the sandbox's init (issue 15, item 1): whatever it does to
// the processes it can see, from the host the init keeps its open-files limit,
// oom_score_adj and tracer, and when gosbx itself is then SIGKILLed the init still does
// commit mode's cleanup after the run (a planted .git/commondir is removed). On the old
// init, which the command could name as pid 1, prlimit(2) set its RLIMIT_NOFILE to 0
// and the planted file stayed.
func TestCommandCannotReachInit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		probe := s.writeWS("reach.py", reachProbe, 0o644)
		ctx := s.limitCtx(runLimit)
		sr := s.startStatus(ctx, "--policy", s.commitPolicy(), "--", python, probe, "echo ../evil > .git/commondir", "0")
		first := sr.next(10 * time.Second)
		initPID, ok := num(first, "child-pid")
		if !ok {
			sr.cmd.Process.Kill()
			t.Fatalf("first status line %v: no child-pid", first)
		}
		var out strings.Builder
		for {
			line, err := sr.stdout.ReadString('\n')
			out.WriteString(line)
			if err != nil || line == "READY\n" {
				break
			}
		}
		if !strings.Contains(out.String(), "READY") {
			sr.cmd.Process.Kill()
			t.Fatalf("the probe did not finish:\n%s\n%s", out.String(), sr.stderr)
		}
		// From the host: the init is untouched.
		proc := fmt.Sprintf("/proc/%d/", initPID)
		limits, err := os.ReadFile(proc + "limits")
		must(t, err)
		for _, l := range strings.Split(string(limits), "\n") {
			if f := strings.Fields(strings.TrimPrefix(l, "Max open files")); strings.HasPrefix(l, "Max open files") && (len(f) < 2 || f[0] == "0" || f[1] == "0") {
				t.Errorf("the command lowered the init's open-files limit: %q", l)
			}
		}
		mine, _ := os.ReadFile("/proc/self/oom_score_adj")
		if adj, err := os.ReadFile(proc + "oom_score_adj"); err != nil || string(adj) != string(mine) {
			t.Errorf("the init's oom_score_adj is %q (%v), want the caller's %q", adj, err, mine)
		}
		b, err := os.ReadFile(proc + "status")
		must(t, err)
		if st := procStatus(string(b)); st["TracerPid"] != "0" || strings.HasPrefix(st["State"], "t") {
			t.Errorf("the init is traced or stopped: TracerPid %s State %s", st["TracerPid"], st["State"])
		}
		if t.Failed() {
			t.Logf("probe:\n%s", out.String())
		}
		// gosbx is killed: the init, healthy, cleans up in its place.
		sr.cmd.Process.Signal(syscall.SIGKILL)
		sr.cmd.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, err := os.Lstat(filepath.Join(gitDir, "commondir"))
			if err != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("after gosbx was killed, the planted .git/commondir is still there: the init did not clean up\nprobe:\n%s", out.String())
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// After the same attempts, a sandbox still ends as it should: the command's exit
// status, no trace from the init, and its exit report.
func TestInitEndsCleanlyAfterReachAttempts(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		probe := s.writeWS("reach.py", reachProbe, 0o644)
		r := s.runIn(strings.NewReader(""), "--", python, probe, "true", "7")
		if r.code != 7 {
			t.Errorf("want the command's exit 7\n%v", r)
		}
		if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "SIG") {
			t.Errorf("the init crashed or printed a trace:\n%v", r)
		}
	})
}
