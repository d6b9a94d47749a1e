package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// Tests of Pool, from outside: what the command gets and does, what the host sees of
// its processes, namespaces and cgroups, and that nothing hangs (every blocking call
// runs under a deadline, poolDeadline).

const poolDeadline = 10 * time.Second

// within runs f and fails the test if it has not returned after d: a hang is a failure
// here, not a test timeout.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// poolProbe runs one unpooled sandbox, skipping the test where none can be built, and
// returns its Result (Limits says whether sandboxes get a cgroup here). Past it, a
// pooled sandbox that cannot be built is a failure, not a reason to skip.
func poolProbe(t *testing.T) *Result {
	t.Helper()
	c := Command(compile(t, policy.Options{Args: []string{"true"}, Workspace: testWorkspace(t)}, nil))
	var err error
	within(t, poolDeadline, "Run of an unpooled sandbox", func() { err = c.Run() })
	skipIfNoSandbox(t, err)
	if err != nil {
		t.Fatalf("an unpooled sandbox: %v", err)
	}
	return c.Result
}

// newTestPool makes a pool closed (under a deadline) when the test ends.
func newTestPool(t *testing.T, template *config.Config, size int) *Pool {
	t.Helper()
	poolProbe(t)
	p, err := NewPool(template, size)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	t.Cleanup(func() { within(t, poolDeadline, "Pool.Close", func() { p.Close() }) })
	return p
}

// poolTemplate compiles the agent profile for a new workspace.
func poolTemplate(t *testing.T, o policy.Options) (*config.Config, string) {
	t.Helper()
	if o.Workspace == "" {
		o.Workspace = testWorkspace(t)
	}
	if o.Args == nil {
		o.Args = []string{"true"}
	}
	return compile(t, o, nil), o.Workspace
}

// poolProc is the template's process (environment, working directory, rlimits) with
// other args.
func poolProc(template *config.Config, args ...string) *specs.Process {
	p := *template.Process
	p.Args = args
	return &p
}

// runPooled runs c under the deadline and returns Run's error.
func runPooled(t *testing.T, c *Cmd) error {
	t.Helper()
	var err error
	within(t, poolDeadline, "Run of a pooled command", func() { err = c.Run() })
	return err
}

// waitPooled runs c.Wait under the deadline and returns its error.
func waitPooled(t *testing.T, c *Cmd) error {
	t.Helper()
	var err error
	within(t, poolDeadline, "Wait", func() { err = c.Wait() })
	return err
}

// procStat returns the state and parent pid of pid from /proc/PID/stat.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return f[0][0], ppid, err == nil
}

// hasChildren reports whether some thread of pid has a child (proc(5): children).
func hasChildren(pid int) bool {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		if err == nil && len(strings.Fields(string(b))) > 0 {
			return true
		}
	}
	return false
}

// initChildren lists the live children of this process that run as an init (argv[0]
// InitArg), with their arguments. A zombie has no command line and is not listed.
func initChildren() map[int][]string {
	out := map[int][]string{}
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); !ok || ppid != self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"); err == nil && args[0] == InitArg {
			out[pid] = args[1:]
		}
	}
	return out
}

// pooledInits lists the live pooled inits of this process (InitArg with poolArg among
// its arguments), with whether each is idle (no command forked yet).
func pooledInits() map[int]bool {
	out := map[int]bool{}
	for pid, args := range initChildren() {
		if contains(args, poolArg) {
			out[pid] = !hasChildren(pid)
		}
	}
	return out
}

// waitReady polls until n sandboxes of p are built and waiting (the test is in the
// package: it reads the length of the pool's ready queue, which only says when to look)
// and returns the pids of the idle pooled inits the host shows then, sorted.
func waitReady(t *testing.T, p *Pool, n int) []int {
	t.Helper()
	deadline := time.Now().Add(poolDeadline)
	for {
		if len(p.ready) >= n {
			var idle []int
			for pid, isIdle := range pooledInits() {
				if isIdle {
					idle = append(idle, pid)
				}
			}
			sort.Ints(idle)
			return idle
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sandboxes ready after %v; want %d (inits: %v)", len(p.ready), poolDeadline, n, pooledInits())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// nsIno is the inode of /proc/PID/ns/NAME (PID may be "self").
func nsIno(pid, name string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+pid+"/ns/"+name, &st); err != nil {
		return 0
	}
	return st.Ino
}

// pidsInPidNS lists the host's processes in the pid namespace ino.
func pidsInPidNS(ino uint64) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if nsIno(e.Name(), "pid") == ino {
			out = append(out, pid)
		}
	}
	return out
}

// procStatusFields reads the named lines of /proc/PID/status.
func procStatusFields(t *testing.T, pid int, names ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("status of %d: %v", pid, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, n := range names {
			if k == n {
				out[k] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// initCgroupDirs lists the gosbx-<this pid>-* cgroup directories pid is in (v1
// hierarchies and the unified one).
func initCgroupDirs(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return nil
	}
	prefix := fmt.Sprintf("gosbx-%d-", os.Getpid())
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(parts[2], prefix) {
			continue
		}
		if parts[1] == "" {
			for _, mp := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if _, err := os.Stat(filepath.Join(mp, "cgroup.controllers")); err == nil {
					out = append(out, filepath.Join(mp, parts[2]))
					break
				}
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			c = strings.TrimPrefix(c, "name=")
			out = append(out, filepath.Join("/sys/fs/cgroup", c, parts[2]))
		}
	}
	return out
}

// newCgroups are the groups of ownCgroups not in before.
func newCgroups(before []string) []string {
	var out []string
	for _, g := range ownCgroups() {
		if !contains(before, g) {
			out = append(out, g)
		}
	}
	return out
}

// waitNoNewCgroups polls until no group of this process is left but those of before.
func waitNoNewCgroups(t *testing.T, before []string) {
	t.Helper()
	deadline := time.Now().Add(poolDeadline)
	for {
		left := newCgroups(before)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("cgroups of this process left: %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nsLog is an eventLog that, at the child-pid event, opens the init's pid and mount
// namespaces and holds them until the test ends: the kernel reuses a namespace's inode
// number once it is freed, and the pool builds the next sandbox meanwhile. The init is
// there at that event: it waits for the launcher's acknowledgement of the exec before
// it reaps the command, and a failed init is reaped only after the event.
type nsLog struct {
	eventLog
	mu   sync.Mutex
	held map[uint64]bool // inode numbers of the namespaces held
	fs   []*os.File
}

func newNSLog(t *testing.T) *nsLog {
	l := &nsLog{held: map[uint64]bool{}}
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, f := range l.fs {
			f.Close()
		}
	})
	return l
}

func (l *nsLog) add(e Event) {
	if e.ChildPid != 0 {
		for _, name := range []string{"pid", "mnt"} {
			f, err := os.Open("/proc/" + strconv.Itoa(e.ChildPid) + "/ns/" + name)
			if err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Fstat(int(f.Fd()), &st) != nil {
				f.Close()
				continue
			}
			l.mu.Lock()
			l.fs = append(l.fs, f)
			l.held[st.Ino] = true
			l.mu.Unlock()
		}
	}
	l.eventLog.add(e)
}

// holds reports whether the namespace with inode ino is held.
func (l *nsLog) holds(ino uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ino != 0 && l.held[ino]
}

// startEvents returns the child-pid event and the exec event of log.
func startEvents(log *nsLog) (start, exec Event) {
	for _, e := range log.events() {
		switch {
		case e.ChildPid != 0 && start.ChildPid == 0:
			start = e
		case e.Exec && !exec.Exec:
			exec = e
		}
	}
	return start, exec
}

// TestPoolStdioAndExitStatus: a pooled command's stdin, stdout and stderr, each way of
// passing one (a reader and a writer copied through pipes, an *os.File passed as
// itself), and its exit status: 0, non-zero, killed by a signal.
func TestPoolStdioAndExitStatus(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 2)

	t.Run("stdio", func(t *testing.T) {
		errFile, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		defer errFile.Close()
		var stdout bytes.Buffer
		c := p.Command(poolProc(template, "sh", "-c", "cat; echo to-stderr >&2; echo after-cat"))
		c.Stdin = strings.NewReader("from stdin\n")
		c.Stdout, c.Stderr = &stdout, errFile
		err = runPooled(t, c)
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
		if got := stdout.String(); got != "from stdin\nafter-cat\n" {
			t.Errorf("stdout (a *bytes.Buffer) = %q; want the stdin then after-cat", got)
		}
		b, err := os.ReadFile(errFile.Name())
		if err != nil || string(b) != "to-stderr\n" {
			t.Errorf("stderr (an *os.File) read back: %q, %v; want to-stderr", b, err)
		}
	})

	t.Run("large stdin through cat", func(t *testing.T) {
		// Far beyond a pipe's 64 KiB: both copies (into stdin, out of stdout) must run
		// while the command does.
		in := bytes.Repeat([]byte("0123456789abcdef\n"), 1<<16) // 1.06 MiB
		var stdout bytes.Buffer
		c := p.Command(poolProc(template, "cat"))
		c.Stdin, c.Stdout = bytes.NewReader(in), &stdout
		if err := runPooled(t, c); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if !bytes.Equal(stdout.Bytes(), in) {
			t.Errorf("cat gave back %d bytes of %d; want them all, in order", stdout.Len(), len(in))
		}
	})

	t.Run("one writer for stdout and stderr", func(t *testing.T) {
		var out bytes.Buffer
		c := p.Command(poolProc(template, "sh", "-c", "echo a; echo b >&2; echo c"))
		c.Stdout, c.Stderr = &out, &out
		if err := runPooled(t, c); err != nil {
			t.Fatalf("Run = %v", err)
		}
		if out.String() != "a\nb\nc\n" {
			t.Errorf("output = %q; want a, b, c in order", out.String())
		}
	})

	tests := []struct {
		name   string
		script string
		code   int
		signal syscall.Signal
	}{
		{"exit 0", "exit 0", 0, 0},
		{"exit 3", "exit 3", 3, 0},
		{"SIGTERM", "kill -TERM $$", 128 + 15, syscall.SIGTERM},
		{"SIGKILL", "kill -KILL $$", 128 + 9, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := newNSLog(t)
			c := p.Command(poolProc(template, "sh", "-c", tt.script))
			c.Events = log.add
			err := runPooled(t, c)
			if c.Result == nil || c.Result.ExitCode != tt.code || c.Result.Signal != tt.signal || c.Result.TimedOut {
				t.Fatalf("Run = %v, Result %+v; want exit %d, signal %v", err, c.Result, tt.code, tt.signal)
			}
			var ee *ExitError
			switch {
			case tt.code == 0 && err != nil:
				t.Errorf("Run = %v; want nil", err)
			case tt.code != 0 && (!errors.As(err, &ee) || ee.ExitCode != tt.code):
				t.Errorf("Run = %v (%T); want an *ExitError with exit %d", err, err, tt.code)
			}
			var se *SetupError
			if errors.As(err, &se) {
				t.Errorf("a command that ran is reported as a SetupError: %v", err)
			}
			ev := log.events()
			if len(ev) == 0 || ev[len(ev)-1].ExitCode == nil || *ev[len(ev)-1].ExitCode != tt.code {
				t.Errorf("events = %+v; want a last one with exit %d", ev, tt.code)
			}
		})
	}
}

// TestPoolSandboxUsedOnce: commands in a row through one pool each get a sandbox of
// their own: new pid and mount namespaces, a new init, an empty private /tmp.
func TestPoolSandboxUsedOnce(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 1)
	script := `if test -e /tmp/gosbx-pool-marker; then echo seen; else echo fresh; fi; echo "$0" > /tmp/gosbx-pool-marker; cat /tmp/gosbx-pool-marker`
	type seen struct {
		start, exec Event
		out         string
	}
	var runs []seen
	for i := 0; i < 3; i++ {
		log := newNSLog(t)
		var out bytes.Buffer
		c := p.Command(poolProc(template, "sh", "-c", script, "run"+strconv.Itoa(i)))
		c.Stdout, c.Events = &out, log.add
		err := runPooled(t, c)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		start, exec := startEvents(log)
		if !log.holds(start.PidNS) || !log.holds(start.MntNS) {
			t.Fatalf("run %d: could not hold the init's namespaces (%+v) to compare them", i, start)
		}
		runs = append(runs, seen{start, exec, out.String()})
	}
	self := nsIno("self", "pid")
	selfMnt := nsIno("self", "mnt")
	for i, r := range runs {
		if want := fmt.Sprintf("fresh\nrun%d\n", i); r.out != want {
			t.Errorf("run %d printed %q; want %q (a /tmp of its own, written)", i, r.out, want)
		}
		if r.start.ChildPid == 0 || r.start.PidNS == 0 || r.start.MntNS == 0 || !r.exec.Exec || r.exec.Pid == 0 {
			t.Fatalf("run %d: events %+v %+v; want the init's pid and namespaces, and the exec", i, r.start, r.exec)
		}
		if r.start.PidNS == self || r.start.MntNS == selfMnt {
			t.Errorf("run %d shares the test's pid or mount namespace", i)
		}
		if !gone(r.start.ChildPid) {
			t.Errorf("run %d: its init %d is still there after Run", i, r.start.ChildPid)
		}
		for j := 0; j < i; j++ {
			o := runs[j]
			if r.start.ChildPid == o.start.ChildPid || r.start.PidNS == o.start.PidNS || r.start.MntNS == o.start.MntNS {
				t.Errorf("runs %d and %d share an init or a namespace: %+v and %+v", j, i, o.start, r.start)
			}
		}
	}
}

// TestPoolBoundary: a pooled command is held as an unpooled one is: no capability in
// any set, no_new_privs, a seccomp filter, its own pid namespace, and no write outside
// the workspace.
func TestPoolBoundary(t *testing.T) {
	ro := testWorkspace(t)
	template, ws := poolTemplate(t, policy.Options{ReadOnly: []string{ro}})
	p := newTestPool(t, template, 2)

	t.Run("credentials of a running command", func(t *testing.T) {
		log := newNSLog(t)
		c := p.Command(poolProc(template, "sleep", "30"))
		c.Events = log.add
		var err error
		within(t, poolDeadline, "Start", func() { err = c.Start() })
		if err != nil {
			t.Fatalf("Start = %v", err)
		}
		waited := false
		defer func() {
			if !waited {
				c.Signal(syscall.SIGKILL)
				within(t, poolDeadline, "Wait", func() { c.Wait() })
			}
		}()
		start, exec := startEvents(log)
		if !exec.Exec || exec.Pid <= 0 {
			t.Fatalf("events %+v; want the exec with the command's host pid", log.events())
		}
		// The exec is reported once execve(2) has passed its point of no return; the
		// new argv shows in /proc a moment later.
		for deadline := time.Now().Add(poolDeadline); ; time.Sleep(time.Millisecond) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(exec.Pid) + "/cmdline")
			if strings.HasPrefix(string(b), "sleep\x00") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d is %q, not the sleep", exec.Pid, b)
			}
		}
		st := procStatusFields(t, exec.Pid, "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if st[k] != "0000000000000000" {
				t.Errorf("%s of the command = %q; want none", k, st[k])
			}
		}
		if st["NoNewPrivs"] != "1" || st["Seccomp"] != "2" {
			t.Errorf("NoNewPrivs %q, Seccomp %q; want 1 and 2 (filter)", st["NoNewPrivs"], st["Seccomp"])
		}
		pidNS := nsIno(strconv.Itoa(exec.Pid), "pid")
		if !log.holds(pidNS) {
			t.Fatalf("the command's pid namespace %d is not the init's, held since its start", pidNS)
		}
		if pidNS == 0 || pidNS == nsIno("self", "pid") || pidNS != start.PidNS {
			t.Errorf("pid namespace of the command %d; the test's %d, the init's %d", pidNS, nsIno("self", "pid"), start.PidNS)
		}
		if in := pidsInPidNS(pidNS); !contains(intsToStrings(in), strconv.Itoa(exec.Pid)) || !contains(intsToStrings(in), strconv.Itoa(start.ChildPid)) {
			t.Errorf("processes in the command's pid namespace: %v; want the init %d and the command %d", in, start.ChildPid, exec.Pid)
		}
		// A forwarded signal ends it as the command's own death.
		if err := c.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		var werr error
		within(t, poolDeadline, "Wait", func() { werr = c.Wait() })
		waited = true
		var ee *ExitError
		if !errors.As(werr, &ee) || ee.Signal != syscall.SIGTERM || ee.ExitCode != 143 {
			t.Errorf("Wait after SIGTERM = %v; want killed by SIGTERM, 143", werr)
		}
		if left := pidsInPidNS(pidNS); len(left) > 0 {
			t.Errorf("processes of the sandbox left after Wait: %v", left)
		}
	})

	t.Run("writes", func(t *testing.T) {
		usrFile := "/usr/gosbx-pool-test-" + strconv.Itoa(os.Getpid())
		roFile := filepath.Join(ro, "x")
		wsFile := filepath.Join(ws, "ok")
		if _, err := os.Lstat(usrFile); err == nil {
			t.Skipf("%s exists on the host", usrFile)
		}
		defer os.Remove(usrFile)
		for _, tt := range []struct {
			path string
			ok   bool
		}{{usrFile, false}, {roFile, false}, {"/etc/gosbx-pool-test", false}, {wsFile, true}} {
			var stderr bytes.Buffer
			c := p.Command(poolProc(template, "touch", tt.path))
			c.Stderr = &stderr
			err := runPooled(t, c)
			_, statErr := os.Lstat(tt.path)
			if tt.ok {
				if err != nil || statErr != nil {
					t.Errorf("touch %s (the workspace): %v %s; on the host: %v", tt.path, err, stderr.String(), statErr)
				}
				continue
			}
			var ee *ExitError
			if !errors.As(err, &ee) || ee.ExitCode == 0 {
				t.Errorf("touch %s = %v; want a non-zero exit", tt.path, err)
			}
			if !strings.Contains(stderr.String(), "Read-only file system") {
				t.Errorf("touch %s: stderr %q; want Read-only file system", tt.path, stderr.String())
			}
			if statErr == nil {
				t.Errorf("touch %s from a pooled sandbox created the file on the host", tt.path)
			}
		}
	})
}

func intsToStrings(in []int) []string {
	out := make([]string, len(in))
	for i, n := range in {
		out[i] = strconv.Itoa(n)
	}
	return out
}

// TestPoolExecError: a command that cannot be executed is an *ExecError (127, 126), its
// sandbox is gone when Start returns, and the pool goes on working.
func TestPoolExecError(t *testing.T) {
	template, ws := poolTemplate(t, policy.Options{})
	if err := os.WriteFile(filepath.Join(ws, "plain"), []byte("#!/bin/sh\necho ran > ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newTestPool(t, template, 1)
	for _, tt := range []struct {
		args  []string
		code  int
		errno syscall.Errno
	}{
		{[]string{"gosbx-no-such-command"}, ExitNotFound, syscall.ENOENT},
		{[]string{"./plain"}, ExitNotExecutable, syscall.EACCES},
	} {
		log := newNSLog(t)
		c := p.Command(poolProc(template, tt.args...))
		c.Events = log.add
		var err error
		within(t, poolDeadline, "Start", func() { err = c.Start() })
		var ee *ExecError
		if !errors.As(err, &ee) || ee.ExitCode() != tt.code || ee.Errno != tt.errno {
			t.Fatalf("Start(%v) = %v (%T); want an *ExecError %v, %d", tt.args, err, err, tt.errno, tt.code)
		}
		ev := log.events()
		if len(ev) != 2 || ev[0].ChildPid == 0 || ev[1].Step != "exec" || ev[1].Status != tt.code {
			t.Fatalf("events = %+v; want child-pid, then an exec error with status %d", ev, tt.code)
		}
		if !gone(ev[0].ChildPid) {
			t.Errorf("the init %d is still there (or unreaped) after Start failed", ev[0].ChildPid)
		}
		if !log.holds(ev[0].PidNS) {
			t.Logf("the failed init's pid namespace could not be held: its processes are not looked for")
		} else if left := pidsInPidNS(ev[0].PidNS); len(left) > 0 {
			t.Errorf("processes of the failed sandbox left: %v", left)
		}
		if err := waitPooled(t, c); err == nil {
			t.Error("Wait after a failed Start succeeded")
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Error("the non-executable script ran")
	}
	var out bytes.Buffer
	c := p.Command(poolProc(template, "echo", "still", "working"))
	c.Stdout = &out
	if err := runPooled(t, c); err != nil || out.String() != "still working\n" {
		t.Errorf("the next command: %v, %q", err, out.String())
	}
}

// TestPoolSetupFailure: a template whose sandbox cannot be built gives a *SetupError
// from every Start, at once and with the step, and Close still returns with nothing
// left running.
func TestPoolSetupFailure(t *testing.T) {
	poolProbe(t)
	groupsBefore := ownCgroups()
	cases := []struct {
		name string
		spec func(t *testing.T) *config.Config
		step string
	}{
		{"bind source gone", func(t *testing.T) *config.Config {
			extra := testWorkspace(t)
			s, _ := poolTemplate(t, policy.Options{ReadOnly: []string{extra}})
			if err := os.RemoveAll(extra); err != nil {
				t.Fatal(err)
			}
			return s
		}, "open bind source"},
		{"hostname refused inside", func(t *testing.T) *config.Config {
			// The init is cloned and fails its first step: sethostname(2) takes 64 bytes.
			s, _ := poolTemplate(t, policy.Options{})
			s.Hostname = strings.Repeat("h", 65)
			return s
		}, "hostname"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			template := tt.spec(t)
			p, err := NewPool(template, 2)
			if err != nil {
				t.Fatalf("NewPool = %v; want the failure from Start", err)
			}
			closed := false
			defer func() {
				if !closed {
					within(t, poolDeadline, "Pool.Close", func() { p.Close() })
				}
			}()
			for i := 0; i < 4; i++ {
				log := newNSLog(t)
				var stdout bytes.Buffer
				c := p.Command(poolProc(template, "echo", "ran"))
				c.Events, c.Stdout, c.Stdin = log.add, &stdout, strings.NewReader("x")
				within(t, poolDeadline, "Start", func() { err = c.Start() })
				var se *SetupError
				if !errors.As(err, &se) || se.Step != tt.step || se.ExitCode() != ExitSetup {
					t.Fatalf("Start %d = %v (%T); want a *SetupError at %s", i, err, err, tt.step)
				}
				ev := log.events()
				if len(ev) != 1 || ev[0].Step != tt.step || ev[0].Status != ExitSetup || ev[0].Error == "" {
					t.Errorf("events = %+v; want one error event at %s", ev, tt.step)
				}
				if stdout.Len() > 0 {
					t.Errorf("output %q from a command that cannot have run", stdout.String())
				}
				if err := waitPooled(t, c); err == nil {
					t.Error("Wait after a failed Start succeeded")
				}
			}
			within(t, poolDeadline, "Pool.Close", func() { err = p.Close() })
			closed = true
			if err != nil {
				t.Errorf("Close = %v", err)
			}
			if inits := pooledInits(); len(inits) > 0 {
				t.Errorf("pooled inits left after Close: %v", inits)
			}
			if inits := initChildren(); len(inits) > 0 {
				t.Errorf("inits left after Close: %v", inits)
			}
			waitNoNewCgroups(t, groupsBefore)
		})
	}
}

// TestPoolTimeout: the timeout of a pooled command kills its whole sandbox.
func TestPoolTimeout(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 1)
	log := newNSLog(t)
	c := p.Command(poolProc(template, "sh", "-c", "sleep 10 & sleep 10"))
	c.Timeout = 300 * time.Millisecond
	c.Events = log.add
	err := runPooled(t, c)
	var ee *ExitError
	if !errors.As(err, &ee) || !ee.TimedOut || ee.ExitCode != ExitTimeout {
		t.Fatalf("Run = %v (%T); want an *ExitError, timed out, 124", err, err)
	}
	start, exec := startEvents(log)
	if !log.holds(start.PidNS) || !exec.Exec {
		t.Fatalf("events = %+v; want the init's pid namespace (held) and the exec", log.events())
	}
	if left := pidsInPidNS(start.PidNS); len(left) > 0 {
		t.Errorf("processes of the timed-out sandbox left: %v", describePids(intsToStrings(left)))
	}
	if !gone(start.ChildPid) || !gone(exec.Pid) {
		t.Errorf("the init %d or the command %d survived the timeout", start.ChildPid, exec.Pid)
	}
	ev := log.events()
	if last := ev[len(ev)-1]; last.TimedOut == nil || !*last.TimedOut || last.ExitCode == nil || *last.ExitCode != ExitTimeout {
		t.Errorf("last event %+v; want timed out, 124", last)
	}
}

// TestPoolCloseKillsIdle: Close kills the sandboxes built ahead and removes their
// cgroups.
func TestPoolCloseKillsIdle(t *testing.T) {
	probe := poolProbe(t)
	groupsBefore := ownCgroups()
	template, _ := poolTemplate(t, policy.Options{})
	p, err := NewPool(template, 2)
	if err != nil {
		t.Fatal(err)
	}
	idle := waitReady(t, p, 2)
	if len(idle) != 2 {
		t.Fatalf("idle inits %v; want 2 for a pool of 2", idle)
	}
	var dirs []string
	if probe.Limits != "none" {
		// Each sandbox built ahead is in its cgroup.
		deadline := time.Now().Add(poolDeadline)
		for _, pid := range idle {
			for {
				d := initCgroupDirs(pid)
				if len(d) > 0 {
					dirs = append(dirs, d...)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the idle init %d is in no gosbx cgroup (an unpooled sandbox has %s)", pid, probe.Limits)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		for _, d := range dirs {
			if _, err := os.Stat(d); err != nil {
				t.Fatalf("cgroup %s of an idle init: %v", d, err)
			}
		}
	} else {
		t.Logf("no cgroups here (%s): only the processes are checked", probe.Limits)
	}
	within(t, poolDeadline, "Pool.Close", func() { err = p.Close() })
	if err != nil {
		t.Errorf("Close = %v", err)
	}
	for _, pid := range idle {
		if !gone(pid) {
			state, _, _ := procStat(pid)
			t.Errorf("the idle init %d is still there after Close (state %c)", pid, state)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("the cgroup %s of an idle sandbox is still there after Close", d)
		}
	}
	if left := newCgroups(groupsBefore); len(left) > 0 {
		t.Errorf("cgroups of this process left after Close: %v", left)
	}
	if inits := pooledInits(); len(inits) > 0 {
		t.Errorf("pooled inits left after Close: %v", inits)
	}
	// Closed: Start fails at once, Close again is a no-op.
	c := p.Command(poolProc(template, "true"))
	within(t, poolDeadline, "Start on a closed pool", func() { err = c.Start() })
	if err == nil {
		t.Error("Start on a closed pool succeeded")
		waitPooled(t, c)
	}
	within(t, poolDeadline, "a second Close", func() { err = p.Close() })
	if err != nil {
		t.Errorf("a second Close = %v", err)
	}
}

// onlyReader hides the io.WriterTo of a reader, as many readers do not have one: io.Copy
// reads from it into a buffer of its own.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

// TestPoolIdleInitKilled: a sandbox built ahead and killed from outside before its
// command came does not hang or lose the next Start: once the init is fully dead (its
// socket closed), Start's send fails and it retries in a new sandbox, with the stdin.
// (Killed while Start sends, it would be a *SetupError: not tested, a race.)
func TestPoolIdleInitKilled(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 1)
	idle := waitReady(t, p, 1)
	if len(idle) != 1 {
		t.Fatalf("idle inits %v; want 1 for a pool of 1", idle)
	}
	victim := idle[0]
	if err := unix.Kill(victim, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait until it is a zombie the pool could reap (waitid WNOWAIT leaves it so): all
	// its threads are gone, and with them its end of the socket. The leader shows state
	// Z while other threads may still be exiting.
	for deadline := time.Now().Add(poolDeadline); ; time.Sleep(5 * time.Millisecond) {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, victim, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil {
			t.Fatalf("waitid %d: %v", victim, err)
		}
		if info.Signo == int32(unix.SIGCHLD) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed init %d is not dead", victim)
		}
	}
	log := newNSLog(t)
	var stdout bytes.Buffer
	const in = "stdin after a retry\n"
	c := p.Command(poolProc(template, "cat"))
	// A reader without WriteTo, as most are: io.Copy reads from it before it writes into
	// the pipe, so a copy begun for the dead sandbox always takes some of it (a
	// strings.Reader loses its data only when that copy wins a race).
	c.Stdin, c.Stdout, c.Events = onlyReader{strings.NewReader(in)}, &stdout, log.add
	if err := runPooled(t, c); err != nil {
		t.Fatalf("Run = %v (%T); want the retry in a new sandbox to succeed", err, err)
	}
	if start, _ := startEvents(log); start.ChildPid == victim || start.ChildPid == 0 {
		t.Errorf("the command ran in init %d; want a new one, not the killed %d", start.ChildPid, victim)
	}
	if stdout.String() != in {
		t.Errorf("cat printed %q; want its stdin, %q (the stdin went to the dead sandbox's pipe)", stdout.String(), in)
	}
	if !gone(victim) {
		t.Errorf("the killed init %d was not reaped", victim)
	}
	// And the pool works on.
	var out bytes.Buffer
	c = p.Command(poolProc(template, "echo", "next"))
	c.Stdout = &out
	if err := runPooled(t, c); err != nil || out.String() != "next\n" {
		t.Errorf("the next command: %v, %q", err, out.String())
	}
}

// TestPoolConcurrent: 8 goroutines × 5 commands through one pool of 2, each with its
// own stdin and output.
func TestPoolConcurrent(t *testing.T) {
	groupsBefore := ownCgroups()
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 2)
	const goroutines, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				tag := fmt.Sprintf("g%d-i%d", g, i)
				var stdout, stderr bytes.Buffer
				c := p.Command(poolProc(template, "sh", "-c", `cat; echo "$0" >&2; exit $1`, tag, strconv.Itoa(i)))
				c.Stdin, c.Stdout, c.Stderr = strings.NewReader(tag+"\n"), &stdout, &stderr
				err := c.Run()
				var ee *ExitError
				if i == 0 && err != nil || i > 0 && (!errors.As(err, &ee) || ee.ExitCode != i) ||
					c.Result == nil || c.Result.ExitCode != i {
					errs <- fmt.Errorf("%s: Run = %v, Result %+v; want exit %d", tag, err, c.Result, i)
					continue
				}
				if stdout.String() != tag+"\n" || stderr.String() != tag+"\n" {
					errs <- fmt.Errorf("%s: stdout %q, stderr %q; want %q in each", tag, stdout.String(), stderr.String(), tag)
				}
			}
		}(g)
	}
	within(t, 4*poolDeadline, "8 goroutines × 5 pooled commands", wg.Wait)
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	if n > 10 {
		t.Errorf("… and %d more", n-10)
	}
	var err error
	within(t, poolDeadline, "Pool.Close", func() { err = p.Close() })
	if err != nil {
		t.Errorf("Close = %v", err)
	}
	if inits := pooledInits(); len(inits) > 0 {
		t.Errorf("pooled inits left after Close: %v", inits)
	}
	waitNoNewCgroups(t, groupsBefore)
}

// TestPoolNoArgs: a process without args is refused at Start, without taking the
// sandbox built ahead, which the next command gets.
func TestPoolNoArgs(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 1)
	idle := waitReady(t, p, 1)
	if len(idle) != 1 {
		t.Fatalf("idle inits %v; want 1 for a pool of 1", idle)
	}
	for _, proc := range []*specs.Process{nil, poolProc(template), poolProc(template, []string{}...)} {
		log := newNSLog(t)
		c := p.Command(proc)
		c.Events = log.add
		var err error
		within(t, poolDeadline, "Start", func() { err = c.Start() })
		var se *SetupError
		if !errors.As(err, &se) {
			t.Fatalf("Start of %+v = %v (%T); want a *SetupError", proc, err, err)
		}
		if ev := log.events(); len(ev) != 1 || ev[0].ChildPid != 0 || ev[0].Error == "" {
			t.Errorf("events = %+v; want one error, no sandbox", ev)
		}
	}
	if now := waitReady(t, p, 1); len(now) != 1 || now[0] != idle[0] {
		t.Errorf("idle inits %v after the refused Starts; want the same one, %v", now, idle)
	}
	log := newNSLog(t)
	c := p.Command(poolProc(template, "true"))
	c.Events = log.add
	if err := runPooled(t, c); err != nil {
		t.Fatalf("the next command: %v", err)
	}
	if start, _ := startEvents(log); start.ChildPid != idle[0] {
		t.Errorf("the next command ran in init %d; want the one built ahead, %d", start.ChildPid, idle[0])
	}
}

// TestPoolNewErrors: NewPool refuses what can never be launched, before building.
func TestPoolNewErrors(t *testing.T) {
	s := validSpec()
	if _, err := NewPool(s, 0); err == nil {
		t.Error("NewPool with size 0 succeeded")
	}
	s.Linux.Namespaces = s.Linux.Namespaces[1:] // no user namespace
	if _, err := NewPool(s, 1); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("NewPool without a user namespace = %v", err)
	}
	if _, err := NewPool(nil, 1); err == nil {
		t.Error("NewPool(nil) succeeded")
	}
}

// TestPoolCloseLeavesStartedCommands: Close kills the sandboxes not taken yet, not a
// command already started, which still gets its stdin and reports its exit.
func TestPoolCloseLeavesStartedCommands(t *testing.T) {
	groupsBefore := ownCgroups()
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 1)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	log := newNSLog(t)
	var stdout bytes.Buffer
	c := p.Command(poolProc(template, "sh", "-c", `read x; echo "got $x"; exit 7`))
	c.Stdin, c.Stdout, c.Events = onlyReader{inR}, &stdout, log.add
	within(t, poolDeadline, "Start", func() { err = c.Start() })
	if err != nil {
		t.Fatal(err)
	}
	start, _ := startEvents(log)
	within(t, poolDeadline, "Pool.Close", func() { err = p.Close() })
	if err != nil {
		t.Errorf("Close = %v", err)
	}
	if gone(start.ChildPid) {
		t.Fatalf("Close killed the started command's sandbox (init %d)", start.ChildPid)
	}
	if _, err := inW.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	inW.Close()
	within(t, poolDeadline, "Wait", func() { err = c.Wait() })
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode != 7 || stdout.String() != "got line\n" {
		t.Errorf("Wait = %v, stdout %q; want exit 7 and got line", err, stdout.String())
	}
	if inits := pooledInits(); len(inits) > 0 {
		t.Errorf("pooled inits left: %v", inits)
	}
	waitNoNewCgroups(t, groupsBefore)
}

// TestPoolOversizedProcess: a process too large to send (maxFrame) is refused without
// killing the sandboxes built ahead, which have nothing to do with its size.
func TestPoolOversizedProcess(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	p := newTestPool(t, template, 2)
	idle := waitReady(t, p, 2)
	if len(idle) != 2 {
		t.Fatalf("idle inits %v; want 2 for a pool of 2", idle)
	}
	proc := poolProc(template, "true")
	proc.Env = append(append([]string{}, proc.Env...), "BIG="+strings.Repeat("x", maxFrame))
	c := p.Command(proc)
	var err error
	within(t, poolDeadline, "Start", func() { err = c.Start() })
	if err == nil {
		waitPooled(t, c)
		t.Fatal("Start of a process larger than a frame succeeded")
	}
	t.Logf("Start = %.200v", err)
	for _, pid := range idle {
		if gone(pid) {
			t.Errorf("the sandbox %d built ahead was killed for a process that could never be sent", pid)
		}
	}
}

// A template far larger than a socket's buffer (16 MiB in a cleanup entry) still reaches
// the pooled init whole.
func TestPoolLargeTemplate(t *testing.T) {
	template, _ := poolTemplate(t, policy.Options{})
	template.Cleanup = append(template.Cleanup, cleanup.Entry{Kind: cleanup.RemoveNewEntries, Path: "/nonexistent-gosbx-padding",
		Keep: []string{strings.Repeat("x", 16<<20)}})
	p := newTestPool(t, template, 1)
	var out bytes.Buffer
	c := p.Command(poolProc(template, "echo", "large"))
	c.Stdout = &out
	if err := runPooled(t, c); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if out.String() != "large\n" {
		t.Errorf("output %q", out.String())
	}
}

// The launcher's copy of a command's output ends 2 s after the sandbox is gone even if
// a process outside still holds the pipe's write end (the command could pass it over a
// unix socket), as os/exec's WaitDelay bounds its own copies.
func TestStdioCopyWaitBounded(t *testing.T) {
	var out bytes.Buffer
	s, err := newStdioCopy(nil, &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	held, err := unix.Dup(s.fds[1]) // the write end, kept open as by a process outside
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(held)
	unix.Write(held, []byte("hi"))
	s.run()
	start := time.Now()
	s.wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait took %v with the write end held outside", d)
	}
	if out.String() != "hi" {
		t.Errorf("copied %q, want what was written before", out.String())
	}
}
