package nsinit

import (
	"bytes"
	"strconv"

	"golang.org/x/sys/unix"
)

// leftNames is how many names of the processes a command left running the exit report
// carries (the note says "and more" past them).
const leftNames = 3

// leftRunning counts the processes of the commands' pid namespace other than its pid 1
// (the holder) still running once the command has exited, the init's /proc being that
// namespace's (planHolder's procfs context): what endRest is about to kill, a one-shot
// `tmux new -d` or `server &`. It returns their number and up to leftNames of their
// names (comm, chosen by the sandbox: the caller quotes them), each ended by NUL (no
// comm holds one; a comm may be empty). The common case, no process but pid 1 and the command's unreaped zombie,
// costs an open, one getdents64(2) of /proc's listing (~1.7 KB there) and a close, no
// read of any process's file; only past it is each pid's stat read, a zombie (exited, not yet
// reaped) not counted. 0 when /proc cannot be listed (a policy without it).
func leftRunning() (int, string) {
	fd, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, ""
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var pids []int
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			break
		}
		pids = appendPids(pids, buf[:n])
		if n < len(buf)-direntMax {
			break // getdents64 fills the buffer while the next record fits: none is left
		}
	}
	if len(pids) <= 1 { // the command's zombie alone
		return 0, ""
	}
	count, names := 0, []byte(nil)
	for _, pid := range pids {
		sfd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone since
		}
		n, err := unix.Read(sfd, buf[:256])
		unix.Close(sfd)
		if err != nil || n <= 0 {
			continue
		}
		name, state, ok := statNameState(buf[:n])
		if !ok || state == 'Z' || state == 'X' {
			continue
		}
		if count < leftNames {
			names = append(append(names, name...), 0)
		}
		count++
	}
	return count, string(names)
}

// direntMax is the most bytes a linux_dirent64 record takes (a 255-byte name, aligned).
const direntMax = 19 + 256 + 5

// appendPids appends the pids other than 1 named by the linux_dirent64 records of b
// (getdents64(2): d_ino 8 bytes, d_off 8, d_reclen 2, d_type 1, the NUL-ended name).
func appendPids(pids []int, b []byte) []int {
	for off := 0; off+19 < len(b); {
		reclen := int(b[off+16]) | int(b[off+17])<<8
		if reclen < 20 || off+reclen > len(b) {
			break
		}
		name := b[off+19 : off+reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if pid, err := strconv.Atoi(string(name)); err == nil && pid > 1 && name[0] != '+' && name[0] != '-' {
			pids = append(pids, pid)
		}
		off += reclen
	}
	return pids
}

// statNameState reads /proc/PID/stat's comm and state from its start b ("PID (comm) S
// ..."; proc_pid_stat(5)): comm is what lies between the first "(" and the last ")",
// which comm may hold itself.
func statNameState(b []byte) ([]byte, byte, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) || b[end+1] != ' ' {
		return nil, 0, false
	}
	return b[open+1 : end], b[end+2], true
}
