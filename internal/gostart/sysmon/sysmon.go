// Package sysmon gives the Go runtime's sysmon thread of a gosbx process run by root (a
// launcher, a client) a 1 ms timer slack (proc(5), /proc/TID/timerslack_ns) while the
// packages are initialized, right after package syscall: from there on, not only from
// gosbx exec's execute, sysmon's 20 µs sleeps while a P runs wake it about every
// millisecond, not every ~70 µs (docs/decisions.md "Speed, ninth attempt: the
// launcher's scheduler", "Speed, tenth attempt: the launcher's page faults").
//
// Only the gosbx command imports it. Its init is its whole work, which STYLE.md's "no
// package init work" otherwise forbids: what it saves is in the package inits and the
// command line's parse that come after it (it imports only syscall and
// internal/gostart, so it is initialized among the first packages).
package sysmon

import (
	"syscall"
	"unsafe"

	_ "github.com/gosbx/gosbx/internal/gostart" // initialized first: its GOMAXPROCS before sysmon's slack
)

// Slack is the timer slack given to sysmon, in ns, as timerslack_ns takes it.
const Slack = "1000000"

var slowed = slowEarly()

// slowEarly gives the thread whose id follows the pid the slack when it is one of this
// process's: sysmon, the first thread runtime.main starts, before any package init,
// takes the next free id, which is the pid's next unless another task took it in
// between (then Slowed is false and the caller may look for sysmon among the
// threads). Only for root (another thread's slack needs CAP_SYS_NICE). A session's
// supervisor and its Go init get it too: each request woke their sysmon every 20 µs
// while a goroutine of theirs waited in a system call, some 0.2 ms of their CPU a
// request (docs/decisions.md, "Speed, fourteenth attempt"); idle, sysmon sleeps up
// to 10 ms, which the slack leaves as it is.
func slowEarly() bool {
	if syscall.Geteuid() != 0 {
		return false
	}
	pid := syscall.Getpid()
	step, _ := threadSlack(pid+1, pid, Slack)
	return step == stepDone
}

// Slowed reports whether the package's init gave sysmon the slack.
func Slowed() bool { return slowed }

// oPath is O_PATH (open(2)) on amd64, which package syscall does not name.
const oPath = 0x200000

// OwnThreadSlack writes slack (ns, decimal) to the timerslack_ns of thread tid of this
// process (proc(5)). The kernel has that file in /proc/TID only, not in
// /proc/self/task/TID, and tid may have exited since it was found and its id gone to
// another process's thread: /proc/TID is opened once (O_PATH: the descriptor stays
// with that thread, whatever takes the id later), and written only when its task/
// directory holds this process's pid (proc(5): a thread's task/ lists its own thread
// group). Errors (*SlackError, wrapping the errno): the open's (ENOENT: gone), ESRCH
// for another process's thread, the write's (EPERM without CAP_SYS_NICE).
func OwnThreadSlack(tid int, slack string) error {
	pid := syscall.Getpid()
	switch step, errno := threadSlack(tid, pid, slack); step {
	case stepDone:
		return nil
	case stepOpen:
		return &SlackError{"open /proc/" + itoa(tid), errno}
	case stepOwn:
		return &SlackError{"thread " + itoa(tid) + " is not one of process " + itoa(pid) + "'s", syscall.ESRCH}
	case stepOpenSlack:
		return &SlackError{"open /proc/" + itoa(tid) + "/timerslack_ns", errno}
	default:
		return &SlackError{"write /proc/" + itoa(tid) + "/timerslack_ns", errno}
	}
}

// threadSlack's steps: the one that failed, or stepDone.
const (
	stepDone = iota
	stepOpen
	stepOwn
	stepOpenSlack
	stepWrite
)

// threadSlack is OwnThreadSlack's work without an allocation (the package's init
// runs it, and gosbx's inits allocate nothing: TestStartInits): the paths are built
// on the stack, the calls made with package syscall's Syscall. It returns the step
// that failed and its errno, or stepDone.
func threadSlack(tid, pid int, slack string) (step int, errno syscall.Errno) {
	var path [32]byte
	n := copy(path[:], "/proc/")
	n += putDecimal(path[n:], tid)
	path[n] = 0
	r, _, e := syscall.Syscall6(syscall.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&path[0])), oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return stepOpen, e
	}
	dir := r
	defer syscall.Syscall(syscall.SYS_CLOSE, dir, 0, 0)
	n = copy(path[:], "task/")
	n += putDecimal(path[n:], pid)
	path[n] = 0
	if _, _, e := syscall.Syscall6(syscall.SYS_FACCESSAT, dir, uintptr(unsafe.Pointer(&path[0])), 0, 0, 0, 0); e != 0 { // F_OK
		return stepOwn, e
	}
	n = copy(path[:], "timerslack_ns")
	path[n] = 0
	r, _, e = syscall.Syscall6(syscall.SYS_OPENAT, dir, uintptr(unsafe.Pointer(&path[0])), syscall.O_WRONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return stepOpenSlack, e
	}
	defer syscall.Syscall(syscall.SYS_CLOSE, r, 0, 0)
	if _, _, e := syscall.Syscall(syscall.SYS_WRITE, r, uintptr(unsafe.Pointer(unsafe.StringData(slack))), uintptr(len(slack))); e != 0 {
		return stepWrite, e
	}
	return stepDone, 0
}

// atFDCWD is AT_FDCWD (openat(2)) as a system call's argument.
const atFDCWD = ^uintptr(99) // -100

// SlackError is OwnThreadSlack's failure: the step and its errno. It is no fmt error:
// the package stays among the first initialized.
type SlackError struct {
	Op  string
	Err error
}

func (e *SlackError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *SlackError) Unwrap() error { return e.Err }

// putDecimal writes n ≥ 0 (a thread id) in decimal at the start of b and returns its
// length.
func putDecimal(b []byte, n int) int {
	var d [20]byte
	i := len(d)
	for {
		i--
		d[i] = byte('0' + n%10)
		if n /= 10; n == 0 {
			break
		}
	}
	return copy(b, d[i:])
}

// itoa is n in decimal, n ≥ 0, for an error's text.
func itoa(n int) string {
	var b [20]byte
	return string(b[:putDecimal(b[:], n)])
}
