package nsinit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Session is a sandbox built once that runs any number of commands, one after the
// other or at once, in the same namespaces, root, cgroup and host identity: a server a
// command starts in the background answers the next command on the sandbox's loopback,
// /tmp and HOME persist. Its pid 1 forks each command through the process stage
// (capabilities dropped, no_new_privs, the seccomp filter, the config's user and
// rlimits); nothing from outside joins its namespaces (docs/decisions.md, "Sessions").
//
// The process that calls NewSession is the session's owner: the sandbox ends when it
// calls Close, or when the owner dies (the life pipe), or when every process of the
// sandbox is killed from outside. A Session is safe for concurrent use.
type Session struct {
	c    *Cmd       // the init's launch state: its pid, owner, sync pipe, control socket
	mu   sync.Mutex // one frame at a time on the control socket
	done chan struct{}

	closeOnce sync.Once
	result    *Result

	// cleanMu: one cleanup at a time (Cleanup, Close's)
	cleanMu sync.Mutex
	// live are the config's Cleanup entries that may run while the sandbox runs: all
	// but the mount points the launch made in a host tree (removing one on the host
	// would unmount it in the sandbox)
	live []cleanup.Entry
	// liveAt are the indexes in the config's Cleanup of live's entries: Close runs
	// them as the last pass left them (baselines advanced: cleanup.Pass)
	liveAt []int
	// running counts the commands whose cleanup before them ran and that have not
	// ended; quiet says that no process of the session ran since the last pass ended
	// (none was left, none started since): what changed in a git dir meanwhile is the
	// host's, the user's own git (both under cleanMu)
	running int
	quiet   bool
	// left is what the last pass left of the live entries' "as at launch" paths
	// (cleanup.Snapshot), taken when it set quiet, nil otherwise: the next request's
	// pass adopts only what changed since (cleanup.Retake; attack review 36 F1)
	left *cleanup.State
	// bad: the live entries (by index) whose last run reported a failure; the pass
	// before the next request runs them again whatever the host did (attack review
	// 36 F2: one session-wide mark had every entry judge the host's work)
	bad []bool
	// guard, from the config's Guard, searches the writable trees around each command
	guard config.SessionGuard
}

// NewSession builds the sandbox of cfg (its Process, if any, is only the template of
// each command's: user, rlimits, env and cwd) and returns once the sandbox is ready for
// commands. A sandbox that cannot be built gives a *SetupError and leaves nothing
// behind.
//
// With cfg.Guard (policy.Build sets it), each command's Start first searches the
// sandbox's writable trees for protected paths (a .git) made since the session
// started: one that appeared while none of its commands ran (made on the host between
// commands) has no read-only mount, so Start refuses the command with a *SetupError at
// step "protected" until the session is built again; one a command made is its own, as
// in a one-shot sandbox (policy.SessionGuard; README, Sessions). A config without a
// Guard (config.FromSpec, one built by hand) has no protected paths to keep.
func NewSession(cfg *config.Config) (*Session, error) { return newSession(cfg, nil) }

func newSession(cfg *config.Config, sn *SessionNet) (*Session, error) {
	c := &Cmd{Config: cfg, session: true, sessNet: sn}
	if sn != nil {
		c.NetEvents, c.NetWithheld = sn.Events, sn.Withheld
	}
	placed, err := c.spawn(true)
	if err != nil {
		return nil, err
	}
	m, ok := c.sync.next()
	if err := <-placed; err != nil {
		c.reapFailed()
		var se *SetupError
		if errors.As(err, &se) {
			return nil, c.fail(se)
		}
		return nil, c.fail(&SetupError{Step: "cgroup", Err: err})
	}
	switch {
	case ok && m.Type == msgReady:
	case ok && m.Type == msgError:
		c.reapFailed()
		return nil, c.fail(&SetupError{Step: m.Step, Err: m.err()})
	default:
		c.reapFailed()
		return nil, c.fail(&SetupError{Step: "init", Err: diedEarly(c.init.wait(), c.setupOut.summary())})
	}
	s := &Session{c: c, done: make(chan struct{})}
	s.live, s.liveAt = liveCleanup(cfg)
	// no command ran yet: what the host's git does before the first request is the
	// host's too (what cannot be read now keeps the launch's baseline)
	s.settle(s.Processes() == 0)
	if cfg.Guard != nil {
		s.guard = cfg.Guard.Session()
	}
	go func() {
		for {
			if _, ok := c.sync.next(); !ok {
				break
			}
		}
		c.init.wait()
		close(s.done)
	}()
	return s, nil
}

// Done is closed once the sandbox has ended (its init exited: Close, the owner's end,
// or its processes killed from outside).
func (s *Session) Done() <-chan struct{} { return s.done }

// InitPid is the host pid of the sandbox's pid 1.
func (s *Session) InitPid() int { return s.c.init.pid }

// SandboxID is the sandbox's own id: its cgroup is gosbx-<id>.
func (s *Session) SandboxID() string { return s.c.own.id }

// HostUID is the host uid a root caller's commands run as, or -1.
func (s *Session) HostUID() int64 {
	if s.c.own.hostID != nil {
		return int64(s.c.own.hostID.id)
	}
	return -1
}

// Config is the config the session was built from.
func (s *Session) Config() *config.Config { return s.c.Config }

// Command returns a Cmd that runs process in the session. Set its Stdin, Stdout,
// Stderr, Timeout and Events as for Command (not NetEvents, NetDenied or NetWithheld:
// Start refuses them, the session's egress lines are NewSessionNet's SessionNet.Events,
// each with the Origin of the command that made it); Start, Wait, Run and Signal behave the
// same, but a Timeout kills the command's process group, not the sandbox, and the
// command's end does not end the sandbox (what it left running goes on). The config's
// after-run cleanup runs before Start sends the command and before Wait returns
// (Session.Cleanup; Result.Removed, NotRemoved). Start gives a *StartUnknownError when
// the session's init ended with no report after it had the command: it may have run.
func (s *Session) Command(process *specs.Process) *Cmd {
	spec := *s.c.Config
	spec.Process = process
	return &Cmd{Config: &spec, sess: s}
}

// send writes one request frame on the control socket.
func (s *Session) send(frame []byte, fds []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.done:
		return errors.New("the session has ended")
	default:
	}
	return writeFrame(s.c.ctl, frame, fds)
}

// Processes counts the processes of the sandbox but its two pid 1s (the init and the
// commands' pid 1), from the children files of /proc (proc(5)).
func (s *Session) Processes() int {
	n := len(descendants(s.c.init.pid)) - 1 // the commands' pid 1
	return max(n, 0)
}

// Memory is the resident memory of every process of the sandbox, the init included,
// in bytes (the sum of their RSS, /proc/PID/statm).
func (s *Session) Memory() int64 {
	var sum int64
	buf := procBufs.Get().(*[procBuf]byte)
	defer procBufs.Put(buf)
	for _, p := range append(descendants(s.c.init.pid), s.c.init.pid) {
		sum += residentBytes(p, buf[:])
	}
	return sum
}

// sessionSyncBuf is the read buffer of a session command's reports (bufio reads a
// longer frame through it in turns).
const sessionSyncBuf = 256

// descendants lists the host pids of every descendant of pid.
func descendants(pid int) []int {
	out, _ := descendantsWithin(pid, math.MaxInt)
	return out
}

// Close ends the session: SIGTERM to every process of the sandbox, SIGKILL to what is
// left after grace (the sandbox's pid 1: the kernel kills the rest of its pid
// namespace; a grace of 0 kills at once, without SIGTERM), then the owner's part: the cgroup removed, the host id released, the
// after-run cleanup done (Result.Removed, NotRemoved). It returns once every process
// of the sandbox is gone; later calls return the same.
func (s *Session) Close(grace time.Duration) *Result {
	s.closeOnce.Do(func() {
		c := s.c
		if grace > 0 && s.send([]byte{reqTerminate}, nil) == nil {
			end := time.Now().Add(grace)
			for s.Processes() > 0 && time.Now().Before(end) {
				select {
				case <-s.done:
				case <-time.After(20 * time.Millisecond):
				}
			}
		}
		c.init.kill()
		<-s.done
		wall := time.Since(c.start)
		c.release()
		r := &Result{Wall: wall, HostUID: s.HostUID(), Limits: string(cgroup.None)}
		if c.own.nproc {
			r.Limits = string(cgroup.Rlimit)
		}
		s.cleanMu.Lock()
		if s.quiet && s.left != nil {
			// no process of the session ran since its last pass: what changed since is
			// the host's, kept as at the next request (attack review 36 F1, F2)
			cleanup.Retake(s.live, s.left)
		}
		// the last pass's baselines: what the passes while it ran checked is not
		// checked again (attack review 33 F3); but the objects and LFS files are
		// checked from the session's start, now that no process of it lives: a
		// leftover's shared writable mapping writes a file after a pass checked it
		// without new times (attack review 35 F6); so is the index, against its
		// stamps at launch (a page of it a leftover kept dirty in such a mapping takes
		// a write without new times too)
		spec := *c.Config
		spec.Cleanup = slices.Clone(c.Config.Cleanup)
		for i, j := range s.liveAt {
			if k := s.live[i].Kind; k != cleanup.VerifyObjects && k != cleanup.VerifyLFSObjects && k != cleanup.RemoveIndexBits {
				spec.Cleanup[j] = s.live[i]
			}
		}
		r.Removed, r.NotRemoved = c.own.afterRun(&spec)
		s.cleanMu.Unlock()
		if c.own.group != nil {
			r.Limits = string(c.own.group.Kind())
			c.own.dropGroup()
		}
		s.result = r
	})
	return s.result
}

// Cleanup runs the config's after-run cleanup (Config.Cleanup: what a command may have
// made in a writable git dir that would redirect the host's git: a commondir, a new
// modules/ entry, a symlink...) now, while the session runs, and returns the paths
// removed and, for those that could not be, "path: cause". The entries for mount points
// the launch made in a host tree are left to Close. A session command runs it before it
// starts and once it has ended (Result.Removed, NotRemoved): what a process of the
// session plants between commands is removed at the next command's start, or at Close,
// not before (docs/decisions.md, "The git guard of a session"). Each pass checks the
// objects, packs and index written since the last one began, not since the session
// started (cleanup.Pass; attack review 33 F3).
func (s *Session) Cleanup() (removed, failed []string) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	idle := s.running == 0 && s.Processes() == 0
	removed, failed = s.pass(false)
	return removed, append(failed, s.settle(idle)...)
}

// settle notes, once a pass ended (s.cleanMu held), whether no process of the session
// is left (quiet) and then what the pass left (left: cleanup.Snapshot), so that the
// next request's pass tells the host's changes from what the session left. idle is
// whether none was running and none was left when the pass began: counted after it, a
// process that wrote a git dir behind the pass's check and exited before the count
// had its writes taken for the host's at the next request (no process can start while
// s.cleanMu is held, so none left before the pass means none after it). It returns the
// paths whose state could not be read, as "path: cause".
func (s *Session) settle(idle bool) (failed []string) {
	s.quiet = idle && s.running == 0
	s.left = nil
	if s.quiet && len(s.live) > 0 {
		s.left, failed = cleanup.Snapshot(s.live)
	}
	return failed
}

// beforePass is the cleanup before a command of the session starts: when no process of
// the session ran since the last pass, what changed is the host's (the user's git
// status writing the index, a git fetch), so the index and the objects are not checked
// again, only taken as the new baseline (attack review 33 F3: the user's own index was
// written anew, its stat data zeroed, at every request). c counts as running until
// endCount.
func (s *Session) beforePass(c *Cmd) (removed, failed []string) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	removed, failed = s.pass(s.quiet && s.running == 0)
	s.running++
	s.quiet, s.left = false, nil
	c.counted = true
	return removed, failed
}

// afterPass is the cleanup once the command c of the session has ended.
func (s *Session) afterPass(c *Cmd) (removed, failed []string) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	if c.counted {
		c.counted = false
		s.running--
	}
	idle := s.running == 0 && s.Processes() == 0
	removed, failed = s.pass(false)
	if fault.Check("session slow pass") != nil {
		// a pass that takes long (fault injection test): a process the command left
		// writes and exits before settle
		time.Sleep(700 * time.Millisecond)
	}
	return removed, append(failed, s.settle(idle)...)
}

// endCount is afterPass's count for a command that did not start.
func (c *Cmd) endCount() {
	s := c.sess
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	if c.counted {
		c.counted = false
		s.running--
	}
}

// pass runs the live entries once (s.cleanMu held) and advances their baselines
// (cleanup.Pass). hostOnly (no process of the session ran since the last pass, which
// left s.left) first moves the "as at launch" baselines by what the host's git changed
// since (cleanup.Retake: a merge in progress, a fetch, a tag are the next request's
// baseline, never undone), then runs only what stays true whoever made the state (a
// symlink, a FIFO, a commondir git never writes) and the entries whose last run
// failed or whose baselines could not be moved; the checks of the index and the
// objects, which only the host can have written since, are left out.
func (s *Session) pass(hostOnly bool) (removed, failed []string) {
	if len(s.live) == 0 {
		return nil, nil
	}
	if len(s.bad) != len(s.live) {
		s.bad = make([]bool, len(s.live))
	}
	pass := cleanup.Begin(s.live)
	run, at := s.live, []int(nil)
	if hostOnly {
		pass.FromHost()
		retaken := cleanup.Retake(s.live, s.left)
		run = nil
		for i, e := range s.live {
			if e.Kind == cleanup.RemoveIndexBits || e.Kind == cleanup.VerifyObjects || e.Kind == cleanup.VerifyLFSObjects ||
				(cleanup.Baselined(e) && retaken[i] && !s.bad[i]) {
				continue
			}
			run, at = append(run, e), append(at, i)
		}
	}
	removed, failed, bad := cleanup.RunEach(run)
	for j, b := range bad {
		i := j
		if at != nil {
			i = at[j]
		}
		s.bad[i] = b
	}
	pass.Advance(s.live)
	return removed, failed
}

// liveCleanup is cfg.Cleanup without the entries of a tmpfs mount point (its
// destination, or a directory above it, made by the launch), and the index in
// cfg.Cleanup of each entry it keeps.
func liveCleanup(cfg *config.Config) (out []cleanup.Entry, at []int) {
	for i, e := range cfg.Cleanup {
		mountPoint := false
		for _, m := range cfg.Mounts {
			if e.Kind == cleanup.RemoveIfCreated && (m.Destination == e.Path || strings.HasPrefix(m.Destination, e.Path+"/")) {
				mountPoint = true
				break
			}
		}
		if !mountPoint {
			out, at = append(out, e), append(at, i)
		}
	}
	return out, at
}

// startInSession is Start for a Cmd of a Session: the process, its stdio and a socket
// for its reports go to the session's init, which forks it.
func (c *Cmd) startInSession() (err error) {
	if c.started {
		return errors.New("nsinit: already started")
	}
	s := c.sess
	if c.NetEvents != nil || c.NetDenied != nil || c.NetWithheld != nil {
		// the session's one proxy serves all its commands: set here, they would never
		// be called (a new user's trial took the silence for no denials)
		return errNetHooksInSession
	}
	if err := s.c.Config.ValidateProcess(c.Config.Process); err != nil {
		return c.fail(&SetupError{Step: "config", Err: err})
	}
	if s.guard != nil {
		// a protected path made since the last command, while none ran, has no
		// read-only mount: refused, not run unguarded (config.Guard)
		if err := s.guard.Before(c.Config.Process.Cwd); err != nil {
			return c.fail(&SetupError{Step: "protected", Err: err})
		}
		c.guarded = true
		defer func() {
			if err != nil {
				c.endGuard()
			}
		}()
	}
	frame := []byte{reqStart, 0}
	if c.TTY {
		frame[1] |= startTTY
		frame = binary.LittleEndian.AppendUint16(frame, c.TTYSize.Rows)
		frame = binary.LittleEndian.AppendUint16(frame, c.TTYSize.Cols)
	}
	// what a process of the session left in a git dir since the last command ended
	c.sessRemoved, c.sessNotRemoved = s.beforePass(c)
	defer func() {
		if err != nil {
			c.endCount()
		}
	}()
	proc := c.Config.Process
	if s.c.own.nproc && s.c.own.nprocLimit > 0 {
		// the session's process limit where no cgroup could be had: RLIMIT_NPROC in its
		// own user namespace (nprocInUserNS), on every command as on a pooled one; the
		// count is the namespace's, so the commands and what they left running share it
		proc = withNproc(proc, s.c.own.nprocLimit)
	}
	frame = append(frame, config.EncodeProcess(proc)...)
	if len(frame) > maxFrame {
		return c.fail(&SetupError{Step: "config", Err: fmt.Errorf("the process is %d bytes encoded, more than %d", len(frame), maxFrame)})
	}
	theirs, mine, err := socketPair()
	if err != nil {
		return c.fail(&SetupError{Step: "session", Err: err})
	}
	stdio, err := newStdioCopy(c.Stdin, c.Stdout, c.Stderr)
	if err != nil {
		theirs.Close()
		mine.Close()
		return c.fail(&SetupError{Step: "stdio", Err: err})
	}
	if g := s.c.own.group; g != nil {
		c.sessLimitEvents[0], c.sessLimitEvents[1] = g.LimitEvents()
	}
	c.start = time.Now()
	err = s.send(frame, []int{stdio.fds[0], stdio.fds[1], stdio.fds[2], int(theirs.Fd())})
	theirs.Close()
	if err != nil {
		mine.Close()
		stdio.abort()
		return c.fail(&SetupError{Step: "session", Err: fmt.Errorf("send the process: %w", err)})
	}
	stdio.sent()
	stdio.run()
	c.stdio, c.syncFile, c.started = stdio, mine, true
	if c.TTY {
		// the terminal's master, or 'F' and the error that follows
		fds, err := recvFds(int(mine.Fd()), 1)
		if err == nil {
			c.pty = os.NewFile(uintptr(fds[0]), "pty")
		}
	}
	// a small buffer: a session command's reports are a few short frames, and a
	// 4 KiB one per command was what a request left most in the supervisor
	c.sync = &syncReader{r: bufio.NewReaderSize(mine, sessionSyncBuf)}
	c.startTimer()
	m, ok := c.sync.next() // a session's init sends no msgForking
	switch {
	case ok && m.Type == msgExec:
		c.sessPid = m.Pid
		if c.Events != nil {
			c.Events(Event{Exec: true, Pid: c.Pid(), Path: m.Path})
		}
		return nil
	case ok && m.Type == msgExecError:
		c.endInSession()
		return c.fail(&ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)})
	case ok && m.Type == msgError:
		c.endInSession()
		return c.fail(&SetupError{Step: m.Step, Err: m.err()})
	}
	// No report (end of file: the init died, e.g. `gosbx session kill`): the command
	// was sent, and the init forks it before its exec report, so it may have run
	c.endInSession()
	return c.fail(&StartUnknownError{})
}

// endInSession releases what a session command holds on this side.
func (c *Cmd) endInSession() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.syncFile.Close()
	if c.stdio != nil {
		c.stdio.wait()
	}
	c.waited = true
}

// errNetHooksInSession is Start's error for a session command with NetEvents,
// NetDenied or NetWithheld set.
var errNetHooksInSession = errors.New("nsinit: Cmd.NetEvents, NetDenied and NetWithheld are not called for a command of a Session " +
	"(one proxy serves all its commands): build the session with NewSessionNet and take its status lines from " +
	"SessionNet.Events, routed by their Origin (the command's Cmd.Pid); the command was not started")

// endGuard tells the session's guard that a command that passed its Before has ended
// (or did not start), once.
func (c *Cmd) endGuard() {
	if c.guarded {
		c.guarded = false
		c.sess.guard.Ended(c.Config.Process.Cwd)
	}
}

// waitInSession is Wait for a Cmd of a Session.
func (c *Cmd) waitInSession() error {
	var status *int
	for {
		m, ok := c.sync.next()
		if !ok {
			break
		}
		if m.Type == msgExit {
			st := m.Status
			status = &st
			break
		}
	}
	wall := time.Since(c.start)
	c.endInSession()
	own := &c.sess.c.own
	r := &Result{Wall: wall, TimedOut: c.isTimedOut(), HostUID: c.sess.HostUID(), Limits: string(cgroup.None), CPUs: own.cpus}
	// the git guard after every command, as after a sandbox's end (Cleanup)
	removed, failed := c.sess.afterPass(c)
	r.Removed, r.NotRemoved = append(c.sessRemoved, removed...), append(c.sessNotRemoved, failed...)
	// what appeared in the trees while it ran is the command's own
	c.endGuard()
	if own.nproc {
		r.Limits = string(cgroup.Rlimit)
	}
	if g := own.group; g != nil {
		// The session's limits, shared by its commands: what its group counted while this
		// one ran (on it, or on another process of the session) is what can be said.
		r.Limits = string(g.Kind())
		ooms, refused := g.LimitEvents()
		r.OOMKilled = ooms > c.sessLimitEvents[0]
		switch {
		case r.OOMKilled:
			r.LimitHit = "memory"
		case refused > c.sessLimitEvents[1]:
			r.LimitHit = "pids"
		}
	}
	switch {
	case r.TimedOut:
		r.ExitCode = ExitTimeout
	case status != nil:
		ws := unix.WaitStatus(*status)
		r.ExitCode = exitCode(ws)
		if ws.Signaled() {
			r.Signal = syscall.Signal(ws.Signal())
		}
	default:
		// The session ended under the command (stopped, or killed from outside).
		r.Signal = syscall.SIGKILL
		r.ExitCode = 128 + int(r.Signal)
	}
	c.Result = r
	if c.Events != nil {
		code, to, ms := r.ExitCode, r.TimedOut, wall.Milliseconds()
		e := Event{ExitCode: &code, Signal: int(r.Signal), TimedOut: &to, WallMs: &ms, Removed: r.Removed, NotRemoved: r.NotRemoved,
			Limits: r.Limits, LimitsNote: own.limits, CPUs: r.CPUs}
		switch r.Limits {
		case string(cgroup.V1), string(cgroup.V2):
			oom := r.OOMKilled
			e.OOMKilled, e.LimitHit = &oom, r.LimitHit
			e.UsageNote = sessionUsageNote
		case string(cgroup.Rlimit):
			e.UsageNote = rlimitUsageNote
		}
		c.Events(e)
	}
	if r.Success() {
		return nil
	}
	return &ExitError{r}
}

// signalInSession sends sig to the command (to its process group with group).
func (c *Cmd) signalInSession(sig syscall.Signal, group bool) error {
	if c.sessPid == 0 {
		return errors.New("nsinit: not started")
	}
	return c.sess.send(encodeSignal(c.sessPid, sig, group), nil)
}

// Event is the session's first status event, as a command of gosbx exec gets: the
// init's host pid and namespaces, the sandbox id, a root caller's host uid.
func (s *Session) Event() Event {
	return s.c.namespaceEvent()
}

// Terminal is the master of a session command's terminal (TTY), after Start: what is
// written to it is the command's input, what the command writes is read from it; its
// window size is set with TIOCSWINSZ. The caller closes it.
func (c *Cmd) Terminal() *os.File { return c.pty }

// Pid is a session command's host pid, once started: read from /proc the first time
// (proc(5): the init's children and their NSpid), 0 if the command has ended by then.
func (c *Cmd) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hostPid == 0 && c.sess != nil && c.sessPid != 0 {
		c.hostPid = childPid(c.sess.c.init.pid, c.sessPid)
	}
	return c.hostPid
}

// SignalGroup sends sig to a session command's process group (the command is its
// session's leader: setsid), while the command runs: a detached job's whole tree.
func (c *Cmd) SignalGroup(sig syscall.Signal) error {
	if c.sess == nil {
		return errors.New("nsinit: SignalGroup is for a command of a Session")
	}
	return c.signalInSession(sig, true)
}

// WindowSize is a terminal's size in characters (TIOCSWINSZ, tty_ioctl(4)).
type WindowSize struct{ Rows, Cols uint16 }

// sessionUsageNote is a session command's exit event's usage-note: the session's
// cgroup is shared by its commands, so no figure of it is one command's.
const sessionUsageNote = "the session's: its commands share one cgroup, so memory, CPU and process figures are not " +
	"this command's (gosbx session ls shows the session's); oom-killed and limit-hit say the session's limit " +
	"acted while this command ran, on it or on another process of the session"
