package nsinit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	d1 := filepath.Join(dir, "d1")
	d2 := filepath.Join(dir, "d2")
	for _, d := range []string{d1, d2, filepath.Join(d1, "adir")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(d1, "both"), 0o644)      // found first, not executable
	write(filepath.Join(d2, "both"), 0o755)      // found second, executable: wins
	write(filepath.Join(d1, "onlyplain"), 0o644) // only a non-executable
	write(filepath.Join(d2, "onlyplain"), 0o644) //
	write(filepath.Join(d2, "adir"), 0o755)      // d1/adir is a directory: skipped
	write(filepath.Join(d2, "exe"), 0o755)       //
	write(filepath.Join(dir, "dotexe"), 0o755)   // in the working directory
	write(filepath.Join(dir, "dotplain"), 0o644) //
	write(filepath.Join(d1, "groupx"), 0o610)    // executable by the group only
	path := "PATH=" + d1 + ":" + d2
	t.Chdir(dir)

	tests := []struct {
		name, cmd string
		env       []string
		want      string
		errno     unix.Errno // 0: success
		code      int
	}{
		{name: "slash is used as is", cmd: "./missing/x", env: []string{path}, want: "./missing/x"},
		{name: "absolute is used as is", cmd: "/no/such/file", env: []string{path}, want: "/no/such/file"},
		{name: "found", cmd: "exe", env: []string{path}, want: filepath.Join(d2, "exe")},
		{name: "executable beats an earlier plain file", cmd: "both", env: []string{path}, want: filepath.Join(d2, "both")},
		{name: "directory skipped", cmd: "adir", env: []string{path}, want: filepath.Join(d2, "adir")},
		{name: "not executable", cmd: "onlyplain", env: []string{path}, errno: unix.EACCES, code: ExitNotExecutable, want: filepath.Join(d1, "onlyplain")},
		{name: "not found", cmd: "nope", env: []string{path}, errno: unix.ENOENT, code: ExitNotFound, want: "nope"},
		{name: "empty entry is the working directory", cmd: "dotexe", env: []string{"PATH=" + d1 + "::" + d2}, want: "./dotexe"},
		{name: "leading empty entry", cmd: "dotexe", env: []string{"PATH=:" + d2}, want: "./dotexe"},
		{name: "trailing empty entry", cmd: "dotexe", env: []string{"PATH=" + d2 + ":"}, want: "./dotexe"},
		{name: "empty PATH is the working directory", cmd: "dotexe", env: []string{"PATH="}, want: "./dotexe"},
		{name: "empty entry, not executable", cmd: "dotplain", env: []string{"PATH=:"}, errno: unix.EACCES, code: ExitNotExecutable, want: "./dotplain"},
		{name: "no empty entry, no working directory", cmd: "dotexe", env: []string{path}, errno: unix.ENOENT, code: ExitNotFound, want: "dotexe"},
		{name: "last PATH wins", cmd: "exe", env: []string{"PATH=/nonexistent", path}, want: filepath.Join(d2, "exe")},
		{name: "default PATH", cmd: "sh", env: []string{"HOME=/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookPath(tt.cmd, tt.env)
			if tt.errno == 0 {
				if err != nil {
					t.Fatalf("lookPath(%q) = %v", tt.cmd, err)
				}
				if tt.want == "" {
					if !strings.HasSuffix(got, "/"+tt.cmd) || !strings.Contains(defaultPath, filepath.Dir(got)) {
						t.Errorf("lookPath(%q) = %q; want a directory of %s", tt.cmd, got, defaultPath)
					}
					return
				}
				if got != tt.want {
					t.Errorf("lookPath(%q) = %q; want %q", tt.cmd, got, tt.want)
				}
				return
			}
			var ee *execError
			if !errors.As(err, &ee) {
				t.Fatalf("lookPath(%q) = %q, %v; want an *execError", tt.cmd, got, err)
			}
			if ee.errno != tt.errno || ee.code() != tt.code || ee.path != tt.want {
				t.Errorf("lookPath(%q): errno %v code %d path %q; want %v %d %q", tt.cmd, ee.errno, ee.code(), ee.path, tt.errno, tt.code, tt.want)
			}
			if !strings.Contains(ee.Error(), tt.want) {
				t.Errorf("message %q does not name %q", ee.Error(), tt.want)
			}
		})
	}
	t.Run("group-only execute bit", func(t *testing.T) {
		// Root may execute a file with any execute bit; others need their own.
		_, err := lookPath("groupx", []string{path})
		if os.Getuid() == 0 && err != nil {
			t.Errorf("root: lookPath(groupx) = %v", err)
		}
	})
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		ws   unix.WaitStatus
		want int
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3 << 8, 3},
		{"exit 255", 255 << 8, 255},
		{"SIGKILL", unix.WaitStatus(unix.SIGKILL), 137},
		{"SIGTERM", unix.WaitStatus(unix.SIGTERM), 143},
		{"SIGINT", unix.WaitStatus(unix.SIGINT), 130},
		{"SIGSEGV with core", unix.WaitStatus(unix.SIGSEGV) | 0x80, 139},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exitCode(tt.ws); got != tt.want {
				t.Errorf("exitCode(%#x) = %d; want %d", uint32(tt.ws), got, tt.want)
			}
		})
	}
}

func TestExecError(t *testing.T) {
	tests := []struct {
		errno syscall.Errno
		want  int
	}{
		{syscall.ENOENT, ExitNotFound},
		{syscall.ENOTDIR, ExitNotFound},
		{syscall.EACCES, ExitNotExecutable},
		{syscall.ENOEXEC, ExitNotExecutable},
		{syscall.EPERM, ExitNotExecutable},
		{syscall.ETXTBSY, ExitNotExecutable},
	}
	for _, tt := range tests {
		t.Run(tt.errno.Error(), func(t *testing.T) {
			e := &ExecError{Path: "/usr/bin/x", Errno: tt.errno}
			if got := e.ExitCode(); got != tt.want {
				t.Errorf("ExitCode() = %d; want %d", got, tt.want)
			}
			if got := (&execError{path: "/usr/bin/x", errno: tt.errno}).code(); got != tt.want {
				t.Errorf("execError.code() = %d; want %d", got, tt.want)
			}
			if want := "execute /usr/bin/x: " + tt.errno.Error(); e.Error() != want {
				t.Errorf("Error() = %q; want %q", e.Error(), want)
			}
			wrapped := fmt.Errorf("run: %w", e)
			if !errors.Is(wrapped, tt.errno) {
				t.Error("errors.Is does not reach the errno")
			}
			var got *ExecError
			if !errors.As(wrapped, &got) || got != e {
				t.Error("errors.As does not find the *ExecError")
			}
		})
	}
	if !errors.Is(&ExecError{Errno: syscall.ENOENT}, fs.ErrNotExist) {
		t.Error("an ENOENT ExecError is not fs.ErrNotExist")
	}
}

func TestSetupErrorAndExitError(t *testing.T) {
	cause := fmt.Errorf("bind /x on /x: %w", unix.EPERM)
	se := &SetupError{Step: "mount", Err: cause}
	if want := "sandbox setup failed at mount: bind /x on /x: operation not permitted"; se.Error() != want {
		t.Errorf("SetupError = %q; want %q", se.Error(), want)
	}
	if se.ExitCode() != ExitSetup || ExitSetup != 125 {
		t.Errorf("SetupError.ExitCode() = %d; want 125", se.ExitCode())
	}
	wrapped := fmt.Errorf("launch: %w", se)
	var gotSE *SetupError
	if !errors.As(wrapped, &gotSE) || gotSE.Step != "mount" {
		t.Error("errors.As does not find the *SetupError")
	}
	if !errors.Is(wrapped, unix.EPERM) {
		t.Error("errors.Is does not reach the cause of a SetupError")
	}
	var ee *ExitError
	if errors.As(wrapped, &ee) {
		t.Error("a SetupError is also an ExitError")
	}

	tests := []struct {
		r    Result
		want string
		ok   bool
	}{
		{Result{ExitCode: 3}, "exit status 3", false},
		{Result{ExitCode: 143, Signal: syscall.SIGTERM}, "killed by signal terminated", false},
		{Result{ExitCode: 124, TimedOut: true, Wall: 1500*time.Millisecond + 300*time.Microsecond}, "timed out after 1.5s", false},
		{Result{ExitCode: 0}, "exit status 0", true},
		{Result{ExitCode: 0, TimedOut: true}, "timed out after 0s", false},
		// the limit that acted, as gosbx exec says it (new-user trial, item 11)
		{Result{ExitCode: 137, Signal: syscall.SIGKILL, OOMKilled: true, LimitHit: "memory"}, "killed by the memory limit (the OOM killer's SIGKILL)", false},
		{Result{ExitCode: 1, OOMKilled: true, LimitHit: "memory"}, "exit status 1 (the memory limit killed a process of the sandbox: the OOM killer)", false},
		{Result{ExitCode: 2, LimitHit: "pids"}, "exit status 2 (the pids limit refused a fork)", false},
	}
	for _, tt := range tests {
		r := tt.r
		e := &ExitError{&r}
		if e.Error() != tt.want {
			t.Errorf("ExitError(%+v) = %q; want %q", tt.r, e.Error(), tt.want)
		}
		if r.Success() != tt.ok {
			t.Errorf("Result(%+v).Success() = %v", tt.r, r.Success())
		}
		var got *ExitError
		if !errors.As(fmt.Errorf("x: %w", e), &got) || got.ExitCode != tt.r.ExitCode {
			t.Errorf("errors.As of a wrapped ExitError: %v", got)
		}
		var se *SetupError
		if errors.As(e, &se) {
			t.Error("an ExitError is also a SetupError")
		}
	}
}

func TestSyncProtocol(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	msgs := []message{
		{Type: msgError, Step: "mount", Error: "bind /usr on /usr: operation not permitted"},
		{Type: msgExecError, Path: "/usr/bin/x", Errno: int(unix.EACCES), Error: "execute /usr/bin/x: permission denied"},
		{Type: msgExec, Path: "/bin/sh", Pid: 2},
		{Type: msgExit, Status: 3 << 8},
		{Type: msgExit, Status: 0},
		{Type: msgExec, Path: "/long/" + strings.Repeat("p", 200000) + "\nwith newline\"quote"},
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sw := syncWriter{w}
		for _, m := range msgs {
			sw.send(m)
		}
		w.Write([]byte{3, 0, 0, 0, 0xff, 0xff, 0xff}) // a frame that does not decode ends the stream
		syncWriter{w}.send(message{Type: msgExit})
		w.Close()
	}()
	sr := newSyncReader(r)
	for i, want := range msgs {
		got, ok := sr.next()
		if !ok {
			t.Fatalf("message %d: EOF", i)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("message %d = %+v; want %+v", i, got, want)
		}
	}
	if m, ok := sr.next(); ok {
		t.Errorf("a malformed frame: %+v; want the end of the stream", m)
	}
	if _, ok := sr.next(); ok {
		t.Error("a second next after EOF returned a message")
	}
	<-done
}

func validSpec() *config.Config {
	return &config.Config{
		Process: &specs.Process{Args: []string{"true"}, User: specs.User{UID: 1000, GID: 100}},
		Linux: &config.Linux{
			Namespaces: []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace},
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace}},
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: 1000, HostID: 1000, Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: 100, HostID: 100, Size: 1}},
		},
	}
}

func TestCloneConfig(t *testing.T) {
	flags, uids, gids := cloneConfig(validSpec())
	want := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if flags != want {
		t.Errorf("flags = %#x; want %#x", flags, want)
	}
	if !reflect.DeepEqual(uids, []syscall.SysProcIDMap{{ContainerID: 1000, HostID: 1000, Size: 1}}) ||
		!reflect.DeepEqual(gids, []syscall.SysProcIDMap{{ContainerID: 100, HostID: 100, Size: 1}}) {
		t.Errorf("maps = %+v %+v", uids, gids)
	}
}

// Start refuses a config that config.Validate refuses (its own tests cover each field),
// before anything is cloned, with a config *SetupError and one event.
func TestStartRefusesInvalidConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config.Config)
		want   string
	}{
		{"nil process", func(s *config.Config) { s.Process = nil }, "no process"},
		{"no args", func(s *config.Config) { s.Process.Args = nil }, "no args"},
		{"no linux", func(s *config.Config) { s.Linux = nil }, "linux"},
		{"no namespaces", func(s *config.Config) { s.Linux.Namespaces = nil }, "required"},
		{"namespace path", func(s *config.Config) { s.Linux.Namespaces[3].Path = "/proc/1/ns/net" }, "/proc/1/ns/net"},
		{"no uid mappings", func(s *config.Config) { s.Linux.UIDMappings = nil }, "mappings"},
		{"user not mapped", func(s *config.Config) { s.Process.User.UID = 0 }, "id mappings"},
		{"terminal", func(s *config.Config) { s.Process.Terminal = true }, "process.terminal"},
		{"uncompiled seccomp", func(s *config.Config) { s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow} }, "not compiled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(s)
			var events []Event
			c := Command(s)
			c.Events = func(e Event) { events = append(events, e) }
			err := c.Start()
			var se *SetupError
			if !errors.As(err, &se) || se.Step != "config" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v; want a config *SetupError naming %q", err, tt.want)
			}
			if len(events) != 1 || events[0].Step != "config" || events[0].Error == "" {
				t.Errorf("events = %+v; want one config error event", events)
			}
		})
	}
}

func TestNotStarted(t *testing.T) {
	c := Command(validSpec())
	if err := c.Wait(); err == nil {
		t.Error("Wait before Start succeeded")
	}
	if err := c.Signal(syscall.SIGTERM); err == nil {
		t.Error("Signal before Start succeeded")
	}
}

// Hints are decided from the error's fields, never its text.
func TestHint(t *testing.T) {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.ENOSPC, unix.EINVAL} {
		if h := Hint("clone", fmt.Errorf("fork/exec: %w", e)); !strings.Contains(h, "user namespace") {
			t.Errorf("Hint(clone, %v) = %q", e, h)
		}
	}
	if h := Hint("clone", unix.ENOMEM); h != "" {
		t.Errorf("Hint(clone, ENOMEM) = %q; want none", h)
	}
	proc := &mounts.Error{Op: "mount", Source: "proc", Target: "/proc", Err: unix.EPERM}
	if h := Hint("mount", fmt.Errorf("wrapped: %w", proc)); !strings.Contains(h, "new procfs") || !strings.Contains(h, "systempaths=unconfined") {
		t.Errorf("Hint(mount proc EPERM) = %q", h)
	}
	// a bind of a path named like proc, or a text that says procfs, is not a masked /proc
	// (the bind's EPERM is the kernel's: no filter here)
	bind := &mounts.Error{Op: "bind", Source: "/home/u/proc", Target: "/home/u/proc", Err: unix.EPERM}
	if h := hintIn("mount", bind, launchEnv{}); strings.Contains(h, "new procfs") || !strings.HasPrefix(h, "the kernel refused the mount") {
		t.Errorf("Hint(mount, %v) = %q; want the kernel's refusal, not a masked /proc", bind, h)
	}
	if err := errors.New("mount proc on /proc: operation not permitted (new procfs)"); Hint("mount", err) != "" {
		t.Errorf("Hint(mount, %v) = %q; want none", err, Hint("mount", err))
	}
	if h := Hint("mount", &mounts.Error{Op: "mount", Source: "tmpfs", Err: fmt.Errorf("fsopen: %w", unix.ENOSYS)}); !strings.Contains(h, "Linux 5.12") {
		t.Errorf("Hint(ENOSYS) = %q", h)
	}
}

func TestParseRlimits(t *testing.T) {
	if _, err := parseRlimits([]specs.POSIXRlimit{{Type: "RLIMIT_BOGUS"}}); err == nil || !strings.Contains(err.Error(), "RLIMIT_BOGUS") {
		t.Errorf("unknown rlimit: %v", err)
	}
	if res, err := parseRlimits([]specs.POSIXRlimit{{Type: "RLIMIT_NOFILE"}}); err != nil || len(res) != 1 || res[0] != unix.RLIMIT_NOFILE {
		t.Errorf("parseRlimits(RLIMIT_NOFILE) = %v, %v", res, err)
	}
}

// A program that links nsinit but forgets to call Init first in main gets an error
// saying so, not only "the init died".
func TestInitNotCalled(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "noinit")
	build := exec.Command("go", "build", "-o", bin, "./testdata/noinit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/noinit: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "must call nsinit.Init() first in main") {
		t.Errorf("want the hint to call nsinit.Init, got %q", out)
	}
}

// Under a seccomp filter (a container's profile), a step whose call container profiles
// refuse gets the fix that names gosbx's profile; a masked /proc keeps its own hint,
// and without a filter the same errors get the host hints.
func TestHintInContainer(t *testing.T) {
	filtered := launchEnv{filtered: true, container: true}
	for _, c := range []struct {
		step string
		err  error
		call string
	}{
		{"hostname", unix.EPERM, "sethostname"},
		{"clone", fmt.Errorf("fork/exec: %w", unix.EPERM), "clone with CLONE_NEWUSER"},
		{"pid namespace", unix.EPERM, "unshare"},
		{"mount", &mounts.Error{Op: "bind", Source: "/usr", Target: "/usr", Err: unix.EPERM}, "open_tree"},
		{"mount", &mounts.Error{Op: "mount", Source: "tmpfs", Target: "/", Err: unix.ENOSYS}, "fsopen"},
	} {
		h := hintIn(c.step, c.err, filtered)
		if !strings.Contains(h, "seccomp filter") || !strings.Contains(h, c.call) || !strings.Contains(h, "seccomp=contrib/seccomp/gosbx.json") ||
			!strings.Contains(h, "localhostProfile") {
			t.Errorf("hintIn(%s, %v, filtered) = %q", c.step, c.err, h)
		}
		if h := hintIn(c.step, c.err, launchEnv{}); strings.Contains(h, "gosbx.json") {
			t.Errorf("hintIn(%s, %v) without a filter = %q: names the container profile", c.step, c.err, h)
		}
	}
	// a filter outside a container (another sandbox) is not a container's profile
	if h := hintIn("hostname", unix.EPERM, launchEnv{filtered: true}); !strings.Contains(h, "another sandbox") || strings.Contains(h, "gosbx.json") {
		t.Errorf("hintIn(hostname, filtered, no container) = %q", h)
	}
	if h := hintIn("clone", unix.EPERM, launchEnv{filtered: true}); h != hintUserns {
		t.Errorf("hintIn(clone, filtered, no container) = %q, want the user namespace hint", h)
	}
	proc := &mounts.Error{Op: "mount", Source: "proc", Target: "/proc", Err: unix.EPERM}
	if h := hintIn("mount", proc, filtered); !strings.Contains(h, "unmask=ALL") || !strings.Contains(h, "procMount: Unmasked") || strings.Contains(h, "gosbx.json") {
		t.Errorf("hintIn(mount proc EPERM, filtered) = %q", h)
	}
	if h := hintIn("hostname", unix.EINVAL, filtered); h != "" {
		t.Errorf("hintIn(hostname EINVAL) = %q; want none", h)
	}
	if h := hintIn("mount", &mounts.Error{Op: "bind", Source: "/usr", Err: unix.EACCES}, launchEnv{apparmor: "docker-default (enforce)"}); !strings.Contains(h, "docker-default") || !strings.Contains(h, "apparmor=unconfined") {
		t.Errorf("hintIn(mount EACCES, AppArmor) = %q", h)
	}
}
