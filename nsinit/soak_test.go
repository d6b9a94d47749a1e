package nsinit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosbx/gosbx/internal/ownmountns"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// Leak soak of the library (issue 7, item 8): one long-lived process runs many
// sandboxes with Cmd.Run, one after another and from 8 goroutines at once, and ends
// with the same open descriptors, no more threads than Go's reuse explains, no child
// process, and no cgroup or mount of its own left. GOSBX_SOAK=full (make soak) runs
// 1,000 sequential runs and 8 × 100 concurrent ones; the normal test run 100 and 8 × 10.

const (
	soakGoroutines  = 8
	soakSettle      = 2 * time.Second
	soakMaxProblems = 20
)

func soakScale(t *testing.T) (n, m int) {
	t.Helper()
	switch v := os.Getenv("GOSBX_SOAK"); v {
	case "":
		return 100, 10
	case "full":
		return 1000, 100
	default:
		t.Fatalf("GOSBX_SOAK=%q: want unset (reduced soak) or full", v)
	}
	return 0, 0
}

// ---------------------------------------------------------------------------
// The process's own state.

// procSnap is what a Run must not leave behind in the calling process.
type procSnap struct {
	fds        map[string]string // fd number → what it is (readlink)
	threads    int               // /proc/self/status Threads
	goroutines int
	children   []string // pids in /proc/self/task/*/children
	cgroups    []string // gosbx-<our pid>-* groups under our own cgroups
	mounts     []string // /proc/self/mountinfo lines; nil: not compared (not in a mount namespace of its own)
}

func takeProcSnap() (procSnap, error) {
	var s procSnap
	var err error
	if s.fds, err = openFds(); err != nil {
		return s, err
	}
	if s.threads, err = threadCount(); err != nil {
		return s, err
	}
	s.goroutines = runtime.NumGoroutine()
	if s.children, err = childPids(); err != nil {
		return s, err
	}
	s.cgroups = ownCgroups()
	if ownmountns.Active() {
		if s.mounts, err = ownmountns.Table(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// openFds lists /proc/self/fd, without the descriptor of the listing itself.
func openFds() (map[string]string, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		if n == strconv.Itoa(int(d.Fd())) {
			continue
		}
		l, err := os.Readlink("/proc/self/fd/" + n)
		if err != nil {
			continue // closed meanwhile
		}
		out[n] = l
	}
	return out, nil
}

// newFds describes the descriptors of after that before did not have (at most 20).
func newFds(before, after map[string]string) []string {
	var out []string
	for n, l := range after {
		if before[n] != l {
			out = append(out, fmt.Sprintf("fd %s -> %s", n, l))
		}
	}
	sort.Strings(out)
	if len(out) > 20 {
		out = append(out[:20], fmt.Sprintf("… and %d more", len(out)-20))
	}
	return out
}

func threadCount() (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Threads line in /proc/self/status")
}

// childPids lists the children of every thread of this process (proc(5): children),
// zombies included; where the kernel has no children files, it scans /proc for
// processes whose parent is this one.
func childPids() ([]string, error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	var out []string
	haveFiles := false
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue // no such file (CONFIG_PROC_CHILDREN), or the thread is gone
		}
		haveFiles = true
		out = append(out, strings.Fields(string(b))...)
	}
	if !haveFiles {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return nil, err
		}
		self := os.Getpid()
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i >= 0 {
				if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == strconv.Itoa(self) {
					out = append(out, e.Name())
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// ownCgroups lists the groups this process made (gosbx-<pid>-…) under its own groups
// in the v1 memory, pids, cpu, cpuacct hierarchies and in the unified one (and its
// /gosbx, the default v2 parent).
func ownCgroups() []string {
	prefix := fmt.Sprintf("gosbx-%d-", os.Getpid())
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var dirs []string
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			for _, mp := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if _, err := os.Stat(filepath.Join(mp, "cgroup.controllers")); err == nil {
					dirs = append(dirs, filepath.Join(mp, parts[2]), filepath.Join(mp, "gosbx"))
					break
				}
			}
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			switch c {
			case "memory", "pids", "cpu", "cpuacct":
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, parts[2]))
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// threadSlack is how many more threads than before the process may have after the
// soak: Go keeps the threads it made for blocking system calls and reuses them, and
// up to soakGoroutines Runs were blocked at once.
const threadSlack = soakGoroutines

// leaks compares the process after the soak (a) with before (s).
func (s procSnap) leaks(a procSnap) []string {
	var out []string
	if len(a.fds) != len(s.fds) {
		out = append(out, fmt.Sprintf("open descriptors: %d before, %d after", len(s.fds), len(a.fds)))
		for _, d := range newFds(s.fds, a.fds) {
			out = append(out, "  "+d)
		}
	}
	if a.threads > s.threads+threadSlack {
		out = append(out, fmt.Sprintf("threads: %d before, %d after (more than %d added)", s.threads, a.threads, threadSlack))
	}
	if a.goroutines > s.goroutines {
		out = append(out, fmt.Sprintf("goroutines: %d before, %d after", s.goroutines, a.goroutines))
	}
	if len(a.children) > 0 {
		out = append(out, fmt.Sprintf("child processes left: %v", describePids(a.children)))
	}
	for _, g := range a.cgroups {
		if !contains(s.cgroups, g) {
			out = append(out, "cgroup left: "+g)
		}
	}
	if a.mounts != nil && s.mounts != nil {
		added, removed := ownmountns.Changes(s.mounts, a.mounts)
		for _, l := range added {
			out = append(out, "mount added to this process's table: "+l)
		}
		for _, l := range removed {
			out = append(out, "mount gone from this process's table: "+l)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func describePids(pids []string) []string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile("/proc/" + p + "/cmdline")
		out = append(out, fmt.Sprintf("%s (%q)", p, strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// settledLeaks polls, for up to soakSettle, until the process matches before again.
func settledLeaks(before procSnap) ([]string, procSnap, error) {
	deadline := time.Now().Add(soakSettle)
	for {
		after, err := takeProcSnap()
		if err != nil {
			return nil, after, err
		}
		l := before.leaks(after)
		if len(l) == 0 || time.Now().After(deadline) {
			return l, after, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// The runs.

// soakRun is one kind of Run and a check of its outcome.
type soakRun struct {
	name  string
	spec  *config.Config
	setup func(c *Cmd) // stdio, timeout
	check func(c *Cmd, err error) error
}

func wantExit(code int) func(*Cmd, error) error {
	return func(c *Cmd, err error) error {
		var ee *ExitError
		switch {
		case code == 0 && err != nil:
			return fmt.Errorf("Run = %v; want success", err)
		case code != 0 && !errors.As(err, &ee):
			return fmt.Errorf("Run = %v (%T); want an *ExitError with exit %d", err, err, code)
		case c.Result == nil || c.Result.ExitCode != code:
			return fmt.Errorf("Result %+v; want exit %d", c.Result, code)
		}
		return nil
	}
}

// soakRuns is the mix: each kind of launch and each way of passing stdio.
func soakRuns(t *testing.T) []soakRun {
	ws := testWorkspace(t)
	// A sleep named by a path in the workspace, to find a survivor by its argv.
	sleep := filepath.Join(ws, "gosbx-soak-sleep")
	if err := os.Symlink("/usr/bin/sleep", sleep); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killByArgv0(sleep) })
	spec := func(args ...string) *config.Config {
		return compile(t, policy.Options{Args: args, Workspace: ws}, nil)
	}
	// A spec whose bind source is gone by the time it is launched: Start fails before
	// the clone ("open bind source").
	gone := testWorkspace(t)
	setupFails := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws, ReadOnly: []string{gone}}, nil)
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	// A limit asked for: a cgroup where one can be made (a root caller's default process
	// limit is an rlimit, without one).
	limited := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws,
		Resources: policy.Resources{Pids: 64, Limits: "best-effort"}}, nil)
	return []soakRun{
		{name: "true", spec: spec("true"), check: wantExit(0)},
		{name: "true, process limit", spec: limited, check: wantExit(0)},
		{name: "true, output through pipes", spec: spec("sh", "-c", "echo out; echo err >&2"),
			setup: func(c *Cmd) { c.Stdout, c.Stderr = &bytes.Buffer{}, &bytes.Buffer{} },
			check: func(c *Cmd, err error) error {
				if err := wantExit(0)(c, err); err != nil {
					return err
				}
				if o, e := c.Stdout.(*bytes.Buffer).String(), c.Stderr.(*bytes.Buffer).String(); o != "out\n" || e != "err\n" {
					return fmt.Errorf("stdout %q, stderr %q; want out, err", o, e)
				}
				return nil
			}},
		{name: "stdin from a reader", spec: spec("sh", "-c", "read x; test \"$x\" = in"),
			setup: func(c *Cmd) { c.Stdin = strings.NewReader("in\n") }, check: wantExit(0)},
		{name: "background job", spec: spec("sh", "-c", "sleep 0.01 & "+sleep+" 60 &"), check: wantExit(0)},
		{name: "failing command", spec: spec("sh", "-c", "exit 3"), check: wantExit(3)},
		{name: "command not found", spec: spec("gosbx-soak-no-such-command"),
			check: func(c *Cmd, err error) error {
				var ee *ExecError
				if !errors.As(err, &ee) || ee.ExitCode() != ExitNotFound {
					return fmt.Errorf("Run = %v (%T); want an *ExecError, 127", err, err)
				}
				return nil
			}},
		{name: "setup failure", spec: setupFails,
			check: func(c *Cmd, err error) error {
				var se *SetupError
				if !errors.As(err, &se) || se.Step != "open bind source" {
					return fmt.Errorf("Run = %v (%T); want a *SetupError at open bind source", err, err)
				}
				return nil
			}},
		{name: "timeout", spec: spec("sh", "-c", sleep+" 60 & "+sleep+" 60"),
			setup: func(c *Cmd) { c.Timeout = 200 * time.Millisecond },
			check: func(c *Cmd, err error) error {
				var ee *ExitError
				var se *SetupError
				switch {
				case errors.As(err, &ee) && ee.TimedOut && ee.ExitCode == ExitTimeout:
				case errors.As(err, &se) && se.Step == "timeout": // expired during setup, under load
				default:
					return fmt.Errorf("Run = %v (%T); want a timeout", err, err)
				}
				return nil
			}},
	}
}

// killByArgv0 kills what a broken sandbox left running under this name.
func killByArgv0(argv0 string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.HasPrefix(string(b), argv0+"\x00") {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
}

func (r soakRun) run() error {
	c := Command(r.spec)
	if r.setup != nil {
		r.setup(c)
	}
	if err := r.check(c, c.Run()); err != nil {
		return fmt.Errorf("%s: %w", r.name, err)
	}
	return nil
}

type problems struct {
	mu   sync.Mutex
	list []string
	n    atomic.Int32
}

func (p *problems) add(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n.Add(1)
	if len(p.list) < soakMaxProblems {
		p.list = append(p.list, fmt.Sprintf(format, a...))
	}
}

func (p *problems) full() bool { return p.n.Load() >= soakMaxProblems }

func TestSoakLibrary(t *testing.T) {
	if os.Geteuid() == 0 && !ownmountns.Active() {
		ownmountns.Rerun(t)
		return
	}
	n, m := soakScale(t)
	if err := Command(compile(t, policy.Options{Args: []string{"true"}, Workspace: testWorkspace(t)}, nil)).Run(); err != nil {
		skipIfNoSandbox(t, err)
		t.Fatalf("a first Run: %v", err)
	}
	runs := soakRuns(t)

	// Warm up: every kind once, then one concurrent round, so that what the Go runtime
	// and os/exec make once and keep (the poller's descriptors, the threads for 8
	// blocked Runs) exists before the snapshot.
	for _, r := range runs {
		if err := r.run(); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	var wg sync.WaitGroup
	for g := 0; g < soakGoroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			runs[g%len(runs)].run()
		}(g)
	}
	wg.Wait()

	// the warm-up's goroutines may still be ending (a descriptor closed, a goroutine
	// gone after this snapshot would read as a change: CI saw 9 fds / 3 goroutines
	// before, 8 / 2 after)
	before := quietSnap(t)
	t.Logf("before: %d fds, %d threads, %d goroutines, %d children, %d own cgroups, %d mounts",
		len(before.fds), before.threads, before.goroutines, len(before.children), len(before.cgroups), len(before.mounts))
	if len(before.children) > 0 {
		t.Fatalf("child processes before the soak: %v", describePids(before.children))
	}

	var p problems
	// Sequential: the mix in turn. After each Run no child may be left (Wait reaped
	// the init, whose exit ended the sandbox) and no descriptor or group added.
	start := time.Now()
	maxThreads := before.threads
	for i := 0; i < n && !p.full(); i++ {
		r := runs[i%len(runs)]
		if err := r.run(); err != nil {
			p.add("sequential run %d: %v", i, err)
			continue
		}
		if ch, err := childPids(); err != nil || len(ch) > 0 {
			p.add("sequential run %d (%s): children after Run returned: %v %v", i, r.name, describePids(ch), err)
		}
		// A descriptor an earlier test's goroutine closes meanwhile is not a leak, and
		// neither is the init's pidfd that a timeout's Signal, racing Wait, holds for a
		// moment after Run returned (os.Process releases it when the call ends).
		if fds, err := openFds(); err == nil && len(newFds(before.fds, fds)) > 0 {
			for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if fds, err = openFds(); err == nil && len(newFds(before.fds, fds)) == 0 {
					break
				}
			}
			if n := newFds(before.fds, fds); len(n) > 0 {
				p.add("sequential run %d (%s): %d open descriptors after Run, %d before the soak; new: %v",
					i, r.name, len(fds), len(before.fds), n)
			}
		}
		if g := ownCgroups(); len(g) > len(before.cgroups) {
			p.add("sequential run %d (%s): cgroups left after Run: %v", i, r.name, g)
		}
		if th, err := threadCount(); err == nil && th > maxThreads {
			maxThreads = th
		}
	}
	seq := time.Since(start)

	// Concurrent: soakGoroutines goroutines × m Runs of the mix.
	start = time.Now()
	for g := 0; g < soakGoroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < m && !p.full(); i++ {
				if err := runs[(g+i)%len(runs)].run(); err != nil {
					p.add("goroutine %d, run %d: %v", g, i, err)
				}
			}
		}(g)
	}
	wg.Wait()
	t.Logf("%d sequential runs in %v (threads at most %d), %d×%d concurrent in %v",
		n, seq.Round(time.Millisecond), maxThreads, soakGoroutines, m, time.Since(start).Round(time.Millisecond))

	for _, e := range p.list {
		t.Error(e)
	}
	if k := p.n.Load(); k > int32(len(p.list)) {
		t.Errorf("… and %d more failures", k-int32(len(p.list)))
	}
	leaks, after, err := settledLeaks(before)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after: %d fds, %d threads, %d goroutines, %d children, %d own cgroups, %d mounts",
		len(after.fds), after.threads, after.goroutines, len(after.children), len(after.cgroups), len(after.mounts))
	for _, l := range leaks {
		t.Errorf("after the soak (and %v to settle): %s", soakSettle, l)
	}
}

// TestSoakDetectsLeaks: the comparison the soak relies on sees a leaked descriptor, a
// child left unreaped, a goroutine left blocked, and many more threads.
func TestSoakDetectsLeaks(t *testing.T) {
	// Earlier tests' processes may still be winding down: wait for a quiet snapshot.
	before := quietSnap(t)
	f, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	block := make(chan struct{})
	defer close(block)
	go func() { <-block }()

	after, err := takeProcSnap()
	if err != nil {
		t.Fatal(err)
	}
	after.threads = before.threads + threadSlack + 1
	got := strings.Join(before.leaks(after), "\n")
	for _, w := range []string{
		"open descriptors: ", "-> /dev/null",
		fmt.Sprintf("child processes left: [%d", cmd.Process.Pid),
		"goroutines: ", "threads: ",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the leak check did not report %q; it reported:\n%s", w, got)
		}
	}
}

// quietSnap is a snapshot of the process taken once two snapshots 50 ms apart agree
// (descriptors, goroutines, threads, children, cgroups, mounts), at most 5 s: what an
// earlier test or warm-up left winding down is gone from it, so a later comparison
// sees only what came after.
func quietSnap(t *testing.T) procSnap {
	t.Helper()
	before, err := takeProcSnap()
	if err != nil {
		t.Fatal(err)
	}
	var l []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		time.Sleep(50 * time.Millisecond)
		next, err := takeProcSnap()
		if err != nil {
			t.Fatal(err)
		}
		l = append(before.leaks(next), next.leaks(before)...)
		before = next
		if len(l) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(l) != 0 {
		t.Fatalf("the process does not settle: %v", l)
	}
	return before
}
