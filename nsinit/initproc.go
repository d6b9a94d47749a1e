package nsinit

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// initProc is the cloned init stage, started by forkExecInit (initclone.go: a clone
// sharing the launcher's memory, not a fork) rather than os/exec: os.StartProcess first
// checks, once per process, that pidfds work by cloning and reaping a throwaway child
// (~0.2 ms of every gosbx exec). The launcher is the init's parent and the only one to
// reap it, so its pid cannot be reused before wait: signal holds mu and wait reaps
// under mu, after waiting without reaping (waitid(2) WNOWAIT).
type initProc struct {
	pid int

	mu       sync.Mutex
	reaped   bool
	status   unix.WaitStatus
	waitOnce sync.Once
	after    func() // run once reaped: a raw init's arena unmapped (rawlaunch.go)
	ns       *Event // a raw init's namespaces, read at its clone (rawlaunch.go)
}

// startInit clones and executes the init (/proc/self/exe) with argv and attr, on the
// CPUs cpus when not nil (pinThread); it returns once execve(2) has succeeded in the
// child, or the error that stopped it.
func startInit(argv []string, attr *syscall.ProcAttr, cpus *unix.CPUSet) (*initProc, error) {
	restore, err := pinThread(cpus)
	if err != nil {
		return nil, err
	}
	defer restore()
	pid, err := forkExecInit(argv, attr)
	if err != nil {
		return nil, &os.PathError{Op: "fork/exec", Path: "/proc/self/exe", Err: err}
	}
	return &initProc{pid: pid}, nil
}

// signal sends sig to the init; os.ErrProcessDone once it has been reaped.
func (p *initProc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return unix.Kill(p.pid, sig)
}

func (p *initProc) kill() { p.signal(unix.SIGKILL) }

// wait waits for the init to end, reaps it and returns its wait status; later calls
// return the same status.
func (p *initProc) wait() unix.WaitStatus {
	p.waitOnce.Do(func() {
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		for {
			_, err := unix.Wait4(p.pid, &p.status, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		p.reaped = true
		if p.after != nil {
			p.after()
		}
	})
	return p.status
}

// describe says how the init ended, as os.ProcessState does ("signal: killed").
func describe(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return "signal: " + ws.Signal().String()
	}
	return fmt.Sprintf("wait status %#x", int(ws))
}

// diedEarly is the error for an init that ended before its report. The init reports
// every failure it can; one that exits on its own without a word is most often not the
// init at all: a program that links nsinit but does not call Init first in main runs
// its own main again when re-executed. stderr is the start of what it wrote on its fd 2
// during setup (setupOutput.summary: a Go runtime crash's cause), or "".
func diedEarly(ws unix.WaitStatus, stderr string) error {
	said := ""
	if stderr != "" {
		said = "; it said: " + stderr
	}
	if sig, code, ok := runtimeSignalCrash(stderr); ok && ws.Exited() {
		// the Go runtime's own report of a signal it died of: not a missing Init call
		if code <= 0 {
			return fmt.Errorf("the init stage was killed by %s during setup (%s%s): another process sent it "+
				"(si_code %d: kill(2) or the like), not a fault of the init; a process allowed to signal the "+
				"init (root, or the caller's uid) ended the launch", sig, describe(ws), said, code)
		}
		return fmt.Errorf("the init stage crashed on %s during setup (%s%s)", sig, describe(ws), said)
	}
	if ws.Exited() {
		return fmt.Errorf("the init stage exited (%s) before reporting%s: a program that links nsinit must call "+
			"nsinit.Init() first in main (or the init crashed)", describe(ws), said)
	}
	return fmt.Errorf("the init stage died during setup: %s%s", describe(ws), said)
}

// runtimeSignalCrash reads the Go runtime's report of a signal it died of from the
// summary of a crashed init's stderr (runtime/signal_unix.go, sighandler: "SIGSEGV:
// segmentation violation", then "PC=… m=… sigcode=N"): the signal's name and its
// si_code (<= 0 when another process sent it, siginfo.h). ok is false for any other
// output.
func runtimeSignalCrash(summary string) (sig string, code int, ok bool) {
	first, rest, _ := strings.Cut(summary, "; ")
	name, _, found := strings.Cut(first, ":")
	if !found || !strings.HasPrefix(name, "SIG") || strings.ContainsAny(name, " \t") {
		return "", 0, false
	}
	_, after, found := strings.Cut(rest, "sigcode=")
	if !found {
		return "", 0, false
	}
	num, _, _ := strings.Cut(after, " ")
	num, _, _ = strings.Cut(num, ";")
	// The runtime prints si_code (an int32) as a uint64: a negative code sent by another
	// process (SI_TKILL -6, SI_QUEUE -1, SI_SIGIO -5) reads 2^64-6 and so on.
	// A signed number is taken as it is.
	if u, err := strconv.ParseUint(num, 10, 64); err == nil {
		return name, int(int32(u)), true
	}
	if n, err := strconv.ParseInt(num, 10, 32); err == nil {
		return name, int(n), true
	}
	return "", 0, false
}
