package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/memtrim"
	"github.com/gosbx/gosbx/internal/wire"
	"github.com/gosbx/gosbx/nsinit/config"
)

// A session's init (argv word sessionArg) builds the sandbox as any init does, then
// serves its owner's requests on fd 3 instead of running one command (docs/decisions.md,
// "Sessions"). Each request is one frame whose first byte says what it is:
//
//	reqStart: a flags byte (startTTY; with it, the terminal's rows and columns, two bytes
//	          each, little-endian), then a specs.Process (config.EncodeProcess), with
//	          four descriptors: the command's stdin, stdout, stderr, and a socket the
//	          init reports on for that command alone (syncWriter messages: exec,
//	          exec-error or error, and later exit with its wait status; then the
//	          socket is closed). With startTTY the command's stdio is instead a new
//	          pseudo-terminal of the sandbox's own devpts, its controlling terminal; the
//	          report socket first gets one byte: 'T' with the terminal's master
//	          (SCM_RIGHTS), or 'F' when none could be made (an error message follows).
//	reqSignal: a pid (as the exec message gave it) and a signal number, and whether to
//	          send it to the command's process group (its session: setsid made it the
//	          leader): sent only while that command is unreaped, so never to a reused pid.
//	reqTerminate: SIGTERM to every process of the sandbox (kill(2) with pid -1; the
//	          commands' pid 1 blocks it).
//
// End of file on fd 3 means the owner is gone: the life pipe ends the sandbox.
const (
	reqStart     byte = 'P'
	reqSignal    byte = 'K'
	reqTerminate byte = 'T'

	startTTY byte = 1 // reqStart's flag: the command gets a terminal of the sandbox
)

// sessionInit is a session init's state once its sandbox is built.
type sessionInit struct {
	s *sandboxInit
	// mu is held across each clone and its entry in live (never across the wait for
	// its execve: a command may stop the child, review22 F1), and by the reaper across
	// a child's lookup in live and its reaping (reapOne), so no pid is freed before its
	// owner is known
	mu sync.Mutex
	// live maps each command's pid, from its clone until it is reaped, to its command
	live map[int]*command
	// trim returns the heap's free pages once idle after commands (internal/memtrim)
	trim *memtrim.Trimmer
}

// command is a command of the session, from its clone until its exit is reported.
type command struct {
	w syncWriter // the socket its exec and exit are reported on
	// execd: its exec was reported; until then the reaper keeps its exit here instead
	// of reporting it (exited, status), for the request's own goroutine to report after
	// the exec (a command can end before its exec report is sent)
	execd  bool
	exited bool
	status unix.WaitStatus
}

// serveSession builds the sandbox, reports ready, and serves requests until the owner
// closes fd 3 or dies. It never returns.
func serveSession(s *sandboxInit, w syncWriter) {
	// the init's own statm for the trim, opened while the host's /proc is in view (after
	// pivot_root /proc shows the commands' pid namespace, not the init); without it the
	// init's heap is only ever collected by the runtime's own pacing
	statm, _ := memtrim.OpenStatm()
	for _, st := range s.buildSteps() {
		if err := step(st.name, st.do(s)); err != nil {
			reportInitError(w, err)
		}
	}
	// Every thread of pid 1 keeps stageCaps, and only them, for the process stage of
	// each command to come (limitCaps limited the forking thread alone).
	if err := step("limit capabilities", limitThreadCaps()); err != nil {
		reportInitError(w, err)
	}
	// after limitThreadCaps: its capset on every thread would fail on the handler's,
	// which has none (and syscall.AllThreadsSyscall dies on results that differ)
	if err := step("set-ID thread", s.setIDHandler()); err != nil {
		reportInitError(w, err)
	}
	s.sys.awaitGoAhead()
	err := sessionSigsErr // the init's signals caught (Init)
	if err == nil {
		err = s.sys.defaultSignals()
	}
	if err := step("signal dispositions", err); err != nil {
		reportInitError(w, err)
	}
	s.sys.restoreStderr() // set up: the init's fd 2 is its owner's stderr again, not the setup pipe
	cleanupSpec, cleanupLasting = s.spec, true
	// From here commands may run: should the owner die, the reaper cleans up after them.
	forked.Store(true)
	si := &sessionInit{s: s, live: map[int]*command{}, trim: memtrim.New(memtrim.SessionIdle, memtrim.SessionMin, statm)}
	go si.reap()
	go func() {
		var buf [64]byte
		for { // the owner speaks on fd 3; signals to the init are not forwarded
			if _, err := sessionSigs.Read(buf[:]); err != nil {
				return
			}
		}
	}()
	// The requests are waited for in the netpoller (readFrameOn): a thread blocked in
	// recvmsg would hold the runtime's one P (initProcs) in a system call, and the
	// reaper, woken by a command's exit, would wait for the monitor thread to take it
	// back. In blocking reads if the netpoller cannot be had (only slower).
	spec, _ := pollableSocket(specFd)
	w.send(message{Type: msgReady})
	for {
		body, fds, err := readFrameOn(specFd, spec, 4)
		if err != nil || len(body) == 0 {
			closeFds(fds)
			// The owner is gone (it closes the socket only once this init is dead): the
			// life pipe's watcher kills every process, and the reaper does the cleanup
			// owed and exits once they are gone.
			select {}
		}
		switch body[0] {
		case reqStart:
			si.start(body[1:], fds)
			si.trim.Poke()
		case reqSignal:
			closeFds(fds)
			si.signal(body[1:])
		case reqTerminate:
			closeFds(fds)
			unix.Kill(-1, unix.SIGTERM)
		default:
			closeFds(fds)
		}
	}
}

func reportInitError(w syncWriter, err error) {
	var se *stepError
	if errors.As(err, &se) {
		w.send(errorMessage(se.step, se.err))
	} else {
		w.send(errorMessage("init", err))
	}
	os.Exit(ExitSetup)
}

// start runs one command: its process stage planned, its stdio the descriptors sent
// with it, forked into the commands' pid namespace. What happens is reported on the
// request's own socket (fds[3]).
func (si *sessionInit) start(body []byte, fds []int) {
	defer closeFds(fds)
	if len(fds) != 4 {
		return // no socket to report on: nothing to do
	}
	rep, err := unix.Dup(fds[3])
	if err != nil {
		return
	}
	w := syncWriter{os.NewFile(uintptr(rep), "report")}
	fail := func(err error) {
		var ee *execError
		var se *stepError
		switch {
		case errors.As(err, &ee):
			w.send(message{Type: msgExecError, Path: ee.path, Errno: int(ee.errno), Error: ee.Error()})
		case errors.As(err, &se):
			w.send(errorMessage(se.step, se.err))
		default:
			w.send(errorMessage("process", err))
		}
		w.f.Close()
	}
	if len(body) == 0 {
		fail(&stepError{"config", errors.New("empty request")})
		return
	}
	stdio, rest := fds[:3], body[1:] // rest: the terminal's size if any, the process
	if flags := body[0]; flags&startTTY != 0 {
		if len(body) < 5 {
			unix.Sendmsg(rep, []byte{'F'}, nil, nil, 0)
			fail(&stepError{"config", errors.New("a terminal request without its size")})
			return
		}
		size := &unix.Winsize{Row: binary.LittleEndian.Uint16(body[1:]), Col: binary.LittleEndian.Uint16(body[3:])}
		rest = rest[4:]
		master, slave, err := openTerminal(size)
		if err != nil {
			unix.Sendmsg(rep, []byte{'F'}, nil, nil, 0)
			fail(&stepError{"terminal", err})
			return
		}
		defer unix.Close(slave)
		err = unix.Sendmsg(rep, []byte{'T'}, unix.UnixRights(master), nil, 0)
		unix.Close(master)
		if err != nil {
			fail(&stepError{"terminal", fmt.Errorf("send the terminal: %w", err)})
			return
		}
		stdio = []int{slave, slave, slave}
	}
	proc, err := config.DecodeProcess(rest)
	if err == nil && (proc == nil || len(proc.Args) == 0) {
		err = errors.New("the process has no args")
	}
	if err != nil {
		fail(&stepError{"config", err})
		return
	}
	s := si.s
	dir, err := s.sys.openDir(s.root, proc.Cwd)
	if err != nil {
		fail(&stepError{"chdir", err})
		return
	}
	path, err := s.sys.lookPath(dir, proc.Args[0], proc.Env)
	if err != nil {
		dir.Close()
		fail(err)
		return
	}
	plan, err := planProcess(proc, s.spec.Linux.Filter, dir, path)
	if err != nil {
		dir.Close()
		fail(err)
		return
	}
	plan.withStdio(stdio)
	if len(stdio) > 0 && stdio[0] != fds[0] {
		plan.withControllingTerminal()
	}
	// No msgForking here (gosbx exec's init sends it; its owner times the command from
	// it): the owner of a session skips it, and its wake-up came between the init's
	// fork and its exec report on a 2-core host (docs/decisions.md, "The session's side").
	si.mu.Lock()
	pid, report, err := s.sys.startCommand(plan)
	c := &command{w: w}
	if err == nil {
		si.live[pid] = c
	}
	si.mu.Unlock()
	if err != nil {
		fail(err)
		return
	}
	// The wait for its execve is the command's own: the next request is served
	// meanwhile, and the reaper reports other commands' exits.
	go si.await(c, plan, pid, report, path, fail)
}

// await waits for command c's execve (pid, plan, its report pipe report; path
// executed) and reports it, or its failure (fail), on c's socket. A child that does not
// execute within execDeadline is killed (a command of the sandbox may have stopped it).
func (si *sessionInit) await(c *command, plan *procPlan, pid, report int, path string, fail func(error)) {
	err := si.s.sys.awaitCommand(plan, report, func() {
		si.mu.Lock()
		if si.live[pid] == c { // not reaped: the pid is still the child's
			unix.Kill(pid, unix.SIGKILL)
		}
		si.mu.Unlock()
	})
	si.mu.Lock()
	if err != nil {
		// the child exits (125) or was killed: the reaper reaps it, an unknown pid
		if si.live[pid] == c {
			delete(si.live, pid)
		}
		si.mu.Unlock()
		fail(err)
		return
	}
	if fault.Check("session exec report") != nil {
		// a test build: the init dies once the command has run, before its report (the
		// reaper waits for si.mu to report its exit, or parked it in c)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		os.Exit(ExitSetup)
	}
	c.execd = true
	// before the reaper may report its exit: a command can end at once
	c.w.send(message{Type: msgExec, Path: path, Pid: pid})
	exited := c.exited
	if exited { // it did, before this report: the reaper left its exit here
		c.w.send(message{Type: msgExit, Status: int(c.status)})
		c.w.f.Close()
	}
	si.mu.Unlock()
	if exited {
		si.trim.Poke()
	}
}

// signal sends a reqSignal's signal to a running command (or its process group).
func (si *sessionInit) signal(body []byte) {
	d := &wire.Decoder{B: body}
	pid, sig, group := int(d.Uint32()), unix.Signal(d.Uint32()), d.Bool()
	if d.End("signal") != nil || pid <= 0 {
		return
	}
	si.mu.Lock()
	defer si.mu.Unlock()
	if c, ok := si.live[pid]; !ok || !c.execd {
		return
	}
	target := pid
	if group {
		target = -pid
	}
	// As a one-shot init does (sendOn), but within the command's process group: the
	// session's other commands are other requests' (docs/decisions.md, "Stopped
	// commands and job control").
	switch sig {
	case unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		unix.Kill(-pid, unix.SIGSTOP)
	case unix.SIGCONT:
		unix.Kill(-pid, unix.SIGCONT)
	case unix.SIGWINCH, unix.SIGKILL, unix.SIGSTOP:
		unix.Kill(target, sig)
	default:
		unix.Kill(target, sig)
		unix.Kill(target, unix.SIGCONT)
	}
}

// reap reaps pid 1's children: each command's exit is reported on its socket. When the
// commands' pid 1 (the holder) is gone, so is every process of the sandbox: the init
// exits, after the cleanup when the owner is gone too.
func (si *sessionInit) reap() {
	for {
		got, err := si.reapOne(kernelChildren{})
		if err == unix.EINTR {
			continue
		}
		if err != nil || got == si.s.holder {
			if isClosed(launcherGone) {
				var ws unix.WaitStatus
				for {
					if _, err := unix.Wait4(-1, &ws, 0, nil); err == unix.ECHILD {
						break
					}
				}
				cleanUpAlone()
			}
			os.Exit(ExitKilled)
		}
	}
}

// childWaiter is how reapOne learns of and reaps exited children: kernelChildren, or a
// test's model of them.
type childWaiter interface {
	// exited blocks until a child has exited and returns its pid, leaving it a zombie
	// (waitid(2) P_ALL, WEXITED|WNOWAIT): its pid cannot be reused until it is reaped.
	exited() (int, error)
	// reap reaps pid if it has exited (wait4(2) WNOHANG): its status, and false when pid
	// is not an exited child (already reaped, or a new process that has the pid now).
	reap(pid int) (unix.WaitStatus, bool)
}

// reapOne waits for one child to exit and reaps it, reporting its status on its
// command's socket: the pid is looked up in live and reaped under si.mu, while the
// zombie still holds it, so the status goes to the command that pid belongs to and never
// to a new command forked under a pid freed meanwhile (review22 F3: reaped first, a pid
// freed before its lookup could be a new command's by then, which was sent the old
// one's status). It returns the pid, and the error of the wait.
func (si *sessionInit) reapOne(c childWaiter) (int, error) {
	got, err := c.exited()
	if err != nil || got == si.s.holder {
		return got, err
	}
	si.mu.Lock()
	ws, ok := c.reap(got)
	cmd, known := si.live[got]
	if ok && known {
		delete(si.live, got)
		if !cmd.execd {
			// ended before its exec was reported (or its start failed): the request's
			// goroutine (await) reports it, or drops it with the failure
			cmd.exited, cmd.status = true, ws
			known = false
		}
	}
	si.mu.Unlock()
	// !ok: reaped meanwhile (by a test build's fault path); an unknown pid: a child a
	// command made the init's (CLONE_PARENT), or a failed start's, reaped with no one
	// to tell
	if ok && known {
		cmd.w.send(message{Type: msgExit, Status: int(ws)})
		cmd.w.f.Close()
		si.trim.Poke()
	}
	return got, nil
}

// kernelChildren is childWaiter on the calling process's own children.
type kernelChildren struct{}

func (kernelChildren) exited() (int, error) {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		return 0, err
	}
	// si_pid: after si_signo, si_errno, si_code and the union's alignment (x86-64)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(&info), 16))), nil
}

func (kernelChildren) reap(pid int) (unix.WaitStatus, bool) {
	var ws unix.WaitStatus
	for {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		return ws, err == nil && got == pid
	}
}

// limitThreadCaps leaves every thread of pid 1 stageCaps only (capabilities are per
// thread; syscall.AllThreadsSyscall sets them on all at once).
func limitThreadCaps() error {
	if runtimeIscgo {
		// refused: ENOTSUP with runtime/cgo, a panic with a stand-in (threadCapsRefused)
		return fmt.Errorf("capset on every thread: %w (a session needs gosbx built with CGO_ENABLED=0, without a cgo stand-in such as purego's fakecgo)", unix.ENOTSUP)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	for _, c := range stageCaps {
		data[c/32].Effective |= 1 << (c % 32)
		data[c/32].Permitted |= 1 << (c % 32)
	}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		if errno == unix.ENOTSUP {
			// syscall.AllThreadsSyscall is refused in a program linked with cgo
			return fmt.Errorf("capset on every thread: %w (a session needs gosbx built with CGO_ENABLED=0)", errno)
		}
		return fmt.Errorf("capset on every thread: %w", errno)
	}
	return nil
}

// withStdio makes fds the command's stdin, stdout and stderr: a first step of the plan
// duplicates each onto 0, 1 and 2 (dup3(2) without O_CLOEXEC). The descriptors were
// received above 2 (pid 1's own 0-2 are open), so none is overwritten before it is
// duplicated.
func (p *procPlan) withStdio(fds []int) {
	p.steps = append([]string{"stdio"}, p.steps...)
	for i := range p.ops {
		p.ops[i].step++
	}
	ops := make([]procOp, 0, len(fds)+len(p.ops))
	for i, fd := range fds {
		ops = append(ops, procOp{step: 0, nr: unix.SYS_DUP3, a: [6]uintptr{uintptr(fd), uintptr(i)},
			what: fmt.Sprintf("dup3 %d to %d", fd, i)})
	}
	p.ops = append(ops, p.ops...)
}

// openTerminal makes a pseudo-terminal in the sandbox's own devpts instance (pts(4)):
// its master (to be sent to the owner) and its slave (the command's stdio), both
// close-on-exec. The slave is opened from the master (TIOCGPTPEER), not by a path.
func openTerminal(size *unix.Winsize) (master, slave int, err error) {
	master, err = unix.Open("/dev/pts/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, &os.PathError{Op: "open", Path: "/dev/pts/ptmx", Err: err}
	}
	if err = unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(master)
		return -1, -1, fmt.Errorf("unlock the terminal (TIOCSPTLCK): %w", err)
	}
	if size.Row > 0 && size.Col > 0 {
		// before the command starts: its first look at the size is the caller's
		unix.IoctlSetWinsize(master, unix.TIOCSWINSZ, size)
	}
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		unix.Close(master)
		return -1, -1, fmt.Errorf("open the terminal's slave (TIOCGPTPEER): %w", errno)
	}
	return master, int(r), nil
}

// withControllingTerminal makes the command's stdin (a terminal) its controlling
// terminal right after it became a session leader (setsid): TIOCSCTTY, tty_ioctl(4).
func (p *procPlan) withControllingTerminal() {
	for i, op := range p.ops {
		if op.nr == unix.SYS_SETSID {
			ctty := procOp{step: op.step, nr: unix.SYS_IOCTL, a: [6]uintptr{0, unix.TIOCSCTTY, 0},
				what: "ioctl TIOCSCTTY: the terminal as the controlling terminal"}
			p.ops = append(p.ops[:i+1], append([]procOp{ctty}, p.ops[i+1:]...)...)
			return
		}
	}
}

// encodeSignal is a reqSignal frame.
func encodeSignal(pid int, sig syscall.Signal, group bool) []byte {
	e := &wire.Encoder{B: []byte{reqSignal}}
	e.Uint(uint64(pid))
	e.Uint(uint64(sig))
	e.Bool(group)
	return e.B
}
