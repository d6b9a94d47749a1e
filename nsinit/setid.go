package nsinit

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/mounts"
)

// The set-ID handler (issue 19 item 6; docs/decisions.md, "Set-ID calls answered by the
// init"): for a root caller's command, the calls that would set S_ISUID or S_ISGID
// (seccomp.NoSetIDRules) come to pid 1 as seccomp user notifications
// (seccomp_unotify(2)), one listener per command (setidplan.go), all served by one
// thread of the init made during setup (startSetIDHandler). The handler makes each
// call itself with both bits dropped, the rest of the mode applied, on the file
// the command named, and answers with the call's result:
//
//   - with no more rights than the command: a locked thread, never given back to the
//     runtime, with no capability and a file system context (root, working directory,
//     umask) of its own, unshared from pid 1's; each call is refused (EPERM) unless the
//     caller's fsuid, fsgid and supplementary groups are the thread's and its root is
//     pid 1's (commands cannot chroot), so the kernel's permission checks are the
//     command's own: EPERM on a file it does not own, EROFS on a read-only bind;
//   - the path read once from the caller's memory, then SECCOMP_IOCTL_NOTIF_ID_VALID
//     (the pid still names the caller), then resolved once, to a descriptor, the way
//     the call resolves it (relative to the caller's working directory or descriptor,
//     a final symlink followed unless AT_SYMLINK_NOFOLLOW / O_NOFOLLOW); the mode is
//     set on that descriptor (fchmodat2(2) AT_EMPTY_PATH);
//   - a file created with the caller's umask (the thread's own) and sent into the
//     caller (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND), with the
//     O_CLOEXEC the caller asked for, as the call's return value.
//
// The notification's pid is in pid 1's pid namespace, not in the commands' (whose
// procfs is the root's /proc): setidProcFd is a procfs of pid 1's own, made before the
// root is entered (openSetIDProc).

// setidProcFd is pid 1's own procfs, a detached mount (openSetIDProc), or -1.
var setidProcFd = -1

// openSetIDProc makes a procfs of the calling process's pid namespace, not attached
// anywhere (fsopen(2), fsmount(2); subset=pid, read-only, nosuid, nodev, noexec), for
// the set-ID handler. Close-on-exec: no command inherits it.
func openSetIDProc() error {
	fsfd, err := unix.Fsopen("proc", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen proc: %w", err)
	}
	defer unix.Close(fsfd)
	if err := unix.FsconfigSetString(fsfd, "subset", "pid"); err != nil {
		return fmt.Errorf("fsconfig proc subset=pid: %w", err)
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("fsconfig proc create: %w", err)
	}
	fd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC,
		unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		// as the root's own procfs: EPERM under a masked /proc (Hint)
		return &mounts.Error{Op: "mount", Source: "proc", Target: "(the set-ID handler's, detached)", Err: fmt.Errorf("fsmount: %w", err)}
	}
	setidProcFd = fd
	return nil
}

// The kernel's structures of seccomp_unotify(2) (linux/seccomp.h), x86_64 layout.
type (
	seccompNotif struct {
		id    uint64
		pid   uint32
		flags uint32
		nr    int32
		arch  uint32
		ip    uint64
		args  [6]uint64
	}
	seccompResp struct {
		id    uint64
		val   int64
		error int32
		flags uint32
	}
	seccompAddfd struct {
		id         uint64
		flags      uint32
		srcfd      uint32
		newfd      uint32
		newfdFlags uint32
	}
)

// setidEpoll is the epoll instance (epoll(7)) of the listeners the handler serves
// (startSetIDHandler), or -1: no handler.
var setidEpoll = -1

// sessionSetIDThreads is how many handler threads a session's init has: a call that
// stalls in the kernel (an open or chmod on a FUSE or network file system whose server
// does not answer: an uninterruptible wait no signal or deadline ends) holds its thread
// for as long, and the session's other commands' calls wait only once this many are
// stalled at once (docs/decisions.md, "A stalled set-ID call"). An init of one command
// has one: only that command's own calls could wait behind its stalled one.
const sessionSetIDThreads = 3

// startSetIDHandler starts the init's set-ID handler: threads of its own (threads, at
// least 1), each locked and never unlocked (the runtime ends the thread with the
// goroutine), confined (confineThread), that serve every command's listener
// (addSetIDListener) for the init's life, each one notification at a time. They are made
// during setup, before any command runs: a thread made per command or per call would be
// made when a command may have filled the sandbox's pids limit, the init's too, and the
// runtime dies when it cannot make a thread. Errors: epoll_create1, confineThread's.
func startSetIDHandler(threads int) error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1 for the set-ID handler: %w", err)
	}
	setidProcs.two = threads > 1
	ready := make(chan error, max(threads, 1))
	for range max(threads, 1) {
		go serveSetID(ep, ready)
	}
	for range max(threads, 1) {
		if e := <-ready; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		// the threads that started wait in epoll_wait on ep for good: the setup fails
		// and the init exits
		return err
	}
	setidEpoll = ep
	return nil
}

// setidProcs raises a session init's GOMAXPROCS (initProcs: 1) to 2 at the first
// notification its handler serves: the handler threads run Go code for each call, and
// with the one P a command calling chmod to a set-ID mode in a loop held it, so the
// request loop and the reaper queued behind, and every other client's commands started
// and were reported late (review22 F2: a `true` 11 -> 45-92 ms median). The init of a
// session whose commands never make such a call keeps its one P (docs/decisions.md,
// "Attack review 22: the session init's reaper").
var setidProcs struct {
	sync.Once
	two bool // set before the handler threads start, read by them
}

// raiseSetIDProcs is setidProcs' raise, once.
func raiseSetIDProcs() {
	if setidProcs.two {
		setidProcs.Do(func() { runtime.GOMAXPROCS(2) })
	}
}

// setidListeners counts, by listener, the handler threads answering one of its
// notifications, so that the listener is closed (its command gone: EPOLLHUP) only once
// none uses it: its number could otherwise be reused by the next command's listener
// while an answer is still to be sent on it.
var setidListeners = struct {
	sync.Mutex
	busy    map[int]int
	closing map[int]bool
}{} // maps made by the first listener that needs them

// addSetIDListener hands a command's listener to the handler (epoll_ctl(2) from this
// thread: the handler's epoll_wait sees it at once). Without a handler, or when the
// listener cannot be added, it is closed: that command's set-ID calls fail (ENOSYS).
// EPOLLONESHOT: one thread takes a notification of it, then arms it again (serveSetID).
func addSetIDListener(listener int) {
	if setidEpoll < 0 {
		unix.Close(listener)
		return
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(listener)}
	if err := unix.EpollCtl(setidEpoll, unix.EPOLL_CTL_ADD, listener, &ev); err != nil {
		unix.Close(listener)
	}
}

// serveSetID confines the calling thread, reports on ready, then answers the
// notifications of the listeners in the epoll instance ep, one at a time: it receives
// one (the listener is disarmed, EPOLLONESHOT: no other thread takes it meanwhile),
// arms the listener again, so that another thread may take its next one while this
// one is answered, and answers it. A listener no process holds the filter of any more
// (EPOLLHUP: its command is gone) is removed and closed once no thread answers on it.
// It never returns once confined.
func serveSetID(ep int, ready chan<- error) {
	runtime.LockOSThread()
	if err := confineThread(); err != nil {
		ready <- fmt.Errorf("set-ID handler thread: %w", err)
		return // locked: the runtime ends the thread
	}
	ready <- nil
	events := make([]unix.EpollEvent, 1) // one at a time: the others stay for idle threads
	for {
		nr, err := unix.EpollWait(ep, events, -1)
		if err != nil || nr != 1 {
			continue // EINTR (nothing else: ep and events are valid)
		}
		ev := events[0]
		listener := int(ev.Fd)
		if ev.Events&unix.EPOLLIN == 0 {
			// EPOLLHUP: every process of the command's filter is gone
			unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, listener, nil)
			setidListeners.Lock()
			if setidListeners.busy[listener] > 0 {
				setidListeners.closing[listener] = true
			} else {
				unix.Close(listener)
			}
			setidListeners.Unlock()
			continue
		}
		setidListeners.Lock()
		if setidListeners.busy == nil {
			setidListeners.busy, setidListeners.closing = map[int]int{}, map[int]bool{}
		}
		setidListeners.busy[listener]++
		setidListeners.Unlock()
		var n seccompNotif
		recvErr := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n))
		rearm := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: int32(listener)}
		unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, listener, &rearm)
		if recvErr == nil { // else EINTR, or ENOENT: the caller died before the receive
			raiseSetIDProcs()
			serveOne(listener, &n)
		}
		setidListeners.Lock()
		if setidListeners.busy[listener]--; setidListeners.busy[listener] == 0 {
			delete(setidListeners.busy, listener)
			if setidListeners.closing[listener] {
				delete(setidListeners.closing, listener)
				unix.Close(listener)
			}
		}
		setidListeners.Unlock()
	}
}

// serveOne answers the notification n, received from listener.
func serveOne(listener int, n *seccompNotif) {
	c := setidCall{listener: listener, n: n, pidDir: -1}
	val, errno, sent := c.handle()
	c.close()
	if !sent {
		resp := seccompResp{id: n.id, val: val, error: -int32(errno)}
		ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)) // ENOENT: the caller is gone
	}
}

// confineThread leaves the calling (locked) thread no capability and a file system
// context of its own (unshare(2) CLONE_FS: its umask, root and working directory are no
// longer pid 1's). Both are per-thread calls: raw, not the runtime's all-threads ones.
func confineThread() error {
	if _, _, e := syscall.RawSyscall(unix.SYS_UNSHARE, unix.CLONE_FS, 0, 0); e != 0 {
		return fmt.Errorf("unshare CLONE_FS: %w", e)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := syscall.RawSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset to empty: %w", e)
	}
	return nil
}

// ioctlPtr is ioctl(2) on a seccomp listener, again when a signal interrupted it (the
// listener's ioctls wait for its mutex interruptibly, and are not restarted: an answer
// lost so would leave the caller waiting for good).
func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	for {
		_, _, e := syscall.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
		if e == unix.EINTR && req != unix.SECCOMP_IOCTL_NOTIF_RECV {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// setidCall is one notification being answered.
type setidCall struct {
	listener int
	n        *seccompNotif
	pidDir   int   // the caller's directory in setidProcFd
	opened   []int // descriptors to close once answered
}

func (c *setidCall) close() {
	if c.pidDir >= 0 {
		unix.Close(c.pidDir)
	}
	closeFds(c.opened)
}

func (c *setidCall) keep(fd int) int {
	c.opened = append(c.opened, fd)
	return fd
}

// noSetID drops S_ISUID and S_ISGID from a mode (and what no mode holds).
func noSetID(mode uint64) uint32 { return uint32(mode) & 0o7777 &^ (unix.S_ISUID | unix.S_ISGID) }

// handle makes the call and returns its result (val or errno), or sent when the answer
// went with SECCOMP_ADDFD_FLAG_SEND (or no answer is due: the caller is gone).
func (c *setidCall) handle() (val int64, errno unix.Errno, sent bool) {
	n := c.n
	if n.arch != unix.AUDIT_ARCH_X86_64 {
		return 0, unix.ENOSYS, false // the filter kills other ABIs first
	}
	fd, err := unix.Openat(setidProcFd, strconv.FormatUint(uint64(n.pid), 10), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, unix.EPERM, false
	}
	c.pidDir = fd
	umask, err := c.checkCaller()
	if err != nil {
		return 0, unix.EPERM, false
	}
	a := n.args
	switch int(n.nr) {
	case unix.SYS_CHMOD:
		return c.chmod(unix.AT_FDCWD, a[0], a[1], 0)
	case unix.SYS_FCHMODAT:
		return c.chmod(int32(a[0]), a[1], a[2], 0)
	case unix.SYS_FCHMODAT2:
		return c.chmod(int32(a[0]), a[1], a[2], a[3])
	case unix.SYS_FCHMOD:
		return c.fchmod(int32(a[0]), a[1])
	case unix.SYS_CREAT:
		return c.open(unix.AT_FDCWD, a[0], unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a[1], umask)
	case unix.SYS_OPEN:
		return c.open(unix.AT_FDCWD, a[0], a[1], a[2], umask)
	case unix.SYS_OPENAT:
		return c.open(int32(a[0]), a[1], a[2], a[3], umask)
	case unix.SYS_MKNOD:
		return c.mknod(unix.AT_FDCWD, a[0], a[1], a[2], umask)
	case unix.SYS_MKNODAT:
		return c.mknod(int32(a[0]), a[1], a[2], a[3], umask)
	}
	return 0, unix.ENOSYS, false
}

// checkCaller refuses a caller whose credentials or root are not the handler thread's
// (it would act with other rights than the caller's) and returns its umask, from
// /proc/PID/status (proc(5)) and /proc/PID/root.
func (c *setidCall) checkCaller() (uint32, error) {
	fd, err := unix.Openat(c.pidDir, "status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 32<<10) // the Groups line may be long; a cut one fails the check
	nr, err := readFull(fd, buf)
	unix.Close(fd)
	if err != nil {
		return 0, err
	}
	var umask uint64 = 1 << 32
	var fsuid, fsgid int64 = -1, -1
	var groups []int
	for line := range strings.Lines(string(buf[:nr])) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		f := strings.Fields(v)
		switch k {
		case "Umask":
			if len(f) == 1 {
				umask, _ = strconv.ParseUint(f[0], 8, 32)
			}
		case "Uid", "Gid":
			if len(f) == 4 {
				id, _ := strconv.ParseInt(f[3], 10, 64) // the fs id
				if k == "Uid" {
					fsuid = id
				} else {
					fsgid = id
				}
			}
		case "Groups":
			for _, g := range f {
				id, err := strconv.Atoi(g)
				if err != nil {
					return 0, fmt.Errorf("groups %q", v)
				}
				groups = append(groups, id)
			}
		}
	}
	// setfsuid(2)/setfsgid(2) with an invalid id change nothing and return the current one
	myUID, _, _ := syscall.RawSyscall(unix.SYS_SETFSUID, ^uintptr(0), 0, 0)
	myGID, _, _ := syscall.RawSyscall(unix.SYS_SETFSGID, ^uintptr(0), 0, 0)
	mine, err := unix.Getgroups()
	if err != nil {
		return 0, err
	}
	slices.Sort(mine)
	slices.Sort(groups)
	if umask > 0o777 || fsuid != int64(uint32(myUID)) || fsgid != int64(uint32(myGID)) || !slices.Equal(mine, groups) {
		return 0, fmt.Errorf("caller's credentials differ from the handler's")
	}
	var theirs, ours unix.Statx_t
	if err := unix.Statx(c.pidDir, "root", 0, unix.STATX_INO|unix.STATX_MNT_ID, &theirs); err != nil {
		return 0, err
	}
	if err := unix.Statx(unix.AT_FDCWD, "/", 0, unix.STATX_INO|unix.STATX_MNT_ID, &ours); err != nil {
		return 0, err
	}
	if theirs.Mnt_id != ours.Mnt_id || theirs.Ino != ours.Ino || theirs.Dev_major != ours.Dev_major || theirs.Dev_minor != ours.Dev_minor {
		return 0, fmt.Errorf("caller's root differs from the handler's")
	}
	return uint32(umask), nil
}

// readPath reads the NUL-terminated path at addr in the caller's memory
// (/proc/PID/mem), a page at a time (the string may end just before an unmapped page),
// then checks that the notification is still valid, so that the pid named the caller
// when its memory was read. Errors: EFAULT, ENAMETOOLONG, or ok false (the call is gone).
func (c *setidCall) readPath(addr uint64) (string, unix.Errno, bool) {
	fd, err := unix.Openat(c.pidDir, "mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", unix.EPERM, true
	}
	defer unix.Close(fd)
	var path []byte
	page := make([]byte, 4096)
	for len(path) < unix.PathMax {
		chunk := page[:4096-addr%4096]
		nr, err := unix.Pread(fd, chunk, int64(addr))
		if err != nil || nr == 0 {
			return "", unix.EFAULT, true
		}
		if i := bytes.IndexByte(chunk[:nr], 0); i >= 0 {
			path = append(path, chunk[:i]...)
			if !c.valid() {
				return "", 0, false
			}
			return string(path), 0, true
		}
		path = append(path, chunk[:nr]...)
		addr += uint64(nr)
	}
	return "", unix.ENAMETOOLONG, true
}

// valid is SECCOMP_IOCTL_NOTIF_ID_VALID: the caller still waits for this answer.
func (c *setidCall) valid() bool {
	id := c.n.id
	return ioctlPtr(c.listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&id)) == nil
}

// at returns the directory a relative path of the caller starts from: its working
// directory (AT_FDCWD) or its descriptor dirfd, opened O_PATH through /proc/PID.
func (c *setidCall) at(dirfd int32) (int, unix.Errno) {
	name := "cwd"
	if dirfd != unix.AT_FDCWD {
		if dirfd < 0 {
			return -1, unix.EBADF
		}
		name = "fd/" + strconv.Itoa(int(dirfd))
	}
	fd, err := unix.Openat(c.pidDir, name, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT {
			return -1, unix.EBADF
		}
		return -1, unix.EPERM
	}
	return c.keep(fd), 0
}

// resolve reads the call's path and opens it as the call would (O_PATH, plus
// O_NOFOLLOW when asked), inside the handler's root, which checkCaller found to be the
// caller's; magic links (/proc/N/fd/...) are refused: a path through them means
// another process's view. emptyOK: an empty path names dirfd itself (AT_EMPTY_PATH).
func (c *setidCall) resolve(dirfd int32, addr uint64, nofollow, emptyOK bool) (int, unix.Errno, bool) {
	path, errno, ok := c.readPath(addr)
	if !ok || errno != 0 {
		return -1, errno, ok
	}
	var dir int = unix.AT_FDCWD
	if !strings.HasPrefix(path, "/") {
		if dir, errno = c.at(dirfd); errno != 0 {
			return -1, errno, true
		}
	}
	if path == "" {
		if !emptyOK {
			return -1, unix.ENOENT, true
		}
		return dir, 0, true
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_MAGICLINKS}
	if nofollow {
		how.Flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat2(dir, path, &how)
	if err != nil {
		return -1, err.(unix.Errno), true
	}
	return c.keep(fd), 0, true
}

// chmod is chmod(2), fchmodat(2) and fchmodat2(2) (flags AT_SYMLINK_NOFOLLOW,
// AT_EMPTY_PATH) without the set-ID bits, on the file resolved once.
func (c *setidCall) chmod(dirfd int32, addr, mode, flags uint64) (int64, unix.Errno, bool) {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL, false
	}
	fd, errno, ok := c.resolve(dirfd, addr, flags&unix.AT_SYMLINK_NOFOLLOW != 0, flags&unix.AT_EMPTY_PATH != 0)
	if !ok {
		return 0, 0, true
	}
	if errno != 0 {
		return 0, errno, false
	}
	return 0, fchmodEmpty(fd, noSetID(mode), flags&unix.AT_SYMLINK_NOFOLLOW), false
}

// fchmod is fchmod(2) without the set-ID bits, on the caller's descriptor fd.
func (c *setidCall) fchmod(fd int32, mode uint64) (int64, unix.Errno, bool) {
	if fd < 0 {
		return 0, unix.EBADF, false
	}
	f, err := unix.Openat(c.pidDir, "fd/"+strconv.Itoa(int(fd)), unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, unix.EBADF, false
	}
	c.keep(f)
	if !c.valid() {
		return 0, 0, true
	}
	return 0, fchmodEmpty(f, noSetID(mode), 0), false
}

// fchmodEmpty is fchmodat2(fd, "", mode, AT_EMPTY_PATH|flags): the mode of the file an
// O_PATH descriptor holds, which fchmod(2) refuses (EBADF). Where fchmodat2 is missing
// (ENOSYS: Linux before 6.6, or a container's seccomp profile that predates it, as
// Podman's does), it is chmod(2) through pid 1's own procfs, self/fd/N, as glibc does
// for fchmodat's AT_SYMLINK_NOFOLLOW; a symlink's mode cannot be changed (EOPNOTSUPP).
func fchmodEmpty(fd int, mode uint32, flags uint64) unix.Errno {
	empty := [1]byte{}
	_, _, e := syscall.Syscall6(unix.SYS_FCHMODAT2, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(mode),
		uintptr(unix.AT_EMPTY_PATH|flags), 0, 0)
	if e != unix.ENOSYS {
		return e
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err.(unix.Errno)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	if err := unix.Fchmodat(setidProcFd, "self/fd/"+strconv.Itoa(fd), mode, 0); err != nil {
		return err.(unix.Errno)
	}
	return 0
}

// openFlags are the flags open(2) knows; openat2(2) refuses any other bit, open(2)
// ignores them.
const openFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC | unix.O_APPEND |
	unix.O_NONBLOCK | unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT | unix.O_LARGEFILE | unix.O_DIRECTORY |
	unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC | unix.O_SYNC | unix.O_PATH | unix.O_TMPFILE

// open is open(2), openat(2) and creat(2) with O_CREAT or O_TMPFILE, the mode without
// the set-ID bits and the caller's umask: the new descriptor is sent into the caller
// (SECCOMP_ADDFD_FLAG_SEND), close-on-exec there only if it asked. It never blocks (a
// FIFO, a device) and opens only regular files (regularOpen): the handler's work ends
// with the call, and a file that means something else per opener is refused (EPERM).
func (c *setidCall) open(dirfd int32, addr, flags, mode uint64, umask uint32) (int64, unix.Errno, bool) {
	path, errno, ok := c.readPath(addr)
	if !ok {
		return 0, 0, true
	}
	if errno != 0 {
		return 0, errno, false
	}
	dir := unix.AT_FDCWD
	if !strings.HasPrefix(path, "/") {
		if dir, errno = c.at(dirfd); errno != 0 {
			return 0, errno, false
		}
	}
	syscall.RawSyscall(unix.SYS_UMASK, uintptr(umask), 0, 0) // this thread's own (confineThread)
	// O_NONBLOCK: a FIFO's open returns at once (ENXIO without a reader) instead of
	// holding the handler, and with it every later call of the command, past the
	// caller's end. O_NOCTTY: a terminal never becomes the init's controlling one.
	how := unix.OpenHow{Flags: (flags | unix.O_LARGEFILE | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY) & openFlags,
		Mode: uint64(noSetID(mode)), Resolve: unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(dir, path, &how)
	if err == unix.ENXIO && flags&unix.O_NONBLOCK == 0 {
		return 0, unix.EPERM, false // a FIFO without a reader: refused as any FIFO is
	}
	if err != nil {
		return 0, err.(unix.Errno), false
	}
	c.keep(fd)
	if errno := regularOpen(fd, flags); errno != 0 {
		return 0, errno, false
	}
	add := seccompAddfd{id: c.n.id, flags: unix.SECCOMP_ADDFD_FLAG_SEND, srcfd: uint32(fd), newfdFlags: uint32(flags & unix.O_CLOEXEC)}
	if err := ioctlPtr(c.listener, unix.SECCOMP_IOCTL_NOTIF_ADDFD, unsafe.Pointer(&add)); err != nil {
		if err == unix.ENOENT {
			return 0, 0, true // the caller is gone
		}
		return 0, err.(unix.Errno), false // EMFILE: the caller's RLIMIT_NOFILE
	}
	return 0, 0, true
}

// regularOpen refuses (EPERM) a descriptor the handler opened that is not a regular
// file on a file system other than procfs: a FIFO, a device (/dev/tty names the
// opener's terminal, the init's, not the command's), a socket, or a per-process file
// (/proc/self names the init) would be the handler's, not the command's; then clears
// the O_NONBLOCK open added when the caller did not ask for it (fcntl(2) F_SETFL: the
// open file description is the one the caller gets).
func regularOpen(fd int, flags uint64) unix.Errno {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err.(unix.Errno)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return err.(unix.Errno)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || fs.Type == unix.PROC_SUPER_MAGIC {
		return unix.EPERM
	}
	if flags&unix.O_NONBLOCK == 0 {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		if err != nil {
			return err.(unix.Errno)
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl&^unix.O_NONBLOCK); err != nil {
			return err.(unix.Errno)
		}
	}
	return 0
}

// mknod is mknod(2) and mknodat(2) without the set-ID bits, with the caller's umask. It
// resolves the path as mknodat does (a final symlink is not followed: EEXIST).
func (c *setidCall) mknod(dirfd int32, addr, mode, dev uint64, umask uint32) (int64, unix.Errno, bool) {
	path, errno, ok := c.readPath(addr)
	if !ok {
		return 0, 0, true
	}
	if errno != 0 {
		return 0, errno, false
	}
	dir := unix.AT_FDCWD
	if !strings.HasPrefix(path, "/") {
		if dir, errno = c.at(dirfd); errno != 0 {
			return 0, errno, false
		}
	}
	syscall.RawSyscall(unix.SYS_UMASK, uintptr(umask), 0, 0)
	m := uint32(mode)&unix.S_IFMT | noSetID(mode)
	if err := unix.Mknodat(dir, path, m, int(uint32(dev))); err != nil {
		return 0, err.(unix.Errno), false
	}
	return 0, 0, false
}
