package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/policy"
)

// sessionProc is the session's template process with args.
func sessionProc(s *Session, args ...string) *specs.Process {
	p := *s.Config().Process
	p.Args = args
	return &p
}

// TestSessionState: a background process started by one command is alive for the next
// (same pid namespace, same /tmp), the sandbox stays up when a command exits, each
// command gets its own exit status and stdio, 126/127 come back as *ExecError, and Close
// leaves no process of the sandbox.
func TestSessionState(t *testing.T) {
	ws := testWorkspace(t)
	cfg := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil)
	s, err := NewSession(cfg)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		c := s.Command(sessionProc(s, args...))
		c.Stdout, c.Stderr = &out, &out
		err := c.Run()
		return out.String(), err
	}
	if out, err := run("sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/pid; echo hi > /tmp/f"); err != nil {
		t.Fatalf("first command: %v %q", err, out)
	}
	out, err := run("sh", "-c", "cat /tmp/f; kill -0 $(cat /tmp/pid) && echo alive")
	if err != nil || out != "hi\nalive\n" {
		t.Fatalf("second command: %v %q; want hi, alive (same /tmp, the background sleep alive)", err, out)
	}
	if n := s.Processes(); n != 1 {
		t.Errorf("Processes() = %d, want 1 (the background sleep)", n)
	}
	_, err = run("sh", "-c", "exit 7")
	var xe *ExitError
	if !errors.As(err, &xe) || xe.ExitCode != 7 {
		t.Errorf("exit 7: %v", err)
	}
	_, err = run("no-such-command-xyz")
	var ee *ExecError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitNotFound {
		t.Errorf("a missing command: %v, want an *ExecError 127", err)
	}
	// a timeout kills the command's process group, not the session
	c := s.Command(sessionProc(s, "sleep", "100"))
	c.Timeout = 200 * time.Millisecond
	if err := c.Run(); !errors.As(err, &xe) || xe.ExitCode != ExitTimeout {
		t.Errorf("timeout: %v, want exit 124", err)
	}
	if out, err := run("echo", "still"); err != nil || out != "still\n" {
		t.Errorf("after a timeout: %v %q", err, out)
	}
	// a signal reaches the command
	c = s.Command(sessionProc(s, "sleep", "100"))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	c.Signal(syscall.SIGTERM)
	if err := c.Wait(); !errors.As(err, &xe) || xe.Signal != syscall.SIGTERM {
		t.Errorf("SIGTERM: %v", err)
	}
	init := s.InitPid()
	all := append(descendants(init), init)
	s.Close(2 * time.Second)
	for _, p := range all {
		if !gone(p) {
			t.Errorf("process %d of the session survived Close", p)
		}
	}
	if _, err := run("true"); err == nil {
		t.Error("a command started in a closed session")
	}
}

// TestSessionOwnerDeath: the sandbox ends when its init is killed; commands then fail
// to start, and the session is Done.
func TestSessionInitKilled(t *testing.T) {
	ws := testWorkspace(t)
	s, err := NewSession(compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil))
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(0)
	c := s.Command(sessionProc(s, "sleep", "100"))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(s.InitPid(), syscall.SIGKILL)
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the session is not Done after its init was killed")
	}
	var xe *ExitError
	if err := c.Wait(); !errors.As(err, &xe) || xe.Signal != syscall.SIGKILL {
		t.Errorf("a command of a killed session: %v", err)
	}
	if err := s.Command(sessionProc(s, "true")).Run(); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Errorf("a command in a dead session: %v", err)
	}
	_ = os.Remove(filepath.Join(ws, "x"))
}

// A session command's plan starts with its stdio: the three received descriptors
// dup3'd onto 0, 1, 2 (step "stdio"), before the new session and everything else; the
// other steps keep their names (a failure still names its own step).
func TestPlanWithStdio(t *testing.T) {
	dir, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	p, err := planProcess(stageSpec().Process, nil, dir, "/usr/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	before := len(p.ops)
	p.withStdio([]int{7, 8, 9})
	copy(p.cwd[:], "/work")
	r := &recorder{}
	if i, errno := runSteps(p, r); i >= 0 {
		t.Fatalf("runSteps stopped at %d: %v", i, errno)
	}
	want := []string{"  dup3 7 to 0", "  dup3 8 to 1", "  dup3 9 to 2", "  rt_sigaction SIGINT SIG_DFL"}
	if len(r.calls) != before+3 || strings.Join(r.calls[:4], "|") != strings.Join(want, "|") {
		t.Fatalf("calls:\n%s", diffCalls(want, r.calls))
	}
	for i, op := range p.ops {
		name := p.steps[op.step]
		switch {
		case i < 3 && name != "stdio":
			t.Errorf("op %d (%s) is in step %q, want stdio", i, op.what, name)
		case op.nr == unix.SYS_SETSID && name != "setsid", op.nr == unix.SYS_EXECVE && name != "exec",
			op.nr == unix.SYS_FCHDIR && name != "chdir":
			t.Errorf("op %s is in step %q after withStdio", op.what, name)
		}
	}
}

// TestSessionShortCommands: commands that end at once, many at the same time, each
// get their exec report and then their own exit status (the report of a command's
// exec is sent before its exit can be).
func TestSessionShortCommands(t *testing.T) {
	ws := testWorkspace(t)
	s, err := NewSession(compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil))
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for i := 0; i < 100; i++ {
				code := (w*100 + i) % 200
				err := s.Command(sessionProc(s, "/bin/sh", "-c", "exit "+strconv.Itoa(code))).Run()
				var xe *ExitError
				if code == 0 && err != nil || code != 0 && (!errors.As(err, &xe) || xe.ExitCode != code) {
					errs <- fmt.Errorf("exit %d: %v", code, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestSessionCleanupPerCommand: a session's cleanup entries are carried out when each
// command ends (Result.Removed), not only at Close, and before the next starts (what a
// background process made since); a tmpfs mount point's entry is left to Close, so the
// sandbox's mount stays usable.
func TestSessionCleanupPerCommand(t *testing.T) {
	ws := testWorkspace(t)
	cfg := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws}, nil)
	planted := filepath.Join(ws, "planted")
	mp := filepath.Join(ws, "mnt")
	cfg.Cleanup = append(cfg.Cleanup, cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: planted},
		cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: mp})
	cfg.MakeDirs = append(cfg.MakeDirs, mp)
	cfg.Mounts = append(cfg.Mounts, specs.Mount{Destination: mp, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev"}})
	s, err := NewSession(cfg)
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	defer s.Close(time.Second)
	c := s.Command(sessionProc(s, "sh", "-c", "touch planted mnt/x; (sleep 0.5; touch planted) >/dev/null 2>&1 </dev/null &"))
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(planted); err == nil || len(c.Result.Removed) != 1 || c.Result.Removed[0] != planted {
		t.Errorf("after the command: %s there (%v), Removed %q; want it removed and said", planted, err, c.Result.Removed)
	}
	// planted between two commands by a process the first left: removed before the
	// next one starts
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Lstat(planted); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the background process did not plant")
		}
	}
	c = s.Command(sessionProc(s, "sh", "-c", "test ! -e planted && test -e mnt/x"))
	if err := c.Run(); err != nil || len(c.Result.Removed) != 1 {
		t.Errorf("the next command: %v, Removed %q; want planted gone before it started, the tmpfs kept", err, c.Result.Removed)
	}
	// made on the host while no process of the session lives: the host's, kept
	// (attack review 35 F3)
	if err := os.WriteFile(planted, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c = s.Command(sessionProc(s, "sh", "-c", "test -e planted"))
	if err := c.Run(); err != nil || len(c.Result.Removed) != 0 {
		t.Errorf("a command after the host made %s: %v, Removed %q; want it kept", planted, err, c.Result.Removed)
	}
	s.Close(time.Second)
	if _, err := os.Lstat(mp); err == nil {
		t.Errorf("the mount point %s outlived Close", mp)
	}
}
