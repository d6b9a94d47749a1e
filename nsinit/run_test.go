package nsinit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// The test binary is the re-exec target of Cmd: run as InitArg, Init takes over and
// never returns.
func TestMain(m *testing.M) {
	Init()
	rawRootGoSide() // rawroot_test.go: the Go init's root, when asked
	// This test's sandboxes' cgroups are gosbx-<this pid>-<id> (ownCgroups); the
	// owner's lock, not the name, says whether they are alive.
	newSandboxID = func() string { return strconv.Itoa(os.Getpid()) + "-" + cgroup.NewID() }
	os.Exit(m.Run())
}

// testWorkspace is a new directory under /var/tmp (a sandbox's /tmp is its own tmpfs),
// with 0755 parents so that any uid may traverse to it.
func testWorkspace(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "gosbx-nsinit-test-")
	if err != nil {
		t.Skipf("need a directory under /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func compile(t *testing.T, o policy.Options, edit func(*policy.Host)) *config.Config {
	t.Helper()
	h, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	h.Cwd = o.Workspace
	if edit != nil {
		edit(&h)
	}
	s, err := policy.Compile(o, h)
	if err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	return s
}

// skipIfNoSandbox skips when this host cannot build a sandbox at all.
func skipIfNoSandbox(t *testing.T, err error) {
	t.Helper()
	var se *SetupError
	if !errors.As(err, &se) {
		return
	}
	if se.Step == "clone" {
		t.Skipf("cannot create the sandbox's namespaces here (unprivileged user namespaces disabled?): %v", err)
	}
	if Hint(se.Step, se.Err) == hintMaskedProc {
		t.Skipf("this host's /proc has masked entries, so no new procfs can be mounted: %v", err)
	}
}

type eventLog struct {
	mu sync.Mutex
	ev []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ev = append(l.ev, e)
}

func (l *eventLog) events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.ev...)
}

func gone(pid int) bool {
	return unix.Kill(pid, 0) == unix.ESRCH
}

func TestRunExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
	}{
		{"exit 0", "echo hi > f", 0, 0},
		{"exit 3", "echo hi > f; exit 3", 3, 0},
		{"exit 255", "echo hi > f; exit 255", 255, 0},
		{"SIGTERM", "echo hi > f; kill -TERM $$", 128 + 15, syscall.SIGTERM},
		{"SIGKILL", "echo hi > f; kill -KILL $$", 128 + 9, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := testWorkspace(t)
			c := Command(compile(t, policy.Options{Args: []string{"sh", "-c", tt.script}, Workspace: ws}, nil))
			err := c.Run()
			skipIfNoSandbox(t, err)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
			} else {
				var ee *ExitError
				if !errors.As(err, &ee) {
					t.Fatalf("Run = %v (%T); want an *ExitError", err, err)
				}
				if ee.ExitCode != tt.code || ee.Signal != tt.signal || ee.TimedOut {
					t.Errorf("ExitError %+v; want code %d signal %v", *ee.Result, tt.code, tt.signal)
				}
				var se *SetupError
				if errors.As(err, &se) {
					t.Error("a command that ran is reported as a SetupError")
				}
			}
			if c.Result == nil || c.Result.ExitCode != tt.code || c.Result.Wall <= 0 {
				t.Errorf("Result = %+v", c.Result)
			}
			b, err := os.ReadFile(filepath.Join(ws, "f"))
			if err != nil || string(b) != "hi\n" {
				t.Errorf("the workspace file on the host: %q, %v", b, err)
			}
		})
	}
}

func TestRunStdio(t *testing.T) {
	ws := testWorkspace(t)
	var stdout, stderr bytes.Buffer
	c := Command(compile(t, policy.Options{Args: []string{"sh", "-c", "cat; echo err >&2; echo \"$HOME\""}, Workspace: ws}, nil))
	c.Stdin = strings.NewReader("from stdin\n")
	c.Stdout, c.Stderr = &stdout, &stderr
	err := c.Run()
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("Run = %v; stderr %q", err, stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	if len(lines) < 2 || lines[0] != "from stdin" || !strings.HasPrefix(lines[1], "/") {
		t.Errorf("stdout = %q", stdout.String())
	}
	if stderr.String() != "err\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestRunCommandNotRun(t *testing.T) {
	ws := testWorkspace(t)
	if err := os.WriteFile(filepath.Join(ws, "plain"), []byte("#!/bin/sh\necho ran > ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		errno syscall.Errno
	}{
		{"not found on PATH", []string{"gosbx-no-such-command"}, ExitNotFound, syscall.ENOENT},
		{"missing path", []string{"/no/such/command"}, ExitNotFound, syscall.ENOENT},
		{"not executable", []string{"./plain"}, ExitNotExecutable, syscall.EACCES},
		{"a directory", []string{"/usr"}, ExitNotExecutable, syscall.EACCES},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log eventLog
			c := Command(compile(t, policy.Options{Args: tt.args, Workspace: ws}, nil))
			c.Events = log.add
			err := c.Run()
			skipIfNoSandbox(t, err)
			var ee *ExecError
			if !errors.As(err, &ee) {
				t.Fatalf("Run = %v (%T); want an *ExecError", err, err)
			}
			if ee.ExitCode() != tt.code || ee.Errno != tt.errno {
				t.Errorf("ExecError %+v: code %d; want %d (%v)", ee, ee.ExitCode(), tt.code, tt.errno)
			}
			var exitErr *ExitError
			if errors.As(err, &exitErr) {
				t.Error("a command that never ran is reported as an ExitError")
			}
			ev := log.events()
			if len(ev) != 2 || ev[0].ChildPid == 0 || ev[1].Error == "" || ev[1].Exec || ev[1].Status != tt.code {
				t.Fatalf("events = %+v; want child-pid then an error", ev)
			}
			if !gone(ev[0].ChildPid) {
				t.Errorf("the sandbox init %d is still there after Run returned", ev[0].ChildPid)
			}
			if err := c.Wait(); err == nil {
				t.Error("Wait after a failed Start succeeded")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the non-executable script ran")
	}
}

func TestEvents(t *testing.T) {
	ws := testWorkspace(t)
	var log eventLog
	// A command that lives a moment: TestExecEventPidShortCommand covers one that does not.
	c := Command(compile(t, policy.Options{Args: []string{"sleep", "0.1"}, Workspace: ws}, nil))
	c.Events = log.add
	err := c.Run()
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	ev := log.events()
	if len(ev) != 3 {
		t.Fatalf("events = %+v; want child-pid, exec, exit", ev)
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &self); err != nil {
		t.Fatal(err)
	}
	start := ev[0]
	if start.ChildPid <= 0 || start.UserNS == 0 || start.UserNS == self.Ino || start.MntNS == 0 ||
		start.PidNS == 0 || start.NetNS == 0 || start.Exec || start.ExitCode != nil {
		t.Errorf("first event %+v; want the child pid and new namespaces", start)
	}
	exec := ev[1]
	if !exec.Exec || exec.Pid <= 0 || exec.Pid == start.ChildPid || filepath.Base(exec.Path) != "sleep" || exec.ExitCode != nil {
		t.Errorf("second event %+v; want exec of sleep with its host pid", exec)
	}
	end := ev[2]
	if end.ExitCode == nil || *end.ExitCode != 0 || end.TimedOut == nil || *end.TimedOut || end.WallMs == nil || end.Exec {
		t.Errorf("third event %+v; want exit 0, not timed out, wall time", end)
	}
	if start.ChildPid > 0 && !gone(start.ChildPid) || exec.Pid > 0 && !gone(exec.Pid) {
		t.Error("a sandbox process outlived Run")
	}
}

func TestTimeout(t *testing.T) {
	ws := testWorkspace(t)
	var log eventLog
	c := Command(compile(t, policy.Options{Args: []string{"sh", "-c", "sleep 30 & sleep 30"}, Workspace: ws}, nil))
	c.Timeout = 1500 * time.Millisecond // setup included: room for a loaded machine (TestConfigTimeout)
	c.Events = log.add
	begin := time.Now()
	err := c.Run()
	skipIfNoSandbox(t, err)
	elapsed := time.Since(begin)
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("Run = %v (%T); want an *ExitError", err, err)
	}
	if !ee.TimedOut || ee.ExitCode != 124 {
		t.Errorf("Result %+v; want TimedOut and exit 124", *ee.Result)
	}
	if !strings.HasPrefix(ee.Error(), "timed out after") {
		t.Errorf("message %q", ee.Error())
	}
	if elapsed < c.Timeout || elapsed > c.Timeout+10*time.Second {
		t.Errorf("Run took %v with a %v timeout", elapsed, c.Timeout)
	}
	ev := log.events()
	if len(ev) == 0 {
		t.Fatal("no events")
	}
	last := ev[len(ev)-1]
	if last.TimedOut == nil || !*last.TimedOut || last.ExitCode == nil || *last.ExitCode != 124 {
		t.Errorf("last event %+v; want timed-out, exit 124", last)
	}
	for _, e := range ev {
		if e.ChildPid != 0 && !gone(e.ChildPid) {
			t.Errorf("the sandbox init %d survived the timeout", e.ChildPid)
		}
	}
}

func TestSetupFailure(t *testing.T) {
	ws := testWorkspace(t)
	extra := testWorkspace(t)
	var log eventLog
	c := Command(compile(t, policy.Options{Args: []string{"sh", "-c", "echo ran > ran"}, Workspace: ws, ReadOnly: []string{extra}}, nil))
	c.Events = log.add
	// The bind source disappears between compile and launch.
	if err := os.RemoveAll(extra); err != nil {
		t.Fatal(err)
	}
	err := c.Run()
	skipIfNoSandbox(t, err)
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v (%T); want a *SetupError", err, err)
	}
	// The launcher opens every bind source before the clone, so a missing one stops the
	// launch there, before any sandbox process exists.
	if se.Step != "open bind source" || !strings.Contains(se.Error(), extra) || se.ExitCode() != ExitSetup {
		t.Errorf("SetupError %q (step %q); want the open bind source step naming %s", se, se.Step, extra)
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		t.Error("a setup failure is reported as an ExitError")
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the command ran although the sandbox could not be built")
	}
	ev := log.events()
	if len(ev) < 1 || ev[len(ev)-1].Step != "open bind source" || ev[len(ev)-1].Error == "" || ev[len(ev)-1].Status != ExitSetup {
		t.Errorf("events = %+v; want a final open bind source error event", ev)
	}
	if len(ev) > 0 && ev[0].ChildPid != 0 && !gone(ev[0].ChildPid) {
		t.Error("the init outlived a setup failure")
	}
}

// TestPrivateHome: HOME inside is a writable private directory wherever the caller's
// home is, including under a scratch directory the sandbox replaces with a tmpfs.
func TestPrivateHome(t *testing.T) {
	ws := testWorkspace(t)
	scratchHome := testWorkspace(t)
	tests := []struct{ name, home string }{
		{"ordinary", "/home/gosbx-test-nobody"},
		{"under /var/tmp", scratchHome},
		{"under /tmp", "/tmp/gosbx-test-home"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			spec := compile(t, policy.Options{Args: []string{"sh", "-c", `test "$HOME" = "$1" || { echo "HOME=$HOME" >&2; exit 1; }; test -d "$HOME" || { echo "no directory $HOME" >&2; exit 2; }; touch "$HOME/x"`, "sh", tt.home},
				Workspace: ws}, func(h *policy.Host) { h.Home, h.Homes = tt.home, []string{tt.home} })
			c := Command(spec)
			c.Stderr = &stderr
			err := c.Run()
			skipIfNoSandbox(t, err)
			if err != nil {
				t.Errorf("HOME=%s inside is not a writable directory: %v %s", tt.home, err, stderr.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(scratchHome, "x")); err == nil {
		t.Error("a write to the private HOME reached the host's directory")
	}
}

func TestStartTwice(t *testing.T) {
	ws := testWorkspace(t)
	c := Command(compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil))
	err := c.Start()
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Error("a second Start succeeded")
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err == nil {
		t.Error("a second Wait succeeded")
	}
}

// TestExecEventPidShortCommand: the exec event carries the command's host pid even when
// the command exits at once. The launcher reads it from /proc/INIT/task/INIT/children
// after the init reported the exec, by which time the init may have reaped it.
func TestExecEventPidShortCommand(t *testing.T) {
	ws := testWorkspace(t)
	spec := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil)
	missing := 0
	const runs = 40
	for i := 0; i < runs && missing == 0; i++ {
		var log eventLog
		c := Command(spec)
		c.Events = log.add
		err := c.Run()
		skipIfNoSandbox(t, err)
		if err != nil {
			t.Fatal(err)
		}
		ev := log.events()
		if len(ev) != 3 || !ev[1].Exec {
			t.Fatalf("events = %+v", ev)
		}
		if ev[1].Pid <= 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("the exec event of a short command (true) had no pid (Event.Pid = 0)")
	}
}

// The policy's timeout reaches the launch through the config, with no Cmd.Timeout set:
// from policy.Options.Timeout and from a policy file's process.timeout; a Cmd.Timeout
// longer than the config's does not lengthen it, a shorter one wins.
func TestConfigTimeout(t *testing.T) {
	// The limit bounds the whole launch, setup included (an expiry before the command
	// starts is a SetupError): long enough for a setup on a loaded machine (300 ms was
	// not, with the unit and integration suites and two busy loops on two cores).
	const limit = 1500 * time.Millisecond
	ws := testWorkspace(t)
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte("extends: agent\nprocess:\n  timeout: 1500ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"sh", "-c", "sleep 30 & sleep 30"}
	for _, tc := range []struct {
		name string
		o    policy.Options
		cmd  time.Duration // Cmd.Timeout
	}{
		{"options", policy.Options{Args: args, Workspace: ws, Timeout: limit}, 0},
		{"policy file", policy.Options{Args: args, Workspace: ws, Policy: pol}, 0},
		{"Cmd.Timeout longer", policy.Options{Args: args, Workspace: ws, Timeout: limit}, time.Hour},
		{"Cmd.Timeout shorter", policy.Options{Args: args, Workspace: ws, Timeout: time.Hour}, limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := compile(t, tc.o, nil)
			if cfg.Timeout <= 0 {
				t.Fatalf("config.Timeout = %v; the policy's timeout did not reach the config", cfg.Timeout)
			}
			c := Command(cfg)
			c.Timeout = tc.cmd
			begin := time.Now()
			err := c.Run()
			skipIfNoSandbox(t, err)
			elapsed := time.Since(begin)
			var ee *ExitError
			if !errors.As(err, &ee) || !ee.TimedOut || ee.ExitCode != ExitTimeout {
				t.Fatalf("Run = %v (%T) after %v; want a timed-out *ExitError", err, err, elapsed)
			}
			if elapsed < limit || elapsed > limit+10*time.Second {
				t.Errorf("Run took %v with a %v limit", elapsed, limit)
			}
		})
	}
}
