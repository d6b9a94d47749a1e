package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"unsafe"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/shown"
	"github.com/gosbx/gosbx/internal/sigpipe"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Init runs the init stage when the binary was re-executed as one (argv[0] == InitArg),
// or a raw init's set-ID handler (argv[0] "gosbx-setid", rawsetid.go), and never
// returns in those cases; otherwise it returns at once. A program that links
// nsinit must call it first in main, before any other work:
//
//	func main() {
//		nsinit.Init()
//		…
//	}
func Init() {
	if len(os.Args) > 0 && os.Args[0] == holdArg {
		// only holds a user namespace (identity.go) until its stdin closes
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if len(os.Args) > 0 && os.Args[0] == setidArg {
		serveRawSetID() // a raw init's set-ID handler (rawsetid.go); never returns
	}
	if len(os.Args) == 0 || os.Args[0] != InitArg {
		return
	}
	// Made here, not at package init: every start of a program that links nsinit
	// (each gosbx command) paid for them.
	launcherGone = make(chan struct{})
	notified = make(chan struct{})
	session := false
	for _, a := range os.Args[1:] {
		session = session || a == sessionArg
	}
	if session {
		// Done beside the setup, waited for before the first command is forked
		// (awaitGoAhead). A session's init drops the signals sent to it (its owner
		// speaks on fd 3): caught by internal/sigpipe and drained (serveSession), not
		// with os/signal, whose thread parked in signal_recv an idle session would keep
		// (docs/decisions.md, "Memory: idle sessions").
		go func() {
			sessionSigs, sessionSigsErr = sigpipe.Catch(initSignals[:]...)
			signal.Ignore(fatalFromUser...)
			close(notified)
		}()
	}
	// The steps run on this thread: the pid namespace of the commands is this thread's
	// (unsharePID), and the commands are forked from it. Locked after the goroutine
	// above starts: a locked thread has the runtime's template thread create new
	// threads for it, one thread more.
	runtime.LockOSThread()
	w := syncWriter{os.NewFile(syncFd, "sync")}
	k := &kernelInit{w: w}
	s := &sandboxInit{sys: k, session: session}
	for _, a := range os.Args[1:] {
		s.pooled = s.pooled || a == poolArg
		s.trees = s.trees || a == treesArg
	}
	// A one-shot or pooled init reads its signals (catchSignals) and the life pipe's
	// go-ahead and acknowledgement itself, on this thread; a session's init watches the
	// pipe from a goroutine from the go-ahead on.
	k.lifeSync = !s.session
	sigfd := -1
	if !s.session {
		var err error
		if sigfd, err = catchSignals(); err == nil {
			err = filterFaultSignals()
		}
		if err == nil {
			err = installUnblock()
			fixThreads()
		}
		if err != nil {
			w.send(errorMessage("signals", err))
			os.Exit(ExitSetup)
		}
		close(notified)
	}
	if s.session {
		serveSession(s, w)
	}
	path, pid, err := s.run()
	if err != nil {
		var se *stepError
		if errors.As(err, &se) {
			w.send(errorMessage(se.step, se.err))
			os.Exit(ExitSetup)
		}
		var ee *execError
		if errors.As(err, &ee) {
			w.send(message{Type: msgExecError, Path: ee.path, Errno: int(ee.errno), Error: ee.Error()})
			os.Exit(ee.code())
		}
		w.send(errorMessage("init", err))
		os.Exit(ExitSetup)
	}
	if fault.Check("exec report") != nil {
		// a test build: the init dies once the command has run, before any report
		s.sys.dropAllCaps()
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		os.Exit(ExitSetup)
	}
	s.reportExec(path, pid)
	reap(w, pid, s.holder, sigfd, k.noAck)
}

// launcherGone is closed when the launcher died after the command may have started.
// forked is set right before the command is forked.
var (
	launcherGone chan struct{} // made by Init
	forked       atomic.Bool
	// cleanupSpec is the config whose after-run cleanup (runCleanup) the reaper
	// does itself when the launcher is gone.
	cleanupSpec *config.Config
	// cleanupLasting: cleanupSpec is a session's, whose "as at launch" baselines the
	// supervisor moved by the host's work since (cleanup.Retake) and this init never
	// saw: the reaper runs only what stays true whoever changed the state since
	// (cleanup.RunLasting; attack review 36 F6: the start's baselines undid the
	// user's merge in progress and moved tag)
	cleanupLasting bool
)

// readLife reads the life pipe's next byte (protocol.go: the launcher's go-ahead, then
// its acknowledgement) on the calling thread, a blocking read(2); ok is false at the
// pipe's end (or on an error): the launcher is gone. The calling thread is the init's
// main one, which has nothing else to do meanwhile: no goroutine reads the byte and
// hands it over (with a locked main thread, a hand-off between threads each way).
func readLife() (b byte, ok bool) {
	var buf [1]byte
	for {
		n, err := unix.Read(lifeFd, buf[:])
		if err == unix.EAGAIN {
			// the pipe's file description is non-blocking after all: wait for a byte
			unix.Poll([]unix.PollFd{{Fd: lifeFd, Events: unix.POLLIN}}, -1)
			continue
		}
		if err == unix.EINTR {
			continue
		}
		return buf[0], n == 1 && err == nil
	}
}

// lifeEnded acts on the launcher's end: before the command may have run, the init
// exits (and so the whole pid namespace: nothing to clean up); after, it kills every
// process of the sandbox, and the reaper does the launcher's cleanup after the run
// (reap, cleanUpAlone) once they are gone.
func lifeEnded() {
	if !forked.Load() {
		unix.Exit(ExitKilled)
	}
	close(launcherGone)
	unix.Kill(-1, unix.SIGKILL)
}

// watchLauncher exits a session's init (and so the whole pid namespace) when the
// launching process is gone: its end of the life pipe closes (lifeEnded). It starts
// once the go-ahead is read (readLife). The pipe is read through the runtime's poller,
// so no thread waits in read(2) for the life of the sandbox. (A one-shot or pooled
// init's reaper reads the pipe itself: reap.)
func watchLauncher() {
	unix.SetNonblock(lifeFd, true) // pollable; should it fail, a read blocks a thread instead
	f := os.NewFile(lifeFd, "life")
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		if n <= 0 || err != nil {
			lifeEnded()
			return
		}
	}
}

type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + shown.Text(e.err.Error()) }
func (e *stepError) Unwrap() error { return e.err }

func step(name string, err error) error {
	if err == nil {
		err = fault.Check(name) // only in fault-injection test builds
	}
	if err == nil {
		return nil
	}
	var se *stepError
	if errors.As(err, &se) {
		return err // a step within the step (the commands' pid 1) names itself
	}
	return &stepError{name, err}
}

// signals forwarded by the reaper to the command (sendOn says how).
var forwarded = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU}

// The Go runtime exits or crashes on these when another process sends them (kill(2))
// and nothing handles them; the others it ignores (runtime/sigtab_linux_generic.go).
// A session's init catches SIGABRT (sessionSigs) and ignores the rest of them during
// its setup; a one-shot or pooled init catches SIGABRT (catchSignals) and drops the rest
// when another process sent them (filterFaultSignals, initfault.go) until
// defaultFaultSignals. signal.Ignore
// sets SIG_IGN, which the command would inherit, only for signals the runtime can
// notify, which none of these is (a real fault still crashes). That covers kill(2) and
// tgkill(2) (SI_USER, SI_TKILL) only: the runtime takes any other si_code for a fault of
// its own and crashes, and the command can choose one (rt_sigqueueinfo(2) with SI_QUEUE,
// pidfd_send_signal(2) with a siginfo, F_SETOWN to pid 1 with F_SETSIG: POLL_IN). So
// before the command is forked these go back to SIG_DFL (defaultFaultSignals): the
// kernel drops a signal sent to a pid namespace's init from inside when its handler is
// SIG_DFL, whatever the si_code (signal(7), pid_namespaces(7)).
var fatalFromUser = []os.Signal{unix.SIGILL, unix.SIGTRAP, unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS}

// defaultFaultSignals sets fatalFromUser's dispositions to SIG_DFL, behind the Go
// runtime's back (rt_sigaction(2)); the runtime installs handlers only at start and for
// os/signal calls, and the init makes none on these afterwards. A real fault in the
// init then kills it (and so the sandbox) instead of printing a traceback: fail closed.
func defaultFaultSignals() error {
	for _, s := range fatalFromUser {
		var act [4]uintptr // struct kernel_sigaction: handler SIG_DFL (0), flags, restorer, mask
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s.(unix.Signal)),
			uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("rt_sigaction %v SIG_DFL: %w", s, errno)
		}
	}
	return nil
}

// sessionSigs is the pipe a session init's signals are written to (sigpipe.Catch, or
// its error in sessionSigsErr) once notified is closed (before the first command
// starts); serveSession drains it. notified is closed at once for other inits, whose
// signals wait on a signalfd (catchSignals).
var (
	sessionSigs    *os.File
	sessionSigsErr error
	notified       chan struct{} // made by Init
)

// readProcess reads a pooled init's process frame and makes the three descriptors sent
// with it the init's (and so the command's) stdin, stdout and stderr.
func readProcess() (*specs.Process, error) {
	body, fds, err := readFrame(specFd, 3)
	if err != nil {
		return nil, err
	}
	defer closeFds(fds)
	if len(fds) != 3 {
		return nil, fmt.Errorf("the process came with %d descriptors, want 3 (stdin, stdout, stderr)", len(fds))
	}
	p, err := config.DecodeProcess(body)
	if err != nil {
		return nil, err
	}
	if p == nil || len(p.Args) == 0 {
		return nil, errors.New("the process has no args")
	}
	for i, fd := range fds {
		// received close-on-exec and above 2 (0-2 were open): dup3 never gets old == new
		if err := unix.Dup3(fd, i, 0); err != nil {
			return nil, fmt.Errorf("dup3 %d to %d: %w", fd, i, err)
		}
	}
	return p, nil
}

// readSpec reads the config frame from fd 3 (the seccomp program in it compiled by
// the launcher's policy step, and only loaded here), then the descriptors of its bind
// sources (one per mounts.BindSources entry, in order). The socket stays open for a
// pooled init's process.
func readSpec(pooled bool) (*config.Config, []int, error) {
	b, _, err := readFrame(specFd, 0)
	if err != nil {
		return nil, nil, err
	}
	spec, err := config.Decode(b)
	if err != nil {
		return nil, nil, err
	}
	if !pooled && (spec.Process == nil || len(spec.Process.Args) == 0) {
		return nil, nil, errors.New("the config has no process args")
	}
	if spec.Linux == nil {
		return nil, nil, errors.New("the config has no linux section")
	}
	fds, err := recvFds(specFd, len(mounts.BindSources(spec)))
	if err != nil {
		return nil, nil, fmt.Errorf("receive the bind sources: %w", err)
	}
	if !pooled {
		unix.Close(specFd)
	}
	return spec, fds, nil
}

func hasNamespace(spec *config.Config, t specs.LinuxNamespaceType) bool {
	if spec.Linux == nil {
		return false
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == t {
			return true
		}
	}
	return false
}

// rlimitResource is the resource number of a runtime-spec rlimit type (getrlimit(2)).
// A switch, not a map: a package-level map is built at every start.
func rlimitResource(name string) (int, bool) {
	switch name {
	case "RLIMIT_AS":
		return unix.RLIMIT_AS, true
	case "RLIMIT_CORE":
		return unix.RLIMIT_CORE, true
	case "RLIMIT_CPU":
		return unix.RLIMIT_CPU, true
	case "RLIMIT_DATA":
		return unix.RLIMIT_DATA, true
	case "RLIMIT_FSIZE":
		return unix.RLIMIT_FSIZE, true
	case "RLIMIT_NOFILE":
		return unix.RLIMIT_NOFILE, true
	case "RLIMIT_NPROC":
		return unix.RLIMIT_NPROC, true
	case "RLIMIT_STACK":
		return unix.RLIMIT_STACK, true
	case "RLIMIT_MEMLOCK":
		return unix.RLIMIT_MEMLOCK, true
	case "RLIMIT_MSGQUEUE":
		return unix.RLIMIT_MSGQUEUE, true
	case "RLIMIT_NICE":
		return unix.RLIMIT_NICE, true
	case "RLIMIT_RTPRIO":
		return unix.RLIMIT_RTPRIO, true
	case "RLIMIT_RTTIME":
		return unix.RLIMIT_RTTIME, true
	case "RLIMIT_SIGPENDING":
		return unix.RLIMIT_SIGPENDING, true
	case "RLIMIT_LOCKS":
		return unix.RLIMIT_LOCKS, true
	}
	return 0, false
}

// newSessionKeyring joins a new anonymous session keyring (keyctl(2)
// KEYCTL_JOIN_SESSION_KEYRING with a NULL name), so the command cannot read or add keys
// in the caller's session keyring. ENOSYS (no keyrings) and EPERM (keyctl denied by an
// outer seccomp filter, which the command inherits too) leave nothing to reach.
func newSessionKeyring() error {
	_, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	if errno == 0 || errno == unix.ENOSYS || errno == unix.EPERM {
		return nil
	}
	return fmt.Errorf("keyctl join session keyring: %w", errno)
}

// claimTerminal makes the first terminal among stdin, stdout and stderr the controlling
// terminal of the init's session (the launcher started it with setsid), when it is no
// session's controlling terminal yet. The command runs in a session of its own: without
// this it could take such a terminal with TIOCSCTTY and push input into it with
// TIOCSTI. A terminal that already controls a session (the caller's) cannot be taken by
// the command either. See tty_ioctl(4).
func claimTerminal() {
	for fd := 0; fd <= 2; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			unix.IoctlSetInt(fd, unix.TIOCSCTTY, 0)
			return
		}
	}
}
