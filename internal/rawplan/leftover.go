package rawplan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// RecLeftName carries a part of the name (comm) of a process the command left running
// (nsinit's leftRunning): A is part<<8 | the count of B's bytes that are the name's
// (up to 8, little-endian order); part 0 starts a name, part 1 continues it (a comm has
// at most 15 bytes). They come before RecExit, whose A is how many such processes ran.
const RecLeftName = 4

// leftNames is how many names are reported (nsinit's leftNames).
const leftNames = 3

// leftRunning is nsinit's leftRunning in nosplit code, run by Reap once the command
// has exited and before the holder is killed: it counts the processes of the commands'
// pid namespace (the raw init's /proc) other than pid 1 that have not exited, reports
// up to leftNames of their names as RecLeftName records on syncFd, and returns their
// number. /proc's listing is read into st.link, each pid's stat (only when the listing
// holds a pid besides 1 and the command's zombie) into st.sigbuf, both free once the
// command has exited.
//
//go:nosplit
//go:norace
func leftRunning(st *State, k Caller, syncFd uintptr) uint32 {
	a := &st.args
	b := &st.sigbuf
	b[0], b[1], b[2], b[3], b[4], b[5] = '/', 'p', 'r', 'o', 'c', 0
	a[0], a[1], a[2], a[3] = AtFdcwd, uintptr(unsafe.Pointer(&b[0])), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0
	fd, e := k.raw(unix.SYS_OPENAT, a)
	if e != 0 {
		return 0
	}
	others, live := 0, 0 // pids but 1 (the command's zombie, and what it left); those running
	for pass := 0; pass < 2; pass++ {
		if pass == 1 {
			if others <= 1 {
				break
			}
			a[0], a[1], a[2] = fd, 0, 0 // SEEK_SET: the listing again, now read
			if _, e := k.raw(unix.SYS_LSEEK, a); e != 0 {
				break
			}
		}
		for {
			a[0], a[1], a[2] = fd, uintptr(unsafe.Pointer(&st.link[0])), uintptr(len(st.link))
			n, e := k.raw(unix.SYS_GETDENTS64, a)
			if e == unix.EINTR {
				continue
			}
			if e != 0 || n == 0 || n > uintptr(len(st.link)) {
				break
			}
			for off := uintptr(0); off+19 < n; {
				reclen := uintptr(*at(&st.link[0], off+16)) | uintptr(*at(&st.link[0], off+17))<<8
				if reclen < 20 || off+reclen > n {
					break
				}
				if pidName(st, off+19, off+reclen) {
					if pass == 0 {
						others++
					} else if running(st, k, syncFd, off+19, live) {
						live++
					}
				}
				off += reclen
			}
			if n < uintptr(len(st.link))-(19+256+5) {
				break // getdents64 fills the buffer while the next record fits: none is left
			}
		}
	}
	a[0] = fd
	k.raw(unix.SYS_CLOSE, a)
	return uint32(live)
}

// pidName reports whether st.link[from:to] holds a NUL-ended name of digits other than
// "1".
//
//go:nosplit
//go:norace
func pidName(st *State, from, to uintptr) bool {
	i := from
	for ; i < to && i < uintptr(len(st.link)); i++ {
		c := *at(&st.link[0], i)
		if c == 0 {
			break
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return i > from && !(i == from+1 && *at(&st.link[0], from) == '1')
}

// running reads /proc/PID/stat of the pid named at st.link[name:] and reports whether
// that process has not exited (state neither Z nor X); the first leftNames running ones
// (count: those found so far) have their comm sent as RecLeftName records.
//
//go:nosplit
//go:norace
func running(st *State, k Caller, syncFd uintptr, name uintptr, count int) bool {
	b := &st.sigbuf
	const path = 512 // the path in b[512:], the stat in b[:256]
	p := &b[path]
	*at(p, 0), *at(p, 1), *at(p, 2), *at(p, 3), *at(p, 4), *at(p, 5) = '/', 'p', 'r', 'o', 'c', '/'
	j := uintptr(6)
	for i := name; i < uintptr(len(st.link)) && *at(&st.link[0], i) != 0 && j < 32; i++ {
		*at(p, j) = *at(&st.link[0], i)
		j++
	}
	*at(p, j), *at(p, j+1), *at(p, j+2), *at(p, j+3), *at(p, j+4), *at(p, j+5) = '/', 's', 't', 'a', 't', 0
	a := &st.args
	a[0], a[1], a[2], a[3] = AtFdcwd, uintptr(unsafe.Pointer(&b[path])), unix.O_RDONLY|unix.O_CLOEXEC, 0
	fd, e := k.raw(unix.SYS_OPENAT, a)
	if e != 0 {
		return false // gone since
	}
	a[0], a[1], a[2] = fd, uintptr(unsafe.Pointer(&b[0])), 256
	n, e := k.raw(unix.SYS_READ, a)
	a[0] = fd
	k.raw(unix.SYS_CLOSE, a)
	if e != 0 || n == 0 || n > 256 {
		return false
	}
	// "PID (comm) S": comm between the first '(' and the last ')'
	s := &b[0]
	open, end := uintptr(0), uintptr(0)
	for open < n && *at(s, open) != '(' {
		open++
	}
	for i := n - 1; i > open; i-- {
		if *at(s, i) == ')' {
			end = i
			break
		}
	}
	if open >= n || end == 0 || end+2 >= n {
		return false
	}
	if c := *at(s, end+2); c == 'Z' || c == 'X' {
		return false
	}
	if count < leftNames {
		for part := uintptr(0); part < 2; part++ {
			from := open + 1 + 8*part
			if from >= end && part > 0 {
				break
			}
			var v uint64
			m := uintptr(0)
			for ; m < 8 && from+m < end; m++ {
				v |= uint64(*at(s, from+m)) << (8 * m)
			}
			st.rec = Record{Kind: RecLeftName, A: uint32(part<<8 | m), B: v}
			a[0], a[1], a[2] = syncFd, uintptr(unsafe.Pointer(&st.rec)), recSize
			k.raw(unix.SYS_WRITE, a)
		}
	}
	return true
}

// at is base[i] without a bounds check (none may be made in the raw init's nosplit
// code: its panic path needs more stack than a nosplit chain has); the callers keep i
// within the array.
//
//go:nosplit
//go:norace
func at(base *byte, i uintptr) *byte { return (*byte)(unsafe.Add(unsafe.Pointer(base), i)) }
