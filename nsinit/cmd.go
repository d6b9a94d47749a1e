package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/mounts"
)

// Cmd is a command to run in a new sandbox, shaped like os/exec.Cmd: configure it,
// then Start and Wait, or Run. The sandbox is described entirely by Spec (compile one
// with the policy package); the command is Spec.Process.Args. Of the runtime-spec,
// gosbx implements process, root, hostname, mounts, annotations and linux's uidMappings,
// gidMappings, namespaces, seccomp, maskedPaths, readonlyPaths and resources; a spec
// that sets any other field is refused (*SetupError, step "config").
//
// The binary is re-executed through /proc/self/exe as the init stage, so a program
// using Cmd must call Init first in main.
type Cmd struct {
	Spec *specs.Spec

	// Stdin, Stdout and Stderr are given to the command. An *os.File is passed as the
	// descriptor itself (a terminal stays a terminal); other readers and writers are
	// copied through a pipe; nil means /dev/null.
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Timeout, if positive, kills the whole sandbox after this wall-clock time
	// (Result.TimedOut, ExitCode 124).
	Timeout time.Duration

	// Events, if set, receives the status events as they happen, from the goroutines
	// of Start and Wait: the init's pid and namespaces, the command's exec, its exit,
	// or the error that stopped the launch.
	Events func(Event)

	// Result is set by Wait once the sandbox has ended.
	Result *Result

	init     *initProc
	life     *os.File // held for the launch: its closing kills the sandbox
	sync     *syncReader
	syncFile *os.File
	start    time.Time
	timer    *time.Timer
	mu       sync.Mutex
	timedOut bool
	group    cgroup.Group // the sandbox's cgroup, nil without one
	limits   string       // why there is no cgroup, when limits were only defaults
	started  bool         // the init was cloned
	waited   bool

	hostID      *hostID // a root caller's host id, held until Wait
	nproc       bool    // the default process limit is RLIMIT_NPROC on hostID, no cgroup
	identityMap string  // why a root caller's command kept host uid 0 (RootIdentityAnnotation)

	pool  *Pool      // set by Pool.Command: Start takes a sandbox built ahead
	ctl   *os.File   // a pooled init's socket (fd 3 inside): the process and its stdio go there
	stdio *stdioCopy // a pooled command's stdio pipes, copied until Wait
}

// Command returns a Cmd that runs spec.Process in a sandbox built from spec.
func Command(spec *specs.Spec) *Cmd { return &Cmd{Spec: spec} }

// Run starts the command and waits for it. See Start and Wait for the errors.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Start clones the init stage into new namespaces, sends it the spec, and returns once
// the command is running. A sandbox that could not be built gives a *SetupError, a
// command that could not be executed an *ExecError; in both cases the command never ran
// and nothing is left running.
//
// Every descriptor of the calling process above 2 is marked close-on-exec first, so
// nothing but the stdio reaches the sandbox.
func (c *Cmd) Start() error {
	if c.pool != nil {
		return c.startPooled()
	}
	if c.init != nil {
		return errors.New("nsinit: already started")
	}
	placed, err := c.spawn(false)
	if err != nil {
		return err
	}
	c.startTimer()
	if c.Events != nil {
		c.Events(c.namespaceEvent())
	}
	return c.awaitExec(placed)
}

// spawn clones the init stage with c.Spec and sends it the spec; the init's cgroup
// placement runs beside its setup and reports on the returned channel. A pooled init
// (Pool) waits on its socket for the process once its sandbox is built; its stdio is
// /dev/null until then.
//
// Only what the clone needs comes before it (the namespaces, the id mappings, a root
// caller's host id, a cgroup v2 group); the rest (the bind sources, a root caller's
// idmaps, the seccomp program, the encoded spec) is done while the new init's Go
// runtime starts, which takes ~1.5 ms, and sent on its socket.
func (c *Cmd) spawn(pooled bool) (_ <-chan error, err error) {
	spec := c.Spec
	rng, mapped, err := rootMapping(spec)
	if err != nil {
		return nil, c.fail(&SetupError{Step: "config", Err: err})
	}
	mapped = mapped && c.identityMap == ""
	var hid *hostID
	if mapped {
		// A root caller: the command runs as a host id of the range, never uid 0.
		if hid, err = takeHostID(rng); err != nil {
			return nil, c.fail(&SetupError{Step: "host id", Err: err})
		}
		defer func() {
			if err != nil {
				hid.release()
			}
		}()
		spec = withHostID(spec, hid.id)
	}
	flags, uids, gids, err := cloneConfig(spec, pooled)
	if err == nil {
		err = fault.Check("config")
	}
	if err == nil {
		err = checkSpec(spec)
	}
	if err != nil {
		return nil, c.fail(&SetupError{Step: "config", Err: err})
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return nil, c.fail(&SetupError{Step: "close fds", Err: err})
	}
	if limit, ok := nprocDefault(spec); mapped && !pooled && ok {
		// A root caller's default process limit (not one asked for): the command's host
		// id is this sandbox's alone, so RLIMIT_NPROC on it counts exactly the
		// sandbox's processes and threads, without a v1 group's migration (an RCU grace
		// period, up to ~15 ms after an idle spell).
		spec = withRlimit(spec, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: limit, Soft: limit})
		c.nproc = true
	} else if err := c.makeGroup(); err != nil {
		return nil, c.fail(err)
	}
	var files []*os.File // the parent's ends, closed on failure
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	// fd 3: a unix stream socket carrying the spec and the bind sources, and for a
	// pooled init, later, the process and its stdio.
	specR, specW, err := socketPair()
	if err == nil {
		if err = fault.Check("pipe"); err != nil {
			specR.Close()
			specW.Close()
		}
	}
	if err != nil {
		c.dropGroup()
		return nil, c.fail(&SetupError{Step: "pipe", Err: err})
	}
	files = append(files, specR, specW)
	syncR, syncW, err := os.Pipe()
	if err != nil {
		closeAll()
		c.dropGroup()
		return nil, c.fail(&SetupError{Step: "pipe", Err: err})
	}
	files = append(files, syncR, syncW)
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		closeAll()
		c.dropGroup()
		return nil, c.fail(&SetupError{Step: "pipe", Err: err})
	}
	files = append(files, lifeR, lifeW)
	args := []string{InitArg}
	if pooled {
		args = append(args, poolArg)
	}
	if mapped {
		args = append(args, treesArg)
	}
	// The command's stdio as os/exec would give it (files as they are, /dev/null,
	// pipes copied by the launcher); a pooled init gets /dev/null until its process
	// comes with the real ones. Readers are read only once the init has its spec, so
	// nothing of Stdin goes to a launch that stops before (or is tried again, below).
	var stdio *stdioCopy
	if pooled {
		stdio, err = newStdioCopy(nil, nil, nil)
	} else {
		stdio, err = newStdioCopy(c.Stdin, c.Stdout, c.Stderr)
	}
	if err != nil {
		closeAll()
		c.dropGroup()
		return nil, c.fail(&SetupError{Step: "pipe", Err: err})
	}
	sys := &syscall.SysProcAttr{
		Setsid:                     true, // keyboard signals reach the launcher only, which forwards them
		Cloneflags:                 flags,
		UidMappings:                uids,
		GidMappings:                gids,
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                initCaps,
	}
	if mapped {
		// Root clones with the command's ids inside (0 by default), host id hid: the
		// init must take them itself, or it would keep host uid 0's ownership of
		// every root file. Supplementary groups go too (root's group 0), which needs
		// setgroups(2) allowed in the new namespace; only the init, before it drops
		// its capabilities, could call it.
		sys.Credential = &syscall.Credential{
			Uid: spec.Linux.UIDMappings[0].ContainerID, Gid: spec.Linux.GIDMappings[0].ContainerID, Groups: []uint32{}}
		sys.GidMappingsEnableSetgroups = true
	}
	if c.group != nil && c.group.CloneFd() >= 0 {
		// cgroup v2: cloned straight into the group, no process ever runs outside it
		sys.UseCgroupFD = true
		sys.CgroupFD = c.group.CloneFd()
	}
	c.start = time.Now()
	if err = fault.Check("clone"); err == nil {
		c.init, err = startInit(args, &syscall.ProcAttr{
			Env: fault.Env(),
			Files: []uintptr{uintptr(stdio.fds[0]), uintptr(stdio.fds[1]), uintptr(stdio.fds[2]),
				specR.Fd(), syncW.Fd(), lifeR.Fd()},
			Sys: sys,
		})
	}
	stdio.sent() // the init holds its ends now
	specR.Close()
	syncW.Close()
	lifeR.Close()
	if err != nil {
		c.init = nil
		specW.Close()
		syncR.Close()
		lifeW.Close()
		stdio.abort()
		c.dropGroup()
		if mapped && errors.Is(err, unix.EACCES) {
			return nil, c.fail(&SetupError{Step: "clone", Err: fmt.Errorf("%w (a root caller's init runs as the unprivileged "+
				"host id %d: the gosbx binary must be executable by other users, e.g. mode 0755)", err, hid.id)})
		}
		return nil, c.fail(&SetupError{Step: "clone", Err: cloneHint(err)})
	}
	c.life, c.syncFile, c.sync = lifeW, syncR, newSyncReader(syncR)
	c.started = true
	if err := c.sendSpec(spec, specW, mapped, hid); err != nil {
		specW.Close()
		c.stdio = stdio // aborted by reapFailed: nothing was read
		c.reapFailed()
		c.stdio = nil
		if ws := c.init.wait(); ws.Exited() && (errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)) {
			// it closed its socket by exiting before it read its config: say why that is
			// (a quick start ends before the spec is sent)
			err = &SetupError{Step: "init", Err: diedEarly(ws)}
		}
		allow := spec.Annotations[RootIdentityAnnotation] == "allow"
		var me *mounts.Error
		if mapped && allow && errors.As(err, &me) && me.Op == "idmap" && errors.Is(err, unix.EINVAL) {
			// The policy accepts host uid 0 where a bind cannot be idmapped.
			c.identityMap = err.Error()
			hid.release()
			c.init, c.started, c.waited, c.nproc = nil, false, false, false
			return c.spawn(pooled)
		}
		var se *SetupError
		if !errors.As(err, &se) {
			err = &SetupError{Step: "idmap", Err: err}
		}
		return nil, c.fail(err)
	}
	if mapped {
		c.hostID = hid
	}
	if pooled {
		c.ctl = specW
		stdio.abort() // nothing to copy: /dev/null until the process comes
	} else {
		specW.Close()
		stdio.run()
		c.stdio = stdio // Wait waits for the copies
	}
	if c.nproc {
		cgroup.CollectStale() // groups of killed launchers; this launch makes none
	}
	// cgroup v1: place the init while it builds the sandbox (a v1 migration waits for an
	// RCU grace period, milliseconds); the init forks the command only after the "go"
	// byte, so the command and all it starts are in the group from birth. On failure
	// the init is killed before it gets the byte.
	placed := make(chan error, 1)
	go func() {
		var err error
		if c.group != nil {
			if err = fault.Check("cgroup place"); err == nil {
				err = c.group.Add(c.init.pid)
			}
		}
		if err != nil {
			c.init.kill()
		} else {
			c.life.Write([]byte{lifeGo})
		}
		placed <- err
	}()
	return placed, nil
}

// sendSpec sends a cloned init its spec (with the compiled seccomp program) and the
// bind sources: O_PATH descriptors of the sources for a caller other than root, trees
// cloned by the launcher for root, their read-write ones idmapped to the owner's host
// id (mapped). The init waits for them before any mount. Errors are *SetupError, or
// an idmap *mounts.Error the caller may retry without the mapping.
func (c *Cmd) sendSpec(spec *specs.Spec, sock *os.File, mapped bool, hid *hostID) error {
	err := fault.Check("seccomp filter")
	var wire *wireSpec
	if err == nil {
		wire, err = toWire(spec)
	}
	if err != nil {
		return &SetupError{Step: "seccomp filter", Err: err}
	}
	config := encodeSpec(wire)
	if len(config) > maxFrame {
		return &SetupError{Step: "config", Err: fmt.Errorf("the spec is %d bytes encoded, more than %d", len(config), maxFrame)}
	}
	var fds []int
	defer func() { closeFds(fds) }()
	if mapped {
		// The init, an unprivileged host id, may not reach a source (under /root): the
		// launcher clones every bind, and idmaps the read-write ones in the init's
		// user namespace.
		err = fault.Check("open bind source")
		var trees []*mounts.Source
		if err == nil {
			trees, err = mounts.CloneSources(spec)
		}
		for _, t := range trees {
			fds = append(fds, t.Fd())
		}
		var plan []int
		var owners []owner
		if err == nil {
			plan, owners, err = idmapPlan(spec, trees)
		}
		if err != nil {
			return &SetupError{Step: "open bind source", Err: err}
		}
		self := owner{spec.Linux.UIDMappings[0].ContainerID, spec.Linux.GIDMappings[0].ContainerID}
		err = fault.Check("idmap")
		if err == nil {
			err = idmapTrees(trees, plan, owners, c.init.pid, self, hid.id)
		}
		if err != nil {
			var me *mounts.Error
			if errors.As(err, &me) {
				return err
			}
			return &SetupError{Step: "idmap", Err: err}
		}
	} else {
		for _, p := range mounts.BindSources(spec) {
			fd, err := mounts.OpenSourcePath(p)
			if err == nil {
				fds = append(fds, fd)
				err = fault.Check("open bind source")
			}
			if err != nil {
				return &SetupError{Step: "open bind source", Err: err}
			}
		}
	}
	if err := writeFrame(sock, config, nil); err != nil {
		return &SetupError{Step: "config", Err: fmt.Errorf("send the spec: %w", err)}
	}
	if err := sendFds(sock, fds); err != nil {
		return &SetupError{Step: "open bind source", Err: fmt.Errorf("send the bind sources: %w", err)}
	}
	return nil
}

func (c *Cmd) startTimer() {
	if c.Timeout > 0 {
		c.timer = time.AfterFunc(c.Timeout, c.expire)
	}
}

// awaitExec waits for the init's report on the command's execve and, when placed is
// not nil, for the init's cgroup placement.
func (c *Cmd) awaitExec(placed <-chan error) error {
	pid := c.init.pid
	m, ok := c.sync.next()
	if placed != nil {
		if err := <-placed; err != nil {
			c.reapFailed()
			return c.fail(&SetupError{Step: "cgroup", Err: err})
		}
	}
	forking := ok && m.Type == msgForking
	if forking {
		m, ok = c.sync.next()
	}
	switch {
	case ok && m.Type == msgExec:
		if c.Events != nil {
			c.Events(Event{Exec: true, Pid: childPid(pid), Path: m.Path})
		}
		c.life.Write([]byte{lifeAck}) // the reaper may reap the command now
		return nil
	case ok && m.Type == msgExecError:
		c.reapFailed()
		return c.fail(&ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)})
	case ok && m.Type == msgError:
		c.reapFailed()
		return c.fail(&SetupError{Step: m.Step, Err: errors.New(m.Error)})
	}
	if forking {
		// The init ended once the command may have started (killed from outside, or
		// crashed): the command counts as started, and Wait reports how the sandbox
		// ended and removes what must not outlive it, as for any command.
		return nil
	}
	// The init died before reporting: killed (timeout, by the memory limit, or by
	// someone) or crashed.
	oom := c.group != nil && c.group.Stats().OOMKilled
	c.reapFailed()
	if c.isTimedOut() {
		return c.fail(&SetupError{Step: "timeout", Err: fmt.Errorf("the %v wall-clock limit expired before the command started", c.Timeout)})
	}
	if oom {
		return c.fail(&SetupError{Step: "memory", Err: setupOOM(c.Spec, c.init.wait())})
	}
	return c.fail(&SetupError{Step: "init", Err: diedEarly(c.init.wait())})
}

// fail reports err as an event and returns it.
func (c *Cmd) fail(err error) error {
	if c.Events != nil {
		var se *SetupError
		var ee *ExecError
		switch {
		case errors.As(err, &se):
			c.Events(Event{Error: se.Err.Error(), Step: se.Step, Status: ExitSetup})
		case errors.As(err, &ee):
			c.Events(Event{Error: ee.Error(), Step: "exec", Status: ee.ExitCode()})
		default:
			c.Events(Event{Error: err.Error(), Step: "launch", Status: ExitSetup})
		}
	}
	return err
}

// reapFailed waits for an init that reported failure or died, and releases the pipes
// and the cgroup.
func (c *Cmd) reapFailed() {
	c.init.kill()
	c.init.wait()
	if c.stdio != nil {
		c.stdio.wait()
	}
	c.release()
	c.dropGroup()
}

func (c *Cmd) release() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.syncFile.Close()
	c.life.Close()
	if c.ctl != nil {
		c.ctl.Close()
	}
	// The sandbox is gone (the init was reaped, and with it every process of its pid
	// namespace): its host id is free again.
	c.hostID.release()
	c.waited = true
}

func (c *Cmd) expire() {
	c.mu.Lock()
	c.timedOut = true
	c.mu.Unlock()
	c.init.kill()
}

func (c *Cmd) isTimedOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

// Signal sends sig to the command; the sandbox's init forwards SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH and SIGCONT to it. SIGKILL kills the whole sandbox.
func (c *Cmd) Signal(sig os.Signal) error {
	if c.init == nil {
		return errors.New("nsinit: not started")
	}
	ss, ok := sig.(syscall.Signal)
	if !ok {
		return errors.New("nsinit: unsupported signal type")
	}
	return c.init.signal(ss)
}

// Wait waits for the command to end and for the sandbox to be gone, then sets Result.
// It returns nil for exit status 0, an *ExitError when the command exited non-zero, was
// killed by a signal or timed out.
func (c *Cmd) Wait() error {
	if !c.started {
		return errors.New("nsinit: not started")
	}
	if c.waited {
		return errors.New("nsinit: Wait was already called, or Start failed")
	}
	var status *int
	for {
		m, ok := c.sync.next()
		if !ok {
			break
		}
		if m.Type == msgExit {
			s := m.Status
			status = &s
		}
	}
	initStatus := c.init.wait()
	if c.stdio != nil {
		c.stdio.wait()
	}
	wall := time.Since(c.start)
	c.release()
	r := &Result{Wall: wall, TimedOut: c.isTimedOut(), HostUID: -1, IdentityMap: c.identityMap}
	if c.hostID != nil {
		r.HostUID = int64(c.hostID.id)
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
		// The init died without a report: killed from outside, which killed the
		// command with it.
		r.Signal = syscall.SIGKILL
		if initStatus.Signaled() {
			r.Signal = initStatus.Signal()
		}
		r.ExitCode = 128 + int(r.Signal)
	}
	r.Removed, r.NotRemoved = removeAbsentAfter(c.Spec)
	r.Limits = string(cgroup.None)
	if c.nproc {
		r.Limits = string(cgroup.Rlimit)
	}
	if c.group != nil {
		st := c.group.Stats()
		r.Limits = string(c.group.Kind())
		r.OOMKilled, r.MemoryPeak, r.PidsPeak = st.OOMKilled, st.MemoryPeak, st.PidsPeak
		r.CPUUser, r.CPUSystem = time.Duration(st.CPUUser)*time.Microsecond, time.Duration(st.CPUSystem)*time.Microsecond
		switch {
		case st.OOMKilled:
			r.LimitHit = "memory"
		case st.PidsMaxHit:
			r.LimitHit = "pids"
		}
		if c.pool != nil {
			// The group is empty; its removal can wait for a v1 migration another
			// sandbox of the pool is doing (milliseconds): Pool.Close waits for it.
			c.pool.removeLater(c.group)
			c.group = nil
		} else {
			c.dropGroup()
		}
	}
	c.Result = r
	if c.pool != nil {
		c.pool.refill()
	}
	if c.Events != nil {
		code, to, ms := r.ExitCode, r.TimedOut, wall.Milliseconds()
		e := Event{ExitCode: &code, Signal: int(r.Signal), TimedOut: &to, WallMs: &ms, Removed: r.Removed, NotRemoved: r.NotRemoved,
			Limits: r.Limits, LimitsNote: c.limits}
		if r.Limits == string(cgroup.V1) || r.Limits == string(cgroup.V2) { // usage is known only through a cgroup
			oom, cpu := r.OOMKilled, (r.CPUUser + r.CPUSystem).Microseconds()
			e.OOMKilled, e.CPUUsec, e.LimitHit, e.MemoryPeak, e.PidsPeak = &oom, &cpu, r.LimitHit, r.MemoryPeak, r.PidsPeak
			e.CPUUserUsec, e.CPUSystemUsec = r.CPUUser.Microseconds(), r.CPUSystem.Microseconds()
		}
		c.Events(e)
	}
	if r.Success() {
		return nil
	}
	return &ExitError{r}
}

// AbsentAfterAnnotation lists, as a JSON array, host paths that must not exist once the
// sandbox has ended; Wait removes any that appeared (without following a final
// symlink) and reports them in Result.Removed. For files the command can create but a
// mount cannot keep it from creating.
const AbsentAfterAnnotation = "org.gosbx.absent-after"

func removeAbsentAfter(spec *specs.Spec) (removed, failed []string) {
	raw, ok := spec.Annotations[AbsentAfterAnnotation]
	if !ok {
		return removeNewEntries(spec)
	}
	var paths []string
	if json.Unmarshal([]byte(raw), &paths) != nil {
		return nil, []string{"annotation " + AbsentAfterAnnotation + ": not a JSON array of paths"}
	}
	for _, p := range paths {
		switch gone, err := removeNoFollow(p); {
		case err != nil:
			failed = append(failed, p+": "+err.Error())
		case gone:
			removed = append(removed, p)
		}
	}
	r, f := removeNewEntries(spec)
	removed, failed = append(removed, r...), append(failed, f...)
	r, f = removeSymlinks(spec)
	return append(removed, r...), append(failed, f...)
}

// NoSymlinksAnnotation lists, as a JSON array, host directories (commit-mode git dirs)
// in which no symlink, FIFO, socket or device may be left once the sandbox has ended:
// Wait removes every one (without following it) and reports it in Result.Removed. Git
// never makes one there; the host's git follows a symlink when it writes
// (COMMIT_EDITMSG, logs/HEAD, a ref) and blocks on a FIFO.
const NoSymlinksAnnotation = "org.gosbx.no-symlinks"

func removeSymlinks(spec *specs.Spec) (removed, failed []string) {
	raw, ok := spec.Annotations[NoSymlinksAnnotation]
	if !ok {
		return nil, nil
	}
	var dirs []string
	if json.Unmarshal([]byte(raw), &dirs) != nil {
		return nil, []string{"annotation " + NoSymlinksAnnotation + ": not a JSON array of paths"}
	}
	var walk func(fd int, dir string, depth int)
	walk = func(fd int, dir string, depth int) {
		f := os.NewFile(uintptr(fd), dir)
		defer f.Close()
		names, err := f.Readdirnames(-1)
		if err != nil {
			failed = append(failed, dir+": "+err.Error())
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			var st unix.Stat_t
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			switch t := st.Mode & unix.S_IFMT; {
			case t == unix.S_IFLNK || t == unix.S_IFIFO || t == unix.S_IFSOCK || t == unix.S_IFCHR || t == unix.S_IFBLK:
				if err := removeAt(fd, n, false, 0); err != nil {
					failed = append(failed, p+": "+err.Error())
				} else {
					removed = append(removed, p)
				}
			case st.Mode&unix.S_IFMT != unix.S_IFDIR || depth >= 32:
			case filepath.Base(dir) == "objects" && n != "info" && n != "pack":
				// a fan-out directory: its loose objects are not followed when git writes
			default:
				sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if errors.Is(err, unix.EACCES) && ownerRWX(fd, n) == nil {
					sub, err = unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				}
				if err != nil {
					failed = append(failed, p+": "+err.Error())
					continue
				}
				walk(sub, p, depth+1)
			}
		}
	}
	for _, d := range dirs {
		fd, err := openDirNoFollow(d)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			failed = append(failed, d+": "+err.Error())
			continue
		}
		walk(fd, d, 0)
	}
	return removed, failed
}

// NoNewEntriesAnnotation lists, as a JSON array of {"dir": D, "keep": [names]}, host
// directories the command may write in but not add to: when the sandbox has ended, Wait
// removes every entry of D not in keep (without following a symlink) and reports it in
// Result.Removed. A commit-mode git dir's modules/: a submodule git dir the command
// made there would be adopted by the user's next git submodule update --init.
const NoNewEntriesAnnotation = "org.gosbx.no-new-entries"

func removeNewEntries(spec *specs.Spec) (removed, failed []string) {
	raw, ok := spec.Annotations[NoNewEntriesAnnotation]
	if !ok {
		return nil, nil
	}
	var dirs []struct {
		Dir  string   `json:"dir"`
		Keep []string `json:"keep"`
	}
	if json.Unmarshal([]byte(raw), &dirs) != nil {
		return nil, []string{"annotation " + NoNewEntriesAnnotation + ": not valid"}
	}
	for _, d := range dirs {
		keep := map[string]bool{}
		for _, k := range d.Keep {
			keep[k] = true
		}
		fd, err := openDirNoFollow(d.Dir)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			continue // gone, or no longer the directory (nothing of it can be reached by that name)
		}
		if err != nil {
			failed = append(failed, d.Dir+": "+err.Error())
			continue
		}
		f := os.NewFile(uintptr(fd), d.Dir)
		names, err := f.Readdirnames(-1)
		if err != nil {
			failed = append(failed, d.Dir+": "+err.Error())
		}
		for _, n := range names {
			if keep[n] {
				continue
			}
			var st unix.Stat_t
			if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			if err := removeAt(fd, n, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
				failed = append(failed, filepath.Join(d.Dir, n)+": "+err.Error())
			} else {
				removed = append(removed, filepath.Join(d.Dir, n))
			}
		}
		f.Close()
	}
	return removed, failed
}

// removeNoFollow removes the file or tree at the canonical path p without following a
// symlink anywhere: its parent is opened with openat2(2) RESOLVE_NO_SYMLINKS (a
// component the command replaced by a symlink leads nowhere, and nothing is removed),
// and a tree is removed through descriptors, never by path. It reports whether p was
// there and is gone, and an error when it is there and could not be removed. The
// sandbox has ended: nothing races the removal, and a directory the command made
// unwritable or unsearchable (chmod 0555 .git) is given back its owner's rwx first.
func removeNoFollow(p string) (bool, error) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, err
	}
	if err := removeAt(dir, filepath.Base(p), st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
		return false, err
	}
	return true, nil
}

// openDirNoFollow opens the directory p (O_RDONLY) without following a symlink; a
// directory on the way its owner cannot search or read gets u+rwx (see removeNoFollow).
func openDirNoFollow(p string) (int, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	fd, err := unix.Openat2(unix.AT_FDCWD, p, how)
	if errors.Is(err, unix.ENOSYS) {
		// the init's own cleanup, under a root caller's seccomp filter (openat2's mode
		// cannot be inspected, so it is refused): component by component, O_NOFOLLOW
		fd, err = openComponents(p)
	}
	if !errors.Is(err, unix.EACCES) || p == "/" {
		return fd, err
	}
	parent, perr := openDirNoFollow(filepath.Dir(p))
	if perr != nil {
		return -1, err
	}
	defer unix.Close(parent)
	if perr := ownerRWX(parent, filepath.Base(p)); perr != nil {
		return -1, err
	}
	return unix.Openat(parent, filepath.Base(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openComponents opens the canonical directory p one component at a time from /, each
// with O_NOFOLLOW: a symlink anywhere on the way is refused (ELOOP or ENOTDIR).
func openComponents(p string) (int, error) {
	if strings.Trim(p, "/") == "" {
		return unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	}
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	cs := strings.Split(strings.Trim(p, "/"), "/")
	for i, c := range cs {
		if c == ".." || c == "." {
			unix.Close(fd)
			return -1, unix.EINVAL
		}
		flags := unix.O_PATH // search permission is enough on the way
		if i == len(cs)-1 {
			flags = unix.O_RDONLY // the directory itself is read
		}
		next, err := unix.Openat(fd, c, flags|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// ownerRWX gives the directory name in dir its owner's rwx, through a descriptor of
// that very directory (O_PATH|O_NOFOLLOW, chmod through /proc/self/fd), never by name:
// a directory swapped for a symlink meanwhile (another sandbox on the same workspace may
// still run) is not followed, so nothing outside is touched.
func ownerRWX(dir int, name string) error {
	fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o7777|0o700)
	if errors.Is(err, unix.EPERM) {
		// the init's own cleanup runs under the command's seccomp filter, which for a
		// root caller refuses a mode with set-ID bits: without them
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), st.Mode&0o1777|0o700)
	}
	return err
}

// removeAt removes name in the directory dir: a directory with everything in it, by
// descriptor, at most 64 levels deep. A directory in the way that its owner cannot
// write, search or read gets u+rwx (removeNoFollow).
func removeAt(dir int, name string, isDir bool, depth int) error {
	err := removeOne(dir, name, isDir, depth)
	if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
		var st unix.Stat_t
		if unix.Fstat(dir, &st) == nil && unix.Fchmod(dir, st.Mode&0o7777|0o700) == nil {
			err = removeOne(dir, name, isDir, depth)
		}
	}
	return err
}

func removeOne(dir int, name string, isDir bool, depth int) error {
	if !isDir {
		return unix.Unlinkat(dir, name, 0)
	}
	if depth > 64 {
		return unix.ELOOP
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) && ownerRWX(dir, name) == nil {
		fd, err = unix.Openat(dir, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), name)
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			removeAt(fd, n, st.Mode&unix.S_IFMT == unix.S_IFDIR, depth+1)
		}
	}
	f.Close()
	return unix.Unlinkat(dir, name, unix.AT_REMOVEDIR)
}

// makeGroup creates the sandbox's cgroup when the spec has resources. A host or caller
// without a usable cgroup stops the launch when a limit is required (policy.Resources,
// a flag), and is noted otherwise (the profile's defaults, or best effort).
func (c *Cmd) makeGroup() error {
	if c.Spec.Linux == nil || c.Spec.Linux.Resources == nil {
		return nil
	}
	var info cgroup.LimitsInfo
	if raw, ok := c.Spec.Annotations[cgroup.LimitsAnnotation]; ok {
		if err := json.Unmarshal([]byte(raw), &info); err != nil {
			return &SetupError{Step: "cgroup", Err: fmt.Errorf("annotation %s: %w", cgroup.LimitsAnnotation, err)}
		}
	}
	if err := fault.Check("cgroup"); err != nil {
		return &SetupError{Step: "cgroup", Err: err}
	}
	g, err := cgroup.New(c.Spec.Linux.Resources, cgroup.Options{Parent: info.CgroupParent})
	if err == nil {
		c.group = g
		return nil
	}
	if len(info.Required) > 0 && !info.BestEffort {
		return &SetupError{Step: "cgroup", Err: fmt.Errorf("the limits asked for (%s) cannot be applied: %w; "+
			"run as root, name a cgroup v2 group delegated to you with --cgroup-parent (cgroup v2 hosts), or accept running without them with --limits best-effort",
			strings.Join(info.Required, ", "), err)}
	}
	c.limits = err.Error()
	return nil
}

// dropGroup removes the cgroup, once the sandbox is gone.
func (c *Cmd) dropGroup() {
	if c.group != nil {
		c.group.Destroy()
		c.group = nil
	}
}

// LimitsNote says why the sandbox runs without cgroup limits, after Start ("" when it
// has them, or none were asked for).
func (c *Cmd) LimitsNote() string { return c.limits }

// namespaceEvent is the first event: the init's pid and namespaces, and for a root
// caller the host id the command runs as (or why it kept uid 0).
func (c *Cmd) namespaceEvent() Event {
	e := namespaceEvent(c.init.pid)
	if c.hostID != nil {
		id := int64(c.hostID.id)
		e.HostUID = &id
	}
	e.IdentityMap = c.identityMap
	return e
}
