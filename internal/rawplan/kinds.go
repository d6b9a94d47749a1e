package rawplan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The kinds of op that are more than one system call, each a nosplit function of the
// running op's arguments (st.args), allocating nothing.

// absCwd is AbsCwd: the working directory must be reachable from the root (CVE-2024-21626).
//
//go:nosplit
//go:norace
func absCwd(st *State, k Caller) unix.Errno {
	a := &st.args
	a[0], a[1] = uintptr(unsafe.Pointer(&st.link[0])), uintptr(len(st.link))
	r, e := k.raw(unix.SYS_GETCWD, a)
	if e != 0 {
		return e
	}
	if r == 0 || st.link[0] != '/' {
		return unix.ENOENT
	}
	return 0
}

// lookPath is LookPath, lookPathAt's rule: the first candidate that is a regular file
// (fstatat(2)) and executable (faccessat(2) X_OK, AT_EACCESS) wins; a regular file
// found but not executable makes the answer EACCES with the first such candidate's
// number+1 in the errno's bits 16 and up (LookPathErrno); none: ENOENT. The table at
// arena offset a[1] is a count and that many C string addresses.
//
//go:nosplit
//go:norace
func lookPath(st *State, k Caller) (uintptr, unix.Errno) {
	a := &st.args
	dir := a[0]
	table := unsafe.Add(unsafe.Pointer(st), a[1])
	n := *(*uintptr)(table)
	found := uintptr(0)
	for i := uintptr(0); i < n; i++ {
		name := *(*uintptr)(unsafe.Add(table, 8*(i+1)))
		a[0], a[1], a[2], a[3] = dir, name, uintptr(unsafe.Pointer(&st.stat[0])), 0
		if _, e := k.raw(unix.SYS_NEWFSTATAT, a); e != 0 || st.stat[0].Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		a[0], a[1], a[2], a[3] = dir, name, unix.X_OK, unix.AT_EACCESS
		if _, e := k.raw(unix.SYS_FACCESSAT2, a); e == 0 {
			return name, 0
		}
		if found == 0 {
			found = i + 1
		}
	}
	if found != 0 {
		return 0, unix.EACCES | unix.Errno(found<<16)
	}
	return 0, unix.ENOENT
}

// LookPathErrno splits an errno of a LookPath op: the errno and the number of the
// candidate it names (-1 for none).
func LookPathErrno(e unix.Errno) (unix.Errno, int) {
	return e & 0xffff, int(e>>16) - 1
}

// PathTable places a LookPath table of the C strings at addrs in the arena and returns
// its arena offset.
func (p *Plan) PathTable(addrs []uintptr) uintptr {
	t, err := arenaSlice[uintptr](p.arena, len(addrs)+1)
	if err != nil {
		p.Refuse(err)
		return 0
	}
	t[0] = uintptr(len(addrs))
	copy(t[1:], addrs)
	return p.Offset(ptr(&t[0]))
}
