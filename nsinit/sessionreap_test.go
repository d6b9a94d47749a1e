package nsinit

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/memtrim"
)

// running marks a running child in fakeChildren.
const running = unix.WaitStatus(1<<32 - 1)

// fakeChildren models the init's children for reapOne: a pid is taken from fork until
// it is reaped (a zombie keeps it), and fork hands out the lowest free pid from next, as
// the pid namespace does once its last pid is cycled to just below (review22 F3).
type fakeChildren struct {
	mu    sync.Mutex              // the kernel's own locking: the test forks while the reaper waits
	procs map[int]unix.WaitStatus // pid -> status; running: still running
	next  int
}

func (f *fakeChildren) fork() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	pid := f.next
	for {
		if _, taken := f.procs[pid]; !taken {
			break
		}
		pid++
	}
	f.procs[pid] = running
	return pid
}

func (f *fakeChildren) exited() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for pid, ws := range f.procs {
		if ws != running {
			return pid, nil
		}
	}
	return 0, unix.ECHILD
}

func (f *fakeChildren) reap(pid int) (unix.WaitStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ws, ok := f.procs[pid]
	if !ok || ws == running {
		return 0, false
	}
	delete(f.procs, pid)
	return ws, true
}

// blockedOnMu waits until a goroutine running reapOne is blocked in sync.Mutex.Lock
// (its stack, from runtime.Stack: a real state, not a delay), or fails after 10 s.
func blockedOnMu(t *testing.T) {
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, ").reapOne(") && strings.Contains(g, "sync.(*Mutex).Lock") {
				return
			}
		}
	}
	t.Fatal("the reaper never waited for si.mu")
}

// TestSessionReapPidReused: a command X exits while a start holds si.mu (command A's,
// its child stopped before its exec: review22 F1), the reaper waits for si.mu; the next
// start forks command B at the lowest free pid (the pid namespace's last pid cycled to
// just below X's) and registers it. X's status goes to X's socket alone, B's socket gets
// nothing (B runs). Fails with X reaped before the lookup (review22 F3): B is forked at
// X's pid and sent X's status.
func TestSessionReapPidReused(t *testing.T) {
	pipe := func() (*os.File, *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	xr, xw := pipe()
	br, bw := pipe()
	si := &sessionInit{s: &sandboxInit{holder: 1}, live: map[int]*command{},
		trim: memtrim.New(time.Hour, 1<<40, nil)}
	f := &fakeChildren{procs: map[int]unix.WaitStatus{1: running}, next: 405}
	x := f.fork()
	si.live[x] = &command{w: syncWriter{xw}, execd: true}
	f.procs[x] = 0 // X exits 0
	type result struct {
		pid int
		err error
	}
	done := make(chan result)
	si.mu.Lock() // A's start
	go func() {
		got, err := si.reapOne(f)
		done <- result{got, err}
	}()
	blockedOnMu(t)
	bpid := f.fork() // B's start
	si.live[bpid] = &command{w: syncWriter{bw}, execd: true}
	si.mu.Unlock()
	r := <-done
	if r.err != nil || r.pid != x {
		t.Fatalf("reapOne = %d, %v; want %d", r.pid, r.err, x)
	}
	if bpid == x {
		t.Errorf("B was forked at X's pid %d: X was reaped before its lookup", x)
	}
	xr.SetReadDeadline(time.Now().Add(10 * time.Second)) // X's writer is open if it was not sent
	m, ok := (&syncReader{r: bufio.NewReader(xr)}).next()
	if !ok || m.Type != msgExit || m.Status != 0 {
		t.Errorf("X's report: %+v, %v; want its exit, status 0", m, ok)
	}
	si.mu.Lock()
	_, bLive := si.live[bpid]
	si.mu.Unlock()
	bw.Close() // still in live (B runs): nothing sent on it
	if m, ok := (&syncReader{r: bufio.NewReader(br)}).next(); ok {
		t.Errorf("B (pid %d, running) was sent %+v", bpid, m)
	}
	if !bLive {
		t.Errorf("B's entry is gone from live while B runs")
	}
}

// awaitGate is initSys with awaitCommand waiting for the test (other methods: none).
type awaitGate struct {
	initSys
	release chan error
}

func (g awaitGate) awaitCommand(p *procPlan, report int, kill func()) error { return <-g.release }

// TestSessionReapBeforeExecReport: a command exits before its request's goroutine has
// reported its exec (the wait for its execve no longer holds si.mu: review22 F1). The
// reaper reaps it and parks its status; the command's socket then gets its exec and its
// exit, in that order, once. Without the parking the exit went to no one (an unknown
// pid) or before the exec.
func TestSessionReapBeforeExecReport(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	gate := awaitGate{release: make(chan error)}
	si := &sessionInit{s: &sandboxInit{holder: 1, sys: gate}, live: map[int]*command{},
		trim: memtrim.New(time.Hour, 1<<40, nil)}
	f := &fakeChildren{procs: map[int]unix.WaitStatus{1: running}, next: 300}
	pid := f.fork()
	c := &command{w: syncWriter{w}}
	si.live[pid] = c
	done := make(chan struct{})
	go func() {
		si.await(c, &procPlan{}, pid, -1, "/bin/true", func(err error) { t.Errorf("failed: %v", err) })
		close(done)
	}()
	f.procs[pid] = 3 << 8 // exits 3 before its exec is reported
	if got, err := si.reapOne(f); err != nil || got != pid {
		t.Fatalf("reapOne = %d, %v; want %d", got, err, pid)
	}
	if _, still := si.live[pid]; still || !c.exited {
		t.Fatalf("after the reap: in live %v, parked %v; want gone and parked", still, c.exited)
	}
	gate.release <- nil // the execve is reported
	<-done
	sr := &syncReader{r: bufio.NewReader(r)}
	for _, want := range []message{{Type: msgExec, Pid: pid}, {Type: msgExit, Status: 3 << 8}} {
		m, ok := sr.next()
		if !ok || m.Type != want.Type || m.Pid != want.Pid || m.Status != want.Status {
			t.Fatalf("report %+v, %v; want %+v", m, ok, want)
		}
	}
	if m, ok := sr.next(); ok {
		t.Errorf("a report after the exit: %+v", m)
	}
}
