package integration

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sessionInfo is one entry of `gosbx session ls --json`.
type sessionInfo struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Pid       int    `json:"pid"`
	InitPid   int    `json:"init-pid"`
	SandboxID string `json:"sandbox-id"`
	Processes int    `json:"processes"`
	Memory    int64  `json:"memory-bytes"`
}

// sessionEnv is a caller with a runtime directory of its own for sessions
// ($XDG_RUNTIME_DIR, 0700, the caller's), so that tests do not see each other's, and a
// cgroup scope of its own that every gosbx it runs starts in: its sessions' groups are
// made there, and only its own gosbx commands sweep them (another launch's sweep
// killed a session's init whose supervisor the test had killed, before the init could
// do its cleanup).
type sessionEnv struct {
	*sandbox
	rt    string // $XDG_RUNTIME_DIR; the sessions' files are in rt/gosbx
	scope *cgroupScope
}

func newSessionEnv(t *testing.T, c caller) *sessionEnv {
	s := newSandbox(t, c)
	rt := filepath.Join(s.base, "rt")
	must(t, os.Mkdir(rt, 0o700))
	s.chown(rt)
	e := &sessionEnv{s, rt, newCgroupScope(t)}
	t.Cleanup(e.stopAll)
	return e
}

// gosbx runs gosbx with args as the caller, with the runtime directory set.
func (e *sessionEnv) gosbx(args ...string) result {
	e.t.Helper()
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, args...)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	e.scope.wrap(cmd)
	return e.runCmd(ctx, cmd)
}

// in runs `sh -c script` in session name with extra exec flags.
func (e *sessionEnv) in(name string, flags []string, script string) result {
	e.t.Helper()
	args := append(append([]string{"exec", "--session", name}, flags...), "--", shellPath, "-c", script)
	return e.gosbx(args...)
}

func (e *sessionEnv) start(name string, flags ...string) {
	e.t.Helper()
	if !slices.Contains(flags, "--die-with-owner") {
		// a test binary killed before its cleanup (a timeout, ^C) leaves no session behind
		flags = append(flags, "--die-with-owner", strconv.Itoa(os.Getpid()))
	}
	r := e.gosbx(append([]string{"session", "start", name, "--workspace", e.ws}, flags...)...)
	mustSucceed(e.t, r, "session start "+name)
}

func (e *sessionEnv) ls() []sessionInfo {
	e.t.Helper()
	r := e.gosbx("session", "ls", "--json")
	mustSucceed(e.t, r, "session ls")
	var out []sessionInfo
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		e.t.Fatalf("session ls --json: %v\n%v", err, r)
	}
	return out
}

func (e *sessionEnv) info(name string) sessionInfo {
	e.t.Helper()
	for _, in := range e.ls() {
		if in.Name == name {
			return in
		}
	}
	e.t.Fatalf("session %s not listed", name)
	return sessionInfo{}
}

// runtimeFiles lists the sessions' files left in the runtime directory (NAME.lock,
// NAME.sock, NAME.jobs; the cleanup journals and their seals share the directory).
func (e *sessionEnv) runtimeFiles() []string {
	ents, _ := os.ReadDir(filepath.Join(e.rt, "gosbx"))
	var out []string
	for _, x := range ents {
		if ext := filepath.Ext(x.Name()); ext == ".lock" || ext == ".sock" || ext == ".jobs" {
			out = append(out, x.Name())
		}
	}
	return out
}

// stopAll stops whatever a failed test left running.
func (e *sessionEnv) stopAll() {
	for _, f := range e.runtimeFiles() {
		if name, ok := strings.CutSuffix(f, ".lock"); ok {
			cmd := e.rawCommand(e.limitCtx(runLimit), "session", "stop", name)
			cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
			e.scope.wrap(cmd)
			cmd.Run()
		}
	}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// checkNothingLeft fails unless the session in is gone from the host: its supervisor,
// its init, every process its commands started (found by link), its runtime files and
// its cgroups.
func (e *sessionEnv) checkNothingLeft(in sessionInfo, link string, when string) {
	e.t.Helper()
	for i, p := range []int{in.Pid, in.InitPid} {
		if alive(p) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
			e.t.Errorf("%s: the session's %s, %d, is alive: %s", when, []string{"supervisor", "init"}[i], p, b)
		}
	}
	if link != "" {
		if left := waitHostPIDs(link, 2*time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			e.t.Errorf("%s: processes of the session survived: %v", when, left)
		}
	}
	if f := e.runtimeFiles(); len(f) > 0 {
		e.t.Errorf("%s: runtime files left: %q", when, f)
	}
	if e.c.uid == 0 {
		var left []string
		for i := 0; i < 10; i++ {
			if left = e.sandboxGroups(in.SandboxID); len(left) == 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		e.t.Errorf("%s: cgroup directories left behind by the session's sandbox %s: %q", when, in.SandboxID, left)
	}
}

// sandboxGroups lists the groups of the sandbox id in the env's scope, and beside it
// (sandboxGroups: where none should be).
func (e *sessionEnv) sandboxGroups(id string) []string {
	e.t.Helper()
	out := sandboxGroups(e.t, id)
	if e.scope != nil {
		for _, d := range e.scope.dirs {
			if _, err := os.Stat(filepath.Join(d, "gosbx-"+id)); err == nil {
				out = append(out, filepath.Join(d, "gosbx-"+id))
			}
		}
	}
	return out
}

// TestSessionPersists: what one `exec --session` call starts in the background is
// there for the next (a process alive on the host, a server answering on the
// sandbox's loopback, a file in its /tmp), and `session stop` leaves no process,
// cgroup or runtime file. As root the session has a memory limit: its cgroup exists
// while it runs and is gone after.
func TestSessionPersists(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		var flags []string
		if c.uid == 0 {
			flags = []string{"--memory", "512M"}
		}
		e.start("p", flags...)
		link := e.sleepLink("sess")
		port := 20000 + int(time.Now().UnixNano()%10000)
		r := e.in("p", nil, fmt.Sprintf(`"%s" 1000 </dev/null >/dev/null 2>&1 &
python3 -m http.server %d --bind 127.0.0.1 </dev/null >/dev/null 2>&1 &
echo kept > /tmp/kept`, link, port))
		mustSucceed(t, r, "first call")
		if n := len(hostPIDs(link)); n != 1 {
			t.Fatalf("the background sleep of the first call: %d processes on the host after it returned, want 1", n)
		}
		r = e.in("p", nil, fmt.Sprintf(`cat /tmp/kept
for i in $(seq 100); do
  python3 -c 'import urllib.request,sys; sys.stdout.write(str(urllib.request.urlopen("http://127.0.0.1:%d/").status))' 2>/dev/null && exit 0
  sleep 0.1
done; exit 9`, port))
		if r.code != 0 || r.stdout != "kept\n200" {
			t.Fatalf("second call: want the file and the server's 200\n%v", r)
		}
		in := e.info("p")
		if in.State != "running" || in.Processes < 2 {
			t.Errorf("session ls: %+v; want running with the sleep and the server", in)
		}
		if c.uid == 0 && len(e.sandboxGroups(in.SandboxID)) == 0 {
			t.Errorf("no cgroup of the session %s while it runs", in.SandboxID)
		}
		mustSucceed(t, e.gosbx("session", "stop", "p"), "session stop")
		e.checkNothingLeft(in, link, "after session stop")
		if r := e.in("p", nil, "true"); r.code != 125 {
			t.Errorf("exec in a stopped session: want 125\n%v", r)
		}
	})
}

// TestSessionTmux: a tmux server started by one call is reached by `tmux ls` in the
// next: every command of a session runs as the same uid inside and on the host
// (tmux's server checks its client's uid).
func TestSessionTmux(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("t")
		mustSucceed(t, e.in("t", nil, "tmux new -d -s w 'sleep 1000'"), "tmux new")
		r := e.in("t", nil, "tmux ls")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "w: 1 windows") {
			t.Fatalf("tmux ls in the next call\n%v", r)
		}
		r = e.in("t", nil, "tmux kill-server")
		mustSucceed(t, r, "tmux kill-server")
	})
}

// TestSessionExitStatus: a command in a session exits as under gosbx exec (its status,
// 127 when not found, 124 on its --timeout, with the status lines), --env and --chdir
// narrow the session's process, and the session outlives each of them.
func TestSessionExitStatus(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		must(t, os.Mkdir(filepath.Join(e.ws, "sub"), 0o755))
		e.start("x")
		if r := e.in("x", nil, "exit 3"); r.code != 3 {
			t.Errorf("exit 3\n%v", r)
		}
		if r := e.gosbx("exec", "--session", "x", "--", "no-such-command-xyz"); r.code != 127 {
			t.Errorf("a missing command: want 127\n%v", r)
		}
		start := time.Now()
		if r := e.in("x", []string{"--timeout", "1"}, "sleep 30"); r.code != 124 || time.Since(start) > 20*time.Second {
			t.Errorf("--timeout 1: want 124 within seconds\n%v", r)
		}
		r := e.in("x", []string{"--env", "FOO=bar", "--chdir", "sub"}, `echo "$FOO $PWD"`)
		if r.code != 0 || r.stdout != "bar "+filepath.Join(e.ws, "sub")+"\n" {
			t.Errorf("--env and --chdir\n%v", r)
		}
		status := filepath.Join(e.base, "status.json")
		f, err := os.Create(status)
		must(t, err)
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, "exec", "--session", "x", "--status-fd", "3", "--", "sh", "-c", "exit 4")
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.ExtraFiles = []*os.File{f}
		if r := e.runCmd(ctx, cmd); r.code != 4 {
			t.Errorf("exit 4 with --status-fd\n%v", r)
		}
		f.Close()
		b, _ := os.ReadFile(status)
		var exec, exit bool
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(l), &ev) != nil {
				t.Fatalf("status line %q is not JSON", l)
			}
			exec = exec || ev["exec"] == true
			exit = exit || ev["exit-code"] == float64(4)
		}
		if !exec || !exit {
			t.Errorf("status lines %q: want an exec line and exit-code 4", b)
		}
	})
}

// TestSessionRefusesWidening: a request cannot widen the session's policy: every
// boundary flag but --env, --chdir and --timeout is refused with 125, and the command
// does not run.
func TestSessionRefusesWidening(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("w")
	marker := filepath.Join(e.ws, "ran")
	for _, flags := range [][]string{{"--rw", "/var/tmp"}, {"--ro", "/etc"}, {"--net", "host"},
		{"--policy", "build"}, {"--memory", "1G"}, {"--workspace", "/var/tmp"}, {"--tmpfs", "/mnt"}} {
		r := e.in("w", flags, "touch "+marker)
		if r.code != 125 || !strings.Contains(r.stderr, "gosbx: "+flags[0]+" cannot be used with --session") {
			t.Errorf("%v: want 125 and the refusal naming the flag as typed (no Go slice brackets)\n%v", flags, r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%v: the command ran", flags)
		}
	}
	mustSucceed(t, e.in("w", nil, "touch "+marker), "the same command without the flag")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the command did not run without the flag: %v", err)
	}
}

// TestSessionOtherUID: another uid gets nothing from a session: root, whom the
// socket's mode does not stop, connects and is not answered (SO_PEERCRED), and uid
// 65533 can neither list the runtime directory nor use it as its own.
func TestSessionOtherUID(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("o")
	sock := filepath.Join(e.rt, "gosbx", "o.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	must(t, err)
	defer syscall.Close(fd)
	must(t, syscall.Connect(fd, &syscall.SockaddrUnix{Name: sock}))
	// A ReqInfo frame: length 1, kind 'L'.
	frame := binary.LittleEndian.AppendUint32(nil, 1)
	frame = append(frame, 'L')
	// The supervisor may have closed the connection (SO_PEERCRED, at accept) before the
	// frame is written: EPIPE or ECONNRESET then, and the read below sees the close.
	if _, err := syscall.Write(fd, frame); err != nil && err != syscall.EPIPE && err != syscall.ECONNRESET {
		t.Fatal(err)
	}
	tv := syscall.Timeval{Sec: 10}
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	buf := make([]byte, 4096)
	n, err := syscall.Read(fd, buf)
	if n > 0 || (err != nil && err != syscall.ECONNRESET) {
		t.Errorf("root's request to uid 65534's session was answered (%d bytes %q, %v); want the connection closed", n, buf[:max(n, 0)], err)
	}
	other := exec.Command("/usr/bin/setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", "ls", filepath.Join(e.rt, "gosbx"))
	if out, err := other.CombinedOutput(); err == nil {
		t.Errorf("uid 65533 listed the runtime directory: %s", out)
	}
	other = exec.Command("/usr/bin/setpriv", "--reuid=65533", "--regid=65533", "--clear-groups", gosbxBin, "session", "ls")
	other.Env = []string{"XDG_RUNTIME_DIR=" + e.rt, "PATH=/usr/bin:/bin"}
	if out, err := other.CombinedOutput(); err == nil || strings.Contains(string(out), "\no ") {
		t.Errorf("uid 65533 used uid 65534's runtime directory: %v\n%s", err, out)
	}
	// The owner itself is answered.
	if in := e.info("o"); in.State != "running" {
		t.Errorf("the owner's session ls: %+v", in)
	}
}

// TestSessionSupervisorKilled: the supervisor SIGKILLed, its sandbox ends (the life
// pipe) and the next `session ls` removes its leftovers.
func TestSessionSupervisorKilled(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		var flags []string
		if c.uid == 0 {
			flags = []string{"--memory", "512M"}
		}
		e.start("k", flags...)
		link := e.sleepLink("killed")
		mustSucceed(t, e.in("k", nil, `"`+link+`" 1000 </dev/null >/dev/null 2>&1 &`), "background sleep")
		in := e.info("k")
		must(t, syscall.Kill(in.Pid, syscall.SIGKILL))
		r := e.gosbx("session", "ls")
		mustSucceed(t, r, "session ls after the kill")
		if !strings.Contains(r.stderr, "session k: its supervisor is gone") {
			t.Errorf("session ls does not say it cleaned up\n%v", r)
		}
		e.checkNothingLeft(in, link, "after the supervisor's SIGKILL and session ls")
	})
}

// TestSessionStartFails: a session that cannot be built (a limit that cannot be
// applied for uid 65534, a bad policy) exits 125 and leaves no supervisor, init or
// runtime file.
func TestSessionStartFails(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	for _, flags := range [][]string{{"--memory", "100M"}, {"--ro", "/nonexistent-gosbx-path"}} {
		r := e.gosbx(append([]string{"session", "start", "f", "--workspace", e.ws}, flags...)...)
		if r.code != 125 {
			t.Errorf("%v: want 125\n%v", flags, r)
		}
		if f := e.runtimeFiles(); len(f) > 0 {
			t.Errorf("%v: runtime files left: %q", flags, f)
		}
		if p := hostPIDs("gosbx\x00gosbx-session-supervisor\x00f\x00"); len(p) > 0 {
			t.Errorf("%v: supervisor processes left: %v", flags, p)
		}
	}
}

// TestSessionIdleTimeout: --idle-timeout ends a session with no command and no
// process left, and not one with a process running.
func TestSessionIdleTimeout(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("i", "--idle-timeout", "1")
	e.start("busy", "--idle-timeout", "1")
	link := e.sleepLink("idle")
	mustSucceed(t, e.in("busy", nil, `"`+link+`" 1000 </dev/null >/dev/null 2>&1 &`), "background sleep")
	in := e.info("i")
	end := time.Now().Add(15 * time.Second)
	// the supervisor ends after its init (its cleanup comes last): wait for both
	for (alive(in.InitPid) || alive(in.Pid)) && time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(in.InitPid) || alive(in.Pid) {
		t.Fatalf("the idle session is alive 15s after its 1s idle timeout")
	}
	for _, f := range e.runtimeFiles() {
		if strings.HasPrefix(f, "i.") {
			t.Errorf("runtime file %s of the idle session left", f)
		}
	}
	if b := e.info("busy"); b.Processes != 1 {
		t.Errorf("the busy session: %+v; want running with its sleep", b)
	}
	mustSucceed(t, e.gosbx("session", "stop", "busy"), "stop")
	// the next call says why each ended (trial finding 8), from the record beside the
	// socket; a new session of the name removes the record of the last
	for name, want := range map[string]string{"i": "--idle-timeout 1s: no command and no process in it for that long", "busy": ": gosbx session stop"} {
		r := e.gosbx("exec", "--session", name, "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, fmt.Sprintf(`no session %q is running (gosbx session ls); it ended at `, name)) || !strings.Contains(r.stderr, want) {
			t.Errorf("exec in the ended session %s: want 125 saying it ended, %q\n%v", name, want, r)
		}
	}
	e.start("i")
	if _, err := os.Lstat(filepath.Join(e.rt, "gosbx", "i.ended")); !os.IsNotExist(err) {
		t.Errorf("the record of the last session i is left while a new one runs: %v", err)
	}
	mustSucceed(t, e.gosbx("session", "stop", "i"), "stop")
}

const manySessions = 50

// TestSessionMany: 50 sessions (issue 16), all alive at once, started and stopped leave nothing behind.
func TestSessionMany(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		var infos []sessionInfo
		for i := 0; i < manySessions; i++ {
			e.start("m" + strconv.Itoa(i))
		}
		infos = e.ls()
		if len(infos) != manySessions {
			t.Fatalf("session ls lists %d sessions, want %d", len(infos), manySessions)
		}
		for i := 0; i < manySessions; i++ {
			mustSucceed(t, e.gosbx("session", "stop", "m"+strconv.Itoa(i)), "stop")
		}
		for _, in := range infos {
			e.checkNothingLeft(in, "", "after many sessions")
		}
		if l := e.ls(); len(l) != 0 {
			t.Errorf("session ls after the stops: %+v", l)
		}
	})
}

// TestSessionStopGrace: `session stop` sends SIGTERM, and kills what ignores it after
// the grace period (2 s); what ends on SIGTERM ends at once.
func TestSessionStopGrace(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("g")
	link := e.sleepLink("stubborn")
	mustSucceed(t, e.in("g", nil, `trap '' TERM; "`+link+`" 1000 </dev/null >/dev/null 2>&1 &`), "a sleep ignoring SIGTERM")
	in := e.info("g")
	start := time.Now()
	mustSucceed(t, e.gosbx("session", "stop", "g"), "stop")
	if d := time.Since(start); d < 1500*time.Millisecond || d > 15*time.Second {
		t.Errorf("stop took %v; want the 2s grace, then SIGKILL", d)
	}
	e.checkNothingLeft(in, link, "after stopping a session whose process ignores SIGTERM")
}

// TestSessionCleanupAfterRun: what a session's command plants in the workspace's git
// dir that must not outlive the sandbox (git commit mode's cleanup) is removed when the
// session ends: by the supervisor on `session stop`, by the sandbox's init itself when
// the supervisor is SIGKILLed.
func TestSessionCleanupAfterRun(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, how := range []string{"stop", "kill"} {
			t.Run(how, func(t *testing.T) {
				e := newSessionEnv(t, c)
				e.newRepo(e.ws, "host-commit")
				e.start("c", "--policy", e.commitPolicy())
				// planted by a process left in the background, once the host makes ws/go:
				// after its request, whose end removes what it planted itself
				mustSucceed(t, e.in("c", nil, `git init -q --bare evil && (while [ ! -e go ]; do sleep 0.02; done; echo ../evil > .git/commondir) >/dev/null 2>&1 </dev/null &`), "plant")
				commondir := filepath.Join(e.ws, ".git", "commondir")
				must(t, os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644))
				if !waitPath(commondir, false, 10*time.Second) {
					t.Fatalf("the command could not plant %s", commondir)
				}
				in := e.info("c")
				if how == "stop" {
					mustSucceed(t, e.gosbx("session", "stop", "c"), "stop")
				} else {
					must(t, syscall.Kill(in.Pid, syscall.SIGKILL))
					// the init removes it itself once its owner is gone (the next
					// session command would complete the journal otherwise)
					for end := time.Now().Add(10 * time.Second); alive(in.InitPid) && time.Now().Before(end); {
						time.Sleep(20 * time.Millisecond)
					}
					if _, err := os.Lstat(commondir); err == nil {
						t.Errorf("the sandbox's init ended without removing %s", commondir)
					}
					mustSucceed(t, e.gosbx("session", "ls"), "session ls")
				}
				if _, err := os.Lstat(commondir); err == nil {
					t.Errorf("the planted %s outlived the session (%s)", commondir, how)
				}
				e.checkNothingLeft(in, "", "after "+how)
			})
		}
	})
}

// TestSessionJobs: `exec --session --detach` returns at once with a job id; the job's
// output is in its log after the caller is gone; `job wait` exits with the job's
// status; `job kill` ends the job's whole process group (checked on the host); and
// `session stop` removes the logs with the rest.
func TestSessionJobs(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("j")
		start := time.Now()
		r := e.gosbx("exec", "--session", "j", "--detach", "--", "sh", "-c", "echo out; echo err >&2; sleep 1; exit 6")
		if r.code != 0 || r.stdout != "j/1\n" || time.Since(start) > 900*time.Millisecond {
			t.Fatalf("--detach: want j/1 at once\n%v", r)
		}
		if r := e.gosbx("job", "wait", "j/1"); r.code != 6 {
			t.Errorf("job wait: want the job's 6\n%v", r)
		}
		if r := e.gosbx("job", "logs", "j/1"); r.code != 0 || r.stdout != "out\nerr\n" {
			t.Errorf("job logs\n%v", r)
		}
		link := e.sleepLink("job")
		mustSucceed(t, e.gosbx("exec", "--session", "j", "--detach", "--", "sh", "-c",
			`"$0" 1000 & "$0" 1001; echo never`, link), "a job of two sleeps")
		if p := waitHostPIDs(link, 5*time.Second, func(n int) bool { return n == 2 }); len(p) != 2 {
			t.Fatalf("the job's two sleeps on the host: %v", p)
		}
		mustSucceed(t, e.gosbx("job", "kill", "--signal", "KILL", "j/2"), "job kill")
		if r := e.gosbx("job", "wait", "j/2"); r.code != 137 {
			t.Errorf("job wait after kill: want 137\n%v", r)
		}
		if left := waitHostPIDs(link, 2*time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("job kill left processes of the job's group: %v", left)
		}
		r = e.gosbx("job", "ls", "--json", "j")
		var jobs []struct {
			ID       int    `json:"id"`
			State    string `json:"state"`
			ExitCode *int   `json:"exit-code"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &jobs); err != nil || len(jobs) != 2 || jobs[0].ExitCode == nil || *jobs[0].ExitCode != 6 || jobs[1].State != "exited" {
			t.Errorf("job ls --json: %v\n%v", err, r)
		}
		if r := e.gosbx("job", "wait", "j/7"); r.code != 125 {
			t.Errorf("job wait of no job: want 125\n%v", r)
		}
		in := e.info("j")
		mustSucceed(t, e.gosbx("session", "stop", "j"), "stop")
		e.checkNothingLeft(in, link, "after stopping a session with jobs")
	})
}

// TestSessionTTY: `exec --session --tty` runs the command on a terminal of the
// sandbox's own devpts (a pts of the sandbox, not the caller's), its controlling
// terminal: `tty` names it, its window size is the caller's, Ctrl-C typed on the
// caller's terminal (\x03, relayed raw) interrupts the foreground sleep while the
// shell, which traps SIGINT, goes on; TIOCSTI on it is still refused.
func TestSessionTTY(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("y")
		m, sl := openPty(t)
		must(t, unix.IoctlSetWinsize(int(sl.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 33, Col: 77}))
		var hostTerm unix.Stat_t
		must(t, unix.Fstat(int(sl.Fd()), &hostTerm))
		ctx := e.limitCtx(runLimit)
		script := `tty; test -t 0 && test -t 1 && echo ISATTY; stty size; stat -L -c DEV=%d: /dev/stdin
python3 -c 'import fcntl,termios
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("TIOCSTI-ALLOWED")
except OSError as e: print("TIOCSTI", e.errno)'
trap 'echo CAUGHT-INT' INT; "$0" 50; echo AFTER`
		link := e.sleepLink("tty")
		cmd := e.rawCommand(ctx, "exec", "--session", "y", "--tty", "--", "sh", "-c", script, link)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		var out bytes.Buffer
		var mu sync.Mutex
		done := make(chan struct{})
		go func() {
			defer close(done)
			b := make([]byte, 4096)
			for {
				n, err := m.Read(b)
				mu.Lock()
				out.Write(b[:n])
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		if p := waitHostPIDs(link, 20*time.Second, func(n int) bool { return n == 1 }); len(p) != 1 {
			t.Fatalf("the foreground sleep did not start: %q", out.String())
		}
		m.Write([]byte{3})
		code, ok := waitTimeout(t, cmd, 20*time.Second)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			m.SetReadDeadline(time.Now())
			<-done
		}
		got := out.String()
		if !ok || code != 0 {
			t.Errorf("exit %d (finished %v), want 0\n%q", code, ok, got)
		}
		for _, want := range []string{"/dev/pts/0", "ISATTY", "33 77", "TIOCSTI 1", "CAUGHT-INT", "AFTER"} {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%q", want, got)
			}
		}
		// the terminal's file system is the sandbox's devpts instance, not the host's
		if !strings.Contains(got, "DEV=") || strings.Contains(got, fmt.Sprintf("DEV=%d:", hostTerm.Dev)) {
			t.Errorf("the command's terminal is not of the sandbox's devpts (host's: %d):\n%q", hostTerm.Dev, got)
		}
	})
}

// TestSessionSocketFromSandbox: a sandboxed command that can reach the session's socket
// (the runtime directory bound into its sandbox) runs as the caller's uid on the host,
// which SO_PEERCRED accepts; it is refused all the same: it is in another user
// namespace than the supervisor.
func TestSessionSocketFromSandbox(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("s", "--net", "host")
	sock := filepath.Join(e.rt, "gosbx", "s.sock")
	probe := `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1]); s.settimeout(10)
try:
    s.sendall(b"\x01\x00\x00\x00L")
    b = s.recv(4096)
except OSError as e:  # closed on us: EPIPE, ECONNRESET
    b = b""
print("ANSWER" if b else "REFUSED")`
	r := e.run("--rw", e.rt, "--", python, "-c", probe, sock)
	if r.code != 0 || !strings.Contains(r.stdout, "REFUSED") {
		t.Errorf("a sandboxed command of the same uid talked to the session's supervisor\n%v", r)
	}
	// the same probe from the host, as the owner, is answered
	cmd := exec.Command("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c", probe, sock)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "ANSWER") {
		t.Errorf("the owner's probe from the host: %v\n%s", err, out)
	}
}

// TestSessionKill: `session kill` ends a session at once, what ignores SIGTERM too.
func TestSessionKill(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("k")
	link := e.sleepLink("kill")
	mustSucceed(t, e.in("k", nil, `trap '' TERM; "`+link+`" 1000 </dev/null >/dev/null 2>&1 &`), "a sleep ignoring SIGTERM")
	in := e.info("k")
	start := time.Now()
	mustSucceed(t, e.gosbx("session", "kill", "k"), "kill")
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("session kill took %v; want no grace period", d)
	}
	e.checkNothingLeft(in, link, "after session kill")
}

// TestSessionAttach: `session attach` is an interactive shell on a terminal of the
// session's: what is typed runs inside, and its exit status is the shell's.
func TestSessionAttach(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("a")
	m, sl := openPty(t)
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, "session", "attach", "a")
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	sl.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := m.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	m.Write([]byte("echo attached-$((20+22)) $(hostname); exit 3\n"))
	code, ok := waitTimeout(t, cmd, 20*time.Second)
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		m.SetReadDeadline(time.Now())
		<-done
	}
	if !ok || code != 3 || !strings.Contains(out.String(), "attached-42 gosbx") {
		t.Errorf("attach: exit %d (finished %v), want 3 and the shell's output\n%q", code, ok, out.String())
	}
}

// TestSessionDieWithOwner: a session started with --die-with-owner PID ends when that
// process does, and leaves nothing.
func TestSessionDieWithOwner(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	owner := exec.Command("/usr/bin/sleep", "1000")
	must(t, owner.Start())
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	e.start("d", "--die-with-owner", strconv.Itoa(owner.Process.Pid))
	link := e.sleepLink("owned")
	mustSucceed(t, e.in("d", nil, `"`+link+`" 1000 </dev/null >/dev/null 2>&1 &`), "background sleep")
	in := e.info("d")
	owner.Process.Kill()
	owner.Wait()
	for end := time.Now().Add(15 * time.Second); alive(in.Pid) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	e.checkNothingLeft(in, link, "after the owner's end")
	if r := e.gosbx("session", "start", "bad", "--workspace", e.ws, "--die-with-owner", "999999999"); r.code != 125 {
		t.Errorf("--die-with-owner of no process: want 125\n%v", r)
	}
}

// TestSessionClientCompilesNoPolicy: `exec --session` does not compile a policy: from
// /, which gosbx exec refuses as a workspace (the policy step), it runs in the session.
func TestSessionClientCompilesNoPolicy(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("n")
	for _, args := range [][]string{{"exec", "--", "true"}, {"exec", "--session", "n", "--", "true"}} {
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, args...)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.Dir = "/"
		r := e.runCmd(ctx, cmd)
		want := 0
		if len(args) == 3 {
			want = 125 // the policy step refuses / as the workspace
		}
		if r.code != want {
			t.Errorf("%v from /: want %d\n%v", args, want, r)
		}
	}
}

// TestSessionStatusFdInWorkspace: as gosbx exec, exec --session refuses a status file
// the session's commands could write (one in its workspace): 125, the command not run.
func TestSessionStatusFdInWorkspace(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, nobodyCaller)
	e.start("f")
	status := e.writeWS("status.json", "", 0o644)
	f, err := os.OpenFile(status, os.O_WRONLY, 0)
	must(t, err)
	defer f.Close()
	marker := filepath.Join(e.ws, "ran")
	ctx := e.limitCtx(runLimit)
	cmd := e.rawCommand(ctx, "exec", "--session", "f", "--status-fd", "3", "--", "touch", marker)
	cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
	cmd.ExtraFiles = []*os.File{f}
	r := e.runCmd(ctx, cmd)
	if r.code != 125 || !strings.Contains(r.stderr, "which the command can write") {
		t.Errorf("a status file in the workspace: want 125 and the refusal\n%v", r)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}

// TestSessionRequestNarrows: a request to a session is held to the session's policy as
// gosbx exec's flags are (from an attack review: --env went through under strict).
// Under strict, --env is refused with 125 and gosbx exec's own message, and the command
// does not run; under a policy with a timeout, a longer --timeout is refused, and so is
// a --chdir under /proc; what the policy allows still works.
func TestSessionRequestNarrows(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		marker := filepath.Join(e.ws, "ran")
		notRun := func(what string) {
			t.Helper()
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("%s: the command ran", what)
			}
		}
		const envRefusal = "sandbox setup failed at policy: env: the policy does not allow extra variables (environment.allow_extra)"
		r := e.gosbx("exec", "--policy", "strict", "--workspace", e.ws, "--env", "LD_PRELOAD=/x", "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, envRefusal) {
			t.Fatalf("gosbx exec --policy strict --env: want 125 and %q\n%v", envRefusal, r)
		}
		e.start("st", "--policy", "strict")
		for _, env := range [][]string{{"--env", "LD_PRELOAD=/nonexist.so"}, {"--env", "PATH=" + e.ws},
			{"--env", "HTTPS_PROXY=http://evil", "--chdir", "."}} {
			r := e.in("st", env, "touch "+marker)
			if r.code != 125 || !strings.Contains(r.stderr, "gosbx: "+envRefusal) {
				t.Errorf("strict session, %v: want 125 and %q\n%v", env, envRefusal, r)
			}
			notRun(fmt.Sprint(env))
		}
		r = e.in("st", nil, "touch "+marker+"; env")
		mustSucceed(t, r, "strict session, no --env")
		if strings.Contains(r.stdout, "LD_PRELOAD") || strings.Contains(r.stdout, "HTTPS_PROXY") {
			t.Errorf("strict session: a refused variable is set\n%v", r)
		}
		must(t, os.Remove(marker))

		pol := e.writePolicy("narrow.yaml", "extends: agent\nprocess: {timeout: 5m}\n")
		e.start("ag", "--policy", pol)
		for _, bad := range []struct {
			flags []string
			msg   string
		}{
			{[]string{"--timeout", "10m"}, "timeout: 10m0s is longer than the policy's 5m0s: a flag may only shorten it"},
			{[]string{"--chdir", "/proc/self"}, "chdir /proc/self: refusing a working directory under /proc or /dev/fd"},
			{[]string{"--env", "=x"}, `env: want KEY=VALUE, got "=x"`},
		} {
			r := e.in("ag", bad.flags, "touch "+marker)
			if r.code != 125 || !strings.Contains(r.stderr, "gosbx: sandbox setup failed at policy: "+bad.msg) {
				t.Errorf("agent session, %v: want 125 and %q\n%v", bad.flags, bad.msg, r)
			}
			notRun(fmt.Sprint(bad.flags))
			// gosbx exec says the same of the same flag
			args := append(append([]string{"exec", "--policy", pol, "--workspace", e.ws}, bad.flags...), "--", "true")
			if r := e.gosbx(args...); r.code != 125 || !strings.Contains(r.stderr, bad.msg) {
				t.Errorf("gosbx exec %v: want 125 and %q\n%v", bad.flags, bad.msg, r)
			}
		}
		r = e.in("ag", []string{"--env", "FOO=bar", "--timeout", "4m", "--chdir", "/tmp"}, `touch `+marker+`; echo "$FOO $PWD"`)
		if r.code != 0 || r.stdout != "bar /tmp\n" {
			t.Errorf("agent session: --env, a shorter --timeout and --chdir /tmp\n%v", r)
		}
	})
}

// TestSessionRunDirNotBound: no bind may show a sandbox the caller's sessions' runtime
// directory (from an attack review, F7: a command holding a shared flock on a session's
// lock file stops the sweep of that session once its supervisor is gone): a --ro or
// --rw of the directory, of a tree holding it or of a file in it is refused with 125, by
// gosbx exec and by session start, and the command does not run.
func TestSessionRunDirNotBound(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("a")
		marker := filepath.Join(e.ws, "ran")
		lock := filepath.Join(e.rt, "gosbx", "a.lock")
		for _, flags := range [][]string{{"--ro", e.rt}, {"--ro", e.base}, {"--ro", lock}, {"--rw", e.rt}} {
			r := e.gosbx(append(append([]string{"exec", "--workspace", e.ws}, flags...), "--", "touch", marker)...)
			if r.code != 125 || !strings.Contains(r.stderr, "runtime directory") {
				t.Errorf("exec %v: want 125 and the refusal\n%v", flags, r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("exec %v: the command ran", flags)
			}
			r = e.gosbx(append([]string{"session", "start", "b", "--workspace", e.ws}, flags...)...)
			if r.code != 125 || !strings.Contains(r.stderr, "runtime directory") {
				t.Errorf("session start %v: want 125 and the refusal\n%v", flags, r)
			}
		}
		for _, in := range e.ls() {
			if in.Name != "a" {
				t.Errorf("a refused session is listed: %+v", in)
			}
		}
		// A --ro beside the runtime directory is still allowed.
		other := filepath.Join(e.base, "other")
		must(t, os.Mkdir(other, 0o755))
		mustSucceed(t, e.gosbx("exec", "--workspace", e.ws, "--ro", other, "--", "touch", marker), "exec --ro beside the runtime directory")
	})
}

// TestSessionFilter: a session's commands run under the policy's seccomp filter, which
// travels to the supervisor as its bytes (cmd/gosbx startData.Filter): keyctl(2), which
// the agent profile refuses with EPERM and which works in a user namespace without the
// filter, fails with EPERM in the session, root caller and not.
func TestSessionFilter(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("f")
		r := e.in("f", nil, `exec `+python+` -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(250, 0, -3, 1)  # keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, create)
print("keyctl", r, os.strerror(ctypes.get_errno()) if r < 0 else "ok")'`)
		mustSucceed(t, r, "keyctl probe")
		if !strings.Contains(r.stdout, "keyctl -1 Operation not permitted") {
			t.Errorf("keyctl in a session: want EPERM from the filter\n%v", r)
		}
		mustSucceed(t, e.gosbx("session", "stop", "f"), "session stop")
	})
}

// TestSessionWorkspaceNotUTF8: a session whose workspace path is not valid UTF-8 (a
// Latin-1 directory name) runs its commands there and still guards it: its start data
// crosses to the supervisor as JSON, which alone made every bad byte U+FFFD, so each
// request failed at "chdir" (or "protected": the git config it stamped was "changed").
func TestSessionWorkspaceNotUTF8(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		ws := filepath.Join(e.base, "ws-caf\xe9")
		must(t, os.Mkdir(ws, 0o755))
		if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v\n%s", err, out)
		}
		must(t, filepath.WalkDir(ws, func(p string, _ os.DirEntry, err error) error {
			if err == nil {
				err = os.Lchown(p, c.uid, c.gid)
			}
			return err
		}))
		r := e.gosbx("session", "start", "l1", "--workspace", ws, "--die-with-owner", strconv.Itoa(os.Getpid()))
		mustSucceed(t, r, "session start")
		r = e.gosbx("exec", "--session", "l1", "--", shellPath, "-c", "echo made > made")
		mustSucceed(t, r, "a request in the Latin-1 workspace")
		if b, err := os.ReadFile(filepath.Join(ws, "made")); err != nil || string(b) != "made\n" {
			t.Fatalf("the command's file in the workspace on the host: %q, %v", b, err)
		}
		// a nested git dir the host makes between requests is refused, as in any session
		sub := filepath.Join(ws, "sub\xe9")
		must(t, os.MkdirAll(filepath.Join(sub, ".git"), 0o755))
		e.chown(sub)
		e.chown(filepath.Join(sub, ".git"))
		r = e.gosbx("exec", "--session", "l1", "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "appeared") {
			t.Errorf("a request after a git dir appeared on the host: want 125 naming it\n%v", r)
		}
	})
}
