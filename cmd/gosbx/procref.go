package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// procRef names a process a supervisor wrote in its lock file (itself, its sandbox's
// init): its pid and its start time, so that a pid reused since is never taken for it.
type procRef struct {
	pid   int
	start uint64 // clock ticks after boot (proc(5), /proc/PID/stat field 22); 0: not recorded
}

// startTime is process pid's start time (proc(5): /proc/PID/stat field 22), or an error
// when it is gone.
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want 20", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22 is the 20th after field 2
}

// refOf is pid's procRef (start 0 when it cannot be read).
func refOf(pid int) procRef {
	st, _ := startTime(pid)
	return procRef{pid, st}
}

// String is the lock file's form: "PID START".
func (p procRef) String() string { return strconv.Itoa(p.pid) + " " + strconv.FormatUint(p.start, 10) }

// lockProcs reads the processes a supervisor wrote in its lock file: its own, its
// init's, each "PID START" (a lock file of an earlier version holds the two pids alone).
func lockProcs(path string) []procRef {
	b, _ := os.ReadFile(path)
	var n []uint64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil
		}
		n = append(n, v)
	}
	var refs []procRef
	switch len(n) {
	case 2:
		refs = []procRef{{pid: int(n[0])}, {pid: int(n[1])}}
	case 4:
		refs = []procRef{{int(n[0]), n[1]}, {int(n[2]), n[3]}}
	}
	for _, r := range refs {
		if r.pid <= 0 || r.pid > 1<<22 {
			return nil
		}
	}
	return refs
}

// openProc returns a pidfd (pidfd_open(2)) of the process p names, or -1 when it is
// gone: the pidfd is opened first, then the process it holds is checked to be p (its
// start time, when recorded, and its command line starting with cmdline), so that every
// later wait and signal goes through the process that was checked, never a pid.
func openProc(p procRef, cmdline string) int {
	pfd, err := unix.PidfdOpen(p.pid, 0)
	if err != nil {
		return -1 // ESRCH: gone
	}
	// A process already exiting has released its memory: its cmdline reads empty.
	if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); len(cmd) > 0 && !strings.HasPrefix(string(cmd), cmdline) {
		unix.Close(pfd)
		return -1 // another process, with the pid reused
	}
	if p.start != 0 {
		// Read after the pidfd was opened: a match means the pid was still p's then.
		if st, err := startTime(p.pid); err != nil || st != p.start {
			unix.Close(pfd)
			return -1
		}
	}
	return pfd
}

// waitProc waits up to d for the process p names to end (poll(2) on its pidfd); with
// kill, one left after d is sent SIGKILL through that pidfd (pidfd_send_signal(2)) and
// waited for d more, if its start time was recorded: a command line is any process's
// to set, so a process named by pid and command line alone is never killed. It reports
// whether the process is gone.
func waitProc(p procRef, cmdline string, d time.Duration, kill bool) bool {
	pfd := openProc(p, cmdline)
	if pfd < 0 {
		return true
	}
	defer unix.Close(pfd)
	if pollGone(pfd, d) {
		return true
	}
	if !kill || p.start == 0 {
		return false
	}
	unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
	return pollGone(pfd, d)
}

// pollGone waits up to d for pidfd's process to end.
func pollGone(pfd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(pfd), Events: unix.POLLIN}}
	end := time.Now().Add(d)
	for {
		n, err := unix.Poll(fds, int(max(time.Until(end), 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return n > 0
	}
}
