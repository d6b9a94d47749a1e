package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/lazy"
	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
)

// The raw init's set-ID handler (docs/decisions.md, "The set-ID listener in the raw
// init"): a config whose filter notifies (seccomp.NoSetIDRules) gets, besides the raw
// init, a child of it cloned before the commands' pid namespace exists (so outside it,
// in pid 1's), that confines itself at once (a session keyring of its own, an empty
// bounding set, securebits locked without root's privileges, no capability,
// no_new_privs, every descriptor closed but its own, and checks that it may execute
// the launcher's executable), then
// waits: for pid 1's procfs (made at the "set-ID procfs" step, as the Go init does),
// then for the command's listener (sent by the process stage, as setidplan.go does for
// the Go init; then it chdirs to the sandbox's root), then for a notification on it
// (PollIn). Only then does it execute this program again, after pivot_root: so only a
// program with no ELF interpreter (rawSetIDExe; docs/decisions.md "Nothing executed
// after pivot_root that the sandbox can choose"), by execveat(2) of the launcher's
// executable (opened and checked before the clone), as
// setidArg, which runs setid.go's handler (serveRawSetID): a /bin/true pays a clone
// and no Go start; the first set-ID call one Go start. A command whose filter
// no process holds any more makes it exit without executing anything. The raw init's
// reaper kills it with the holder (a call can wait in the kernel for good); pid 1's
// death kills it with its pid namespace, and its parent-death signal too.

// setidArg is argv[0] of the raw init's set-ID handler; argv[1] and argv[2] are the
// listener's and pid 1's procfs's descriptor numbers.
const setidArg = "gosbx-setid"

// rawSetIDFds are the launcher's descriptors of a raw init's set-ID handler, inherited
// by the raw init at the same numbers: the socket pair (the handler's end; the end pid
// 1 sends the procfs on and the process stage the listener), the launcher's executable
// (O_PATH) and the handler's report pipe (end of file once it is confined).
type rawSetIDFds struct {
	handler, send int
	exe           int
	repR, repW    int
	// none: a fault-injection build's "set-ID handler" (no handler: the listener is
	// dropped and the calls fail with ENOSYS, as the Go init's serveListener does)
	none bool
	sub  *rawplan.Sub // the handler's child's plan (planRawSetIDHandler)
}

// openRawSetID opens what a raw init's set-ID handler needs (rawSetIDFds) and returns
// them and every descriptor it opened. Errors: socketpair(2), open(2) of
// /proc/self/exe, pipe2(2).
func openRawSetID() (*rawSetIDFds, []int, error) {
	var opened []int
	fail := func(err error) (*rawSetIDFds, []int, error) {
		closeFds(opened)
		return nil, nil, err
	}
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(fmt.Errorf("socketpair for the set-ID handler: %w", err))
	}
	opened = append(opened, sp[0], sp[1])
	// a copy of the descriptor checked once (rawSetIDExe): the file executed is the
	// file checked
	self, err := rawSetIDExe()
	if err != nil {
		return fail(err)
	}
	exe, err := unix.FcntlInt(uintptr(self), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return fail(fmt.Errorf("fcntl F_DUPFD_CLOEXEC of /proc/self/exe for the set-ID handler: %w", err))
	}
	opened = append(opened, exe)
	var rep [2]int
	if err := unix.Pipe2(rep[:], unix.O_CLOEXEC); err != nil {
		return fail(fmt.Errorf("pipe for the set-ID handler: %w", err))
	}
	opened = append(opened, rep[0], rep[1])
	fd := &rawSetIDFds{handler: sp[0], send: sp[1], exe: exe, repR: rep[0], repW: rep[1]}
	fd.none = fault.Check("set-ID handler") != nil
	return fd, opened, nil
}

// rawSetIDExe is an O_PATH descriptor of this process's executable (/proc/self/exe,
// opened once and kept for the process's life), or why the raw init's set-ID handler
// may not execute it: the handler executes it after pivot_root, in the sandbox's
// root, so an ELF interpreter (PT_INTERP: a -buildmode=pie or cgo build) would be the
// sandbox's ld.so, with the sandbox's /etc/ld.so.preload, run outside the filter and
// the cgroup (attack review 14, F1; docs/decisions.md "Nothing executed after
// pivot_root that the sandbox can choose"). rawWanted gives such a build the Go init,
// whose handler is a thread. Errors: open(2) of /proc/self/exe or of its descriptor,
// read(2), an ELF file this check does not know (not 64-bit little-endian, no program
// header, more than 0xfff0 of them), or a PT_INTERP.
func rawSetIDExe() (int, error) {
	r := rawSetIDExeOnce.Get(func() fdOrErr {
		fd, err := openRawSetIDExe()
		return fdOrErr{fd, err}
	})
	return r.fd, r.err
}

// fdOrErr is a descriptor or why there is none.
type fdOrErr struct {
	fd  int
	err error
}

var rawSetIDExeOnce lazy.Value[fdOrErr]

func openRawSetIDExe() (int, error) {
	exe, err := unix.Open("/proc/self/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /proc/self/exe for the set-ID handler: %w", err)
	}
	// read through the same open file, not the path again (elf(5))
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(exe))
	if err == nil {
		err = noELFInterpreter(f)
		f.Close()
	}
	if err != nil {
		unix.Close(exe)
		return -1, fmt.Errorf("the set-ID handler's executable (/proc/self/exe): %w", err)
	}
	return exe, nil
}

// errELFInterp is noELFInterpreter's error for an executable with a PT_INTERP.
var errELFInterp = errors.New("it has an ELF interpreter (PT_INTERP: a PIE or cgo build), which the sandbox's root would provide")

// noELFInterpreter returns nil if f is a 64-bit little-endian ELF file with no
// PT_INTERP program header (elf(5)), errELFInterp if it has one, or the error that
// kept it from saying (read(2), a header it does not know).
func noELFInterpreter(f *os.File) error {
	var eh [64]byte // Elf64_Ehdr
	if _, err := f.ReadAt(eh[:], 0); err != nil {
		return fmt.Errorf("read the ELF header: %w", err)
	}
	le := binary.LittleEndian
	if string(eh[:4]) != "\x7fELF" || eh[4] != 2 || eh[5] != 1 { // ELFCLASS64, ELFDATA2LSB
		return errors.New("not a 64-bit little-endian ELF file")
	}
	phoff, phentsize, phnum := le.Uint64(eh[0x20:]), int(le.Uint16(eh[0x36:])), int(le.Uint16(eh[0x38:]))
	if phentsize < 56 || phnum == 0 || phnum >= 0xfff0 || phoff > 1<<30 {
		return fmt.Errorf("program headers: %d of %d bytes at %d", phnum, phentsize, phoff)
	}
	ph := make([]byte, phnum*phentsize)
	if _, err := f.ReadAt(ph, int64(phoff)); err != nil {
		return fmt.Errorf("read the program headers: %w", err)
	}
	for i := 0; i < phnum; i++ {
		if le.Uint32(ph[i*phentsize:]) == uint32(elfPTInterp) {
			return errELFInterp
		}
	}
	return nil
}

// elfPTInterp is PT_INTERP (elf(5)).
const elfPTInterp = 3

// planRawSetIDHandler adds to step s (the pid namespace's, before the unshare) the
// clone of the set-ID handler's waiting child (see the top of this file) into
// built.helper, and closes the raw init's copies of the descriptors only the child
// needs. The child's own steps are "set-ID thread" (its confinement, reported as the
// Go init's handler thread's is; planRawSetIDThread awaits it) and "set-ID handler".
func planRawSetIDHandler(p *rawplan.Plan, s uint16, fd *rawSetIDFds, c *rawCaps, helper rawplan.Reg) error {
	lit := rawplan.Lit
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}
	if fd.none {
		return nil
	}
	keep := []int{fd.handler, fd.exe, fd.repW}
	slices.Sort(keep)
	// the numbers the procfs and the listener take for the handler: above every
	// descriptor the child holds when it receives them (those it keeps, 0-2 and the
	// two received, which take the lowest free numbers)
	procNr, lisNr := keep[2]+8, keep[2]+9
	argv, err := p.StrArray([]string{setidArg, strconv.Itoa(lisNr), strconv.Itoa(procNr)})
	if err != nil {
		return err
	}
	envv, err := p.StrArray(nil)
	if err != nil {
		return err
	}

	sub := p.BeginSub(s)
	hs := p.Begin("set-ID thread")
	p.Call(hs, errno("prctl(PR_SET_PDEATHSIG)"), unix.SYS_PRCTL, lit(unix.PR_SET_PDEATHSIG), lit(uintptr(unix.SIGKILL)))
	// cloned before the init's "session keyring" step: a session keyring of its own,
	// as the init's (never the caller's, which an execve keeps)
	p.Call(hs, errno("keyctl join session keyring"), unix.SYS_KEYCTL, lit(unix.KEYCTL_JOIN_SESSION_KEYRING), lit(0)).Tolerate(unix.ENOSYS).Tolerate(unix.EPERM)
	// nothing of the init's but stderr (also at 0 and 1: the Go runtime wants them open)
	next := 3
	for _, n := range keep {
		if n > next {
			p.Call(hs, errno("close_range"), unix.SYS_CLOSE_RANGE, lit(uintptr(next)), lit(uintptr(n-1)), lit(0))
		}
		next = n + 1
	}
	p.Call(hs, errno("close_range"), unix.SYS_CLOSE_RANGE, lit(uintptr(next)), lit(^uintptr(0)), lit(0))
	p.Call(hs, errno("dup3"), unix.SYS_DUP3, lit(2), lit(0), lit(0))
	p.Call(hs, errno("dup3"), unix.SYS_DUP3, lit(2), lit(1), lit(0))
	// no capability now, none at the execve to come (the holder's sequence), and an
	// empty bounding set as the command's
	for cp := 0; cp <= lastCap(); cp++ {
		p.Call(hs, errno("drop capability "+strconv.Itoa(cp)+" from the bounding set"), unix.SYS_PRCTL, lit(unix.PR_CAPBSET_DROP), lit(uintptr(cp)))
	}
	p.Call(hs, errno("set securebits"), unix.SYS_PRCTL, lit(unix.PR_SET_SECUREBITS), lit(caps.LockedNoRoot))
	p.Call(hs, errno("capset to empty"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.empty[0])))
	p.Call(hs, errno("set no_new_privs"), unix.SYS_PRCTL, lit(unix.PR_SET_NO_NEW_PRIVS), lit(1))
	// the execveat to come, checked now with the credentials it will have (a binary
	// the host id may not execute: the Go init stops at its clone, review14 F2)
	p.Call(hs, func(e unix.Errno) error {
		return fmt.Errorf("the set-ID handler may not execute the gosbx binary (faccessat2 /proc/self/exe X_OK: %w): "+
			"the gosbx binary must be executable by other users, e.g. mode 0755", e)
	}, unix.SYS_FACCESSAT2, lit(uintptr(fd.exe)), lit(p.Str("")), lit(unix.X_OK), lit(unix.AT_EACCESS|unix.AT_EMPTY_PATH))
	p.Call(hs, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.repW))) // confined: end of file to the init

	ws := p.Begin("set-ID handler")
	proc, lis := p.Reg(), p.Reg()
	p.RecvFd(ws, errno("receive pid 1's procfs"), lit(uintptr(fd.handler)), proc)
	p.RecvFd(ws, errno("receive the seccomp listener"), lit(uintptr(fd.handler)), lis)
	p.Call(ws, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.handler)))
	p.Call(ws, errno("dup3"), unix.SYS_DUP3, proc.Arg(), lit(uintptr(procNr)), lit(0))
	p.Call(ws, errno("dup3"), unix.SYS_DUP3, lis.Arg(), lit(uintptr(lisNr)), lit(0))
	p.CloseReg(ws, proc)
	p.CloseReg(ws, lis)
	// The listener comes from the process stage, after pivot_root: "/" is the sandbox's
	// root now, and the working directory the clone gave it (the launcher's, on the
	// host's tree) is dropped before anything runs (review14 F1)
	p.Call(ws, errno("chdir /"), unix.SYS_CHDIR, lit(p.Str("/")))
	// the first notification, or the end of every process of the filter: exit 0
	m := p.Mark()
	p.Op(ws, errno("poll the seccomp listener"), rawplan.PollIn, unix.SYS_POLL, lit(uintptr(lisNr))).Tolerate(unix.EPIPE)
	p.Call(ws, errno("execveat the set-ID handler"), unix.SYS_EXECVEAT, lit(uintptr(fd.exe)), lit(p.Str("")),
		lit(argv), lit(envv), lit(unix.AT_EMPTY_PATH))
	p.Guard(m)
	p.EndSub(sub, fd.repW)
	fd.sub = sub
	p.CloneSub(s, errno("clone the set-ID handler"), sub, 0, helper)
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.repW)))
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.exe)))
	return nil
}

// planRawSetIDProc adds to step s (the "set-ID procfs" step) what openSetIDProc does
// in the Go init, a procfs of pid 1's pid namespace not attached anywhere, and its
// sendmsg(2) to the handler's child.
func planRawSetIDProc(p *rawplan.Plan, s uint16, fd *rawSetIDFds) {
	lit := rawplan.Lit
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}
	fsfd, mnt := p.Reg(), p.Reg()
	p.Call(s, errno("fsopen proc"), unix.SYS_FSOPEN, lit(p.Str("proc")), lit(unix.FSOPEN_CLOEXEC)).Into(fsfd)
	p.Call(s, errno("fsconfig proc subset=pid"), unix.SYS_FSCONFIG, fsfd.Arg(), lit(unix.FSCONFIG_SET_STRING),
		lit(p.Str("subset")), lit(p.Str("pid")), lit(0))
	p.Call(s, errno("fsconfig proc create"), unix.SYS_FSCONFIG, fsfd.Arg(), lit(unix.FSCONFIG_CMD_CREATE), lit(0), lit(0), lit(0))
	p.Call(s, func(e unix.Errno) error {
		return &mounts.Error{Op: "mount", Source: "proc", Target: "(the set-ID handler's, detached)", Err: fmt.Errorf("fsmount: %w", e)}
	}, unix.SYS_FSMOUNT, fsfd.Arg(), lit(unix.FSMOUNT_CLOEXEC),
		lit(unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)).Into(mnt)
	p.CloseReg(s, fsfd)
	p.Op(s, errno("send the set-ID procfs to its handler"), rawplan.SendFd, unix.SYS_SENDMSG, lit(uintptr(fd.send)), mnt.Arg())
	p.CloseReg(s, mnt)
}

// planRawSetIDThread adds to step s (the "set-ID thread" step) the wait for the
// handler's child to be confined: its report pipe's end of file, or its failure.
func planRawSetIDThread(p *rawplan.Plan, s uint16, fd *rawSetIDFds) {
	if fd.sub == nil {
		return
	}
	p.AwaitSub(s, func(e unix.Errno) error { return fmt.Errorf("the set-ID handler's report: %w", e) }, fd.sub, rawplan.Lit(uintptr(fd.repR)))
}

// planRawListener adds to the process stage's step s what planListener adds to the Go
// init's: the filter at fprog loaded with a listener, sent to the handler, and closed.
func planRawListener(p *rawplan.Plan, s uint16, fd *rawSetIDFds, fprog uintptr) {
	lit := rawplan.Lit
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}
	lis := p.Reg()
	p.Call(s, errno("seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER|WAIT_KILLABLE_RECV)"), unix.SYS_SECCOMP,
		lit(unix.SECCOMP_SET_MODE_FILTER), lit(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV),
		lit(fprog)).Into(lis)
	p.Op(s, errno("send the seccomp listener to pid 1"), rawplan.SendFd, unix.SYS_SENDMSG, lit(uintptr(fd.send)), lis.Arg())
	p.Call(s, errno("close the seccomp listener"), unix.SYS_CLOSE, lis.Arg())
	p.Release(lis)
}

// planRawSetIDDone adds to step s, after the process stage ran, the close of the
// socket pair's ends the raw init kept until then (so that the stage's sendmsg never
// met a closed peer: a handler that died drops the listener, and the calls fail with
// ENOSYS, as with the Go init when nobody serves).
func planRawSetIDDone(p *rawplan.Plan, s uint16, fd *rawSetIDFds) {
	for _, n := range []int{fd.send, fd.handler, fd.repR} {
		p.Call(s, func(e unix.Errno) error { return fmt.Errorf("close: %w", e) }, unix.SYS_CLOSE, rawplan.Lit(uintptr(n)))
	}
}

// serveRawSetID is the raw init's set-ID handler once executed (argv[0] setidArg):
// setid.go's handler, one thread as the Go init of one command has, on the listener
// and procfs at the descriptors argv names, until no process holds the listener's
// filter. It never returns; it exits ExitSetup when it cannot serve (the calls then
// fail with ENOSYS: the listener closes with it).
func serveRawSetID() {
	// not dumpable before anything else: its memory is its own since the execve
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "gosbx: set-ID handler: %v\n", err)
		os.Exit(ExitSetup)
	}
	if len(os.Args) != 3 {
		fail(fmt.Errorf("want 2 arguments, got %q", os.Args[1:]))
	}
	listener, err1 := strconv.Atoi(os.Args[1])
	proc, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || listener < 3 || proc < 3 {
		fail(fmt.Errorf("descriptors %q", os.Args[1:]))
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(proc, &fs); err != nil || fs.Type != unix.PROC_SUPER_MAGIC {
		fail(fmt.Errorf("descriptor %d is no procfs (%v)", proc, err))
	}
	for _, fd := range []int{listener, proc} {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			fail(fmt.Errorf("fcntl %d: %w", fd, err))
		}
	}
	// the raw steps' chdir already did (planRawSetIDHandler); again, as the Go init's
	// handler would need it
	if err := unix.Chdir("/"); err != nil {
		fail(fmt.Errorf("chdir /: %w", err))
	}
	setidProcFd = proc
	// a copy of the listener to see the end on (the handler closes its own at EPOLLHUP)
	end, err := unix.FcntlInt(uintptr(listener), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		fail(fmt.Errorf("fcntl F_DUPFD_CLOEXEC: %w", err))
	}
	if err := startSetIDHandler(1); err != nil {
		fail(err)
	}
	addSetIDListener(listener)
	pfd := []unix.PollFd{{Fd: int32(end)}}
	for {
		n, err := unix.Poll(pfd, -1)
		if err == nil && n == 1 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			os.Exit(0)
		}
	}
}
