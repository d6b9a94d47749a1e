package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A session's init starts each command without waiting for it in the kernel (attack
// review 22 F1): its child is cloned without CLONE_VFORK, on a stack of its own, and its
// report pipe is read in the netpoller with a deadline. The child is uid 0 of the
// sandbox's user namespace, in the commands' pid namespace, so any command may stop it
// (SIGSTOP) before its execve; in a vfork wait, under the lock the reaper needs, that
// stopped every request, exit report and job poll of the session for as long as the
// command liked (docs/decisions.md, "A command cannot stall its session").

// execDeadline is how long a session's command has from its clone to its execve(2):
// its child runs a few dozen system calls (about 100 µs), so only a stopped child
// (or a host too loaded to run it for seconds) misses it. Then it is killed and its
// request fails (exit 125: the command never ran).
const execDeadline = 2 * time.Second

// stacks are the stacks of forkAsync children that have left them (executed or
// exited: the report pipe's end of file), for the next child: a stack per command
// was 32 KiB of garbage a session's init keeps (docs/decisions.md, "Memory: idle
// sessions").
var stacks struct {
	sync.Mutex
	free [][]byte
}

// maxFreeStacks bounds stacks.free: children are rarely alive at once (each only from
// its clone to its execve).
const maxFreeStacks = 4

// stranded keeps the plans (and so the stacks) of children whose end was never seen,
// for as long as the init lives: their stack must never be reused by the heap while a
// child may still run on it.
var stranded struct {
	sync.Mutex
	plans []*procPlan
}

// takeStack is a stack for a forkAsync child: one its last user left, or a new one.
func takeStack() []byte {
	stacks.Lock()
	defer stacks.Unlock()
	if n := len(stacks.free); n > 0 {
		s := stacks.free[n-1]
		stacks.free = stacks.free[:n-1]
		return s
	}
	return make([]byte, childStack)
}

// releaseStack hands p's stack back to takeStack, once p's child has left it (or was
// never cloned). Only a forkAsync stack is handed back.
func (p *procPlan) releaseStack() {
	if !p.pooled {
		return
	}
	s := p.stack
	p.stack, p.pooled = nil, false
	stacks.Lock()
	defer stacks.Unlock()
	if len(stacks.free) < maxFreeStacks {
		stacks.free = append(stacks.free, s)
	}
}

// errNoExec is awaitCommand's error for a child that did not execute in time.
var errNoExec = errors.New("did not reach execve(2)")

// awaitCommand reads the report of p's child (startPlan in forkAsync mode; report is the
// pipe's read end, closed here) in the netpoller, for at most limit. It returns nil once
// the child executed (end of file: the pipe is close-on-exec), or the error the child
// reported (as awaitPlan does). When limit passes first it calls kill (which must
// SIGKILL the child, if it is still the init's) and returns a *stepError "exec"
// wrapping errNoExec, or the child's report if it came. It never waits for the child
// to be reaped: the caller's reaper does that. p, and the child's stack, are kept until
// the pipe's end of file says the child left them (execve(2) replaces the memory
// before it closes close-on-exec descriptors; exit(2) drops the memory before the
// descriptors); then left is called (from another goroutine when limit passed).
func awaitCommand(p *procPlan, report int, limit time.Duration, kill, left func()) error {
	if p.dir != nil {
		p.dir.Close() // the child has its own descriptor (no CLONE_FILES)
	}
	// non-blocking, so that os.NewFile puts it in the netpoller; a pipe is pollable
	unix.SetNonblock(report, true)
	f := os.NewFile(uintptr(report), "report")
	var buf [16]byte
	n, err := 0, error(nil)
	if f.SetReadDeadline(time.Now().Add(limit)) != nil {
		// not in the netpoller (only slower, and unbounded: the stall this avoids)
		unix.SetNonblock(report, false)
	}
	for err == nil && n < len(buf) {
		var m int
		m, err = f.Read(buf[n:])
		n += m
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		kill()
		f.SetReadDeadline(time.Time{})
		go awaitEnd(f, p, left)
		if n == 8 {
			return p.reportError([8]byte(buf[:8]))
		}
		return &stepError{"exec", fmt.Errorf("the command's process %w within %v (stopped, by another process of the sandbox?), killed", errNoExec, limit)}
	}
	if err != io.EOF {
		// no end of file seen: the child may be on its stack still
		f.Close()
		strand(p)
		return &stepError{p.steps[0], fmt.Errorf("read the forked child's report: %w", err)}
	}
	f.Close()
	p.releaseStack()
	left()
	runtime.KeepAlive(p)
	switch n {
	case 0:
		return nil // end of file: executed
	case 8:
		return p.reportError([8]byte(buf[:8]))
	}
	return &stepError{p.steps[0], fmt.Errorf("the forked child ended with a report of %d bytes", n)}
}

// awaitEnd reads f (a killed child's report pipe) to its end of file, then hands the
// child's stack back and calls left.
func awaitEnd(f *os.File, p *procPlan, left func()) {
	var buf [16]byte
	for {
		if _, err := f.Read(buf[:]); err != nil {
			f.Close()
			if err == io.EOF {
				p.releaseStack()
				left()
			} else {
				strand(p)
			}
			runtime.KeepAlive(p)
			return
		}
	}
}

func strand(p *procPlan) {
	stranded.Lock()
	stranded.plans = append(stranded.plans, p)
	stranded.Unlock()
}
