package cgroup

import (
	"errors"

	"golang.org/x/sys/unix"
)

// listProcs is the first read of a group's cgroup.procs in killListed (a variable so a
// test can hand it a stale list: pids that have left the group since).
var listProcs = procs

// killListed sends SIGKILL to the processes dir's cgroup.procs lists, each through a
// pidfd (pidfd_open(2), pidfd_send_signal(2): Linux 5.3/5.1), and only to those a
// second read of cgroup.procs, made after the pidfds were opened, still lists. A pid
// read from the group can be freed and given to a host process before kill(2) would
// reach it; a pidfd names one process for its whole life, and while that process is
// not reaped its pid names no other, so a pid the group still lists after its pidfd
// was opened is that pidfd's process, and one reaped in between gets ESRCH, not a
// stranger's SIGKILL. It returns how many pids the first read listed (0: empty or
// unreadable).
func killListed(dir string) int {
	pids := listProcs(dir)
	if len(pids) == 0 {
		return 0
	}
	fds := make(map[int]int, len(pids))
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			fds[pid] = fd
		}
		// ESRCH: gone already; EINVAL: not a thread-group leader (cgroup.procs lists
		// only those); ENOSYS/EMFILE: it stays, and the caller's wait for an empty
		// group says so.
	}
	for _, pid := range procs(dir) {
		if fd, ok := fds[pid]; ok {
			for {
				if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); !errors.Is(err, unix.EINTR) {
					break
				}
			}
		}
	}
	return len(pids)
}
