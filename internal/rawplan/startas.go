package rawplan

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StartAs is Start from a thread whose effective uid is uid for the clone, so that the
// new user namespace is owned by uid (nsinit's startInitAs says why), and which writes,
// as uid, the child's id maps before it goes back: each files[i] of the child's
// /proc/PID/ (at most 3, e.g. uid_map, setgroups, gid_map, in the order written) gets
// data[i]. The kernel judges an id map's opener and writer (map_write,
// new_idmap_permitted), and a root caller without CAP_SYS_ADMIN can write them as
// nothing else.
//
// All of it runs between runtime_BeforeFork and runtime_AfterFork, as raw system calls
// from nosplit code: the goroutine cannot leave its thread, and no other goroutine runs
// there, while the thread's credentials are not the process's, so it needs no
// runtime.LockOSThread, whose first use starts the runtime's template thread
// (docs/decisions.md, "Speed, seventh attempt: the launcher's threads"). The thread's
// effective uid is set with setresuid(2) (only this thread: not Go's Setresuid), the
// effective capabilities it clears raised again from the permitted set (capset(2)), and
// after the clone and the writes the uid and then the thread's own effective set put
// back. Should that fail, the window kills the child and ends the whole process with
// exit status 125 and a line on stderr, before any other code can run on the thread.
//
// It returns the child's pid (0 if there is none), and the error that stopped it,
// naming the call (capget, setresuid, capset, clone; open or write and the path): with
// a pid and an error the child exists, and the caller kills and reaps it.
func StartAs(p *Plan, flags uintptr, report int, uid uint32, files []string, data [][]byte) (int, error) {
	if len(files) > len(asState{}.names) || len(files) != len(data) {
		return 0, fmt.Errorf("rawplan: %d files to write as uid %d with %d data, at most %d", len(files), uid, len(data), len(asState{}.names))
	}
	if err := p.Finish(); err != nil {
		return 0, err
	}
	top, err := p.Stack(StackSize)
	if err != nil {
		return 0, err
	}
	p.St.Report = int64(report)
	s := &asState{uid: uintptr(uid), n: len(files)}
	s.hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	for i, f := range files {
		if len(f) >= len(s.names[i]) || len(data[i]) == 0 {
			return 0, fmt.Errorf("rawplan: file name %q too long, or nothing to write", f)
		}
		copy(s.names[i][:], f)
		s.data[i], s.size[i] = uintptr(unsafe.Pointer(&data[i][0])), uintptr(len(data[i]))
	}
	syscall.ForkLock.Lock()
	runtime_BeforeFork()
	s.clone(flags|unix.CLONE_VM|uintptr(unix.SIGCHLD), top, p.St)
	runtime_AfterFork()
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(data) // s.data holds its addresses as numbers
	var why error
	switch s.failed {
	case asNone:
	case asCapget:
		why = fmt.Errorf("capget: %w", s.errno)
	case asSetresuid:
		why = fmt.Errorf("setresuid(-1, %d, -1): %w", uid, s.errno)
	case asCapset:
		why = fmt.Errorf("capset after setting the effective uid to %d: %w", uid, s.errno)
	case asClone:
		why = fmt.Errorf("clone: %w", s.errno)
	case asOpen, asWrite:
		op := "open"
		if s.failed == asWrite {
			op = "write"
		}
		why = &os.PathError{Op: op, Path: "/proc/" + strconv.Itoa(int(s.pid)) + "/" + files[s.failedFile], Err: s.errno}
	}
	return int(s.pid), why
}

// The step of StartAs's window that failed.
const (
	asNone = iota
	asCapget
	asSetresuid
	asCapset
	asClone
	asOpen
	asWrite
)

// asState is StartAs's window: everything its nosplit code reads and writes, allocated
// before the window.
type asState struct {
	hdr          unix.CapUserHeader
	caps, raised [2]unix.CapUserData
	uid          uintptr
	n            int
	names        [3][16]byte // NUL-terminated
	paths        [3][64]byte // "/proc/PID/name", NUL-terminated: made after the clone
	data, size   [3]uintptr  // what to write to each (addresses kept alive by StartAs)
	pid          uintptr
	failed       int
	failedFile   int
	errno        syscall.Errno
	restored     bool
}

// clone is StartAs's window (see there), between runtime_BeforeFork and
// runtime_AfterFork: raw system calls only, no allocation, no stack growth.
//
//go:nosplit
func (s *asState) clone(flags, top uintptr, st *State) {
	hdr := uintptr(unsafe.Pointer(&s.hdr))
	if _, _, e := syscall.RawSyscall(unix.SYS_CAPGET, hdr, uintptr(unsafe.Pointer(&s.caps[0])), 0); e != 0 {
		s.failed, s.errno, s.restored = asCapget, e, true
		return
	}
	s.raised = s.caps
	for i := 0; i < len(s.raised); i++ {
		s.raised[i].Effective = s.raised[i].Permitted
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), s.uid, ^uintptr(0)); e != 0 {
		s.failed, s.errno, s.restored = asSetresuid, e, true // nothing changed
		return
	}
	if _, _, e := syscall.RawSyscall(unix.SYS_CAPSET, hdr, uintptr(unsafe.Pointer(&s.raised[0])), 0); e != 0 {
		s.failed, s.errno = asCapset, e
	} else if pid, errno := cloneRaw(unix.SYS_CLONE, flags, top, st); errno != 0 {
		s.failed, s.errno = asClone, syscall.Errno(errno)
	} else {
		s.pid = pid
		for i := 0; i < s.n; i++ {
			procPath(&s.paths[i], pid, &s.names[i])
			fd, _, e := syscall.RawSyscall6(unix.SYS_OPENAT, atFDCWD, uintptr(unsafe.Pointer(&s.paths[i][0])),
				unix.O_WRONLY|unix.O_CLOEXEC, 0, 0, 0)
			if e != 0 {
				s.failed, s.errno, s.failedFile = asOpen, e, i
				break
			}
			n, _, e := syscall.RawSyscall(unix.SYS_WRITE, fd, s.data[i], s.size[i])
			syscall.RawSyscall(unix.SYS_CLOSE, fd, 0, 0)
			if e == 0 && n != s.size[i] {
				e = syscall.EIO // a map is written whole or not at all
			}
			if e != 0 {
				s.failed, s.errno, s.failedFile = asWrite, e, i
				break
			}
		}
	}
	// back to euid 0, which sets the effective set to the permitted one; then exactly
	// the effective set the thread had
	if _, _, e := syscall.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e == 0 {
		if _, _, e := syscall.RawSyscall(unix.SYS_CAPSET, hdr, uintptr(unsafe.Pointer(&s.caps[0])), 0); e == 0 {
			s.restored = true
		}
	}
	if !s.restored {
		// Fail closed here, in the window: once runtime_AfterFork has run, the goroutine
		// may be preempted and another run on this thread, whose credentials are not the
		// process's, before anything could lock it there (attack review 19, F1). The
		// child is killed and the whole launcher ends with 125 and a fixed line.
		if s.pid != 0 {
			syscall.RawSyscall(unix.SYS_KILL, s.pid, uintptr(syscall.SIGKILL), 0)
		}
		syscall.RawSyscall(unix.SYS_WRITE, 2, uintptr(unsafe.Pointer(unsafe.StringData(restoreFailed))), uintptr(len(restoreFailed)))
		syscall.RawSyscall(unix.SYS_EXIT_GROUP, 125, 0, 0)
	}
}

// restoreFailed is what StartAs's window writes to stderr before it ends the process
// when the thread's uid and capabilities cannot be put back.
const restoreFailed = "gosbx: sandbox setup failed at clone as the host id: the launcher's thread could not go back to effective uid 0 and its capabilities (setresuid/capset); the launcher ended so that nothing runs with them\n"

// procPath writes "/proc/PID/name" and a NUL into dst (name NUL-terminated).
//
//go:nosplit
func procPath(dst *[64]byte, pid uintptr, name *[16]byte) {
	const pre = "/proc/"
	n := 0
	for i := 0; i < len(pre); i++ {
		dst[n] = pre[i]
		n++
	}
	var digits [20]byte
	d := len(digits)
	for {
		d--
		digits[d] = byte('0' + pid%10)
		pid /= 10
		if pid == 0 {
			break
		}
	}
	for ; d < len(digits); d++ {
		dst[n] = digits[d]
		n++
	}
	dst[n] = '/'
	n++
	for i := 0; i < len(name) && name[i] != 0; i++ {
		dst[n] = name[i]
		n++
	}
	dst[n] = 0
}

// atFDCWD is AT_FDCWD (-100) as a system call argument.
const atFDCWD = ^uintptr(99)
