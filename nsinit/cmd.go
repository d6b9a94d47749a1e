package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Cmd is a command to run in a new sandbox, shaped like os/exec.Cmd: configure it,
// then Start and Wait, or Run. The sandbox is described entirely by Config (compile one
// with the policy package, or turn a runtime-spec config.json into one with
// config.FromSpec); the command is Config.Process.Args. A config that does not pass
// config.Validate is refused (*SetupError, step "config").
//
// The binary is re-executed through /proc/self/exe as the init stage, so a program
// using Cmd must call Init first in main.
type Cmd struct {
	Config *config.Config

	// Stdin, Stdout and Stderr are given to the command. An *os.File is passed as the
	// descriptor itself (a terminal stays a terminal); other readers and writers are
	// copied through a pipe; nil means /dev/null.
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Timeout, if positive, kills the whole sandbox after this wall-clock time
	// (Result.TimedOut, ExitCode 124). Config.Timeout (the policy's) applies too: the
	// shorter of the two wins, so a caller can only shorten the policy's limit.
	Timeout time.Duration

	// Events, if set, receives the status events as they happen, from the goroutines
	// of Start and Wait: the init's pid and namespaces, the command's exec, its exit,
	// or the error that stopped the launch.
	Events func(Event)

	// TTY, for a command of a Session, gives it a new pseudo-terminal of the sandbox's
	// own devpts as stdin, stdout, stderr and controlling terminal (so job control
	// works); Stdin, Stdout and Stderr are then unused, and Terminal returns the master
	// after Start.
	TTY bool
	// TTYSize is the terminal's size when the command starts (0: the kernel's 0x0).
	TTYSize WindowSize
	// NetEvents, if set, receives the egress proxy's status lines (Config.Egress,
	// Config.HostPorts): one per denied connection, one per allowed connection when it
	// closes, from the proxy's goroutines, one at a time, the last before Wait returns. NetDenied, if
	// set, receives each denial's message ("blocked by gosbx policy: …"), for the
	// caller's stderr; past a bound they are withheld, and NetWithheld, if set, receives
	// their number at most once a second (egress.Proxy.Withheld). For a command of a
	// Session they are not called, and Start refuses them (an error naming
	// NewSessionNet): the session's one proxy serves every command, its lines go to
	// SessionNet.Events with the Origin of the command that made each.
	NetEvents   func(egress.Event)
	NetDenied   func(msg string)
	NetWithheld func(n int)
	sessNet     *SessionNet // a session's routing of NetEvents (egress_origin.go)

	// TeardownLater makes Wait return once the init has reported the command's exit,
	// which it does when every other process of the sandbox is dead (so none outlives
	// Wait, and the after-run cleanup has happened), without waiting for the init's own
	// exit and the kernel's teardown of the namespaces; a goroutine reaps the init
	// reapLater after Wait (for a program that exits before, as gosbx exec does, the
	// kernel does). Not for a sandbox with a cgroup (the group is removed once the init
	// has left it, before Wait returns) or a pooled command.
	TeardownLater bool

	// JournalsCompleted says the caller ran cleanup.CompleteJournals just before Start
	// (gosbx exec does, before its policy step looks at the workspace): Start then does
	// not list and read the journal directory a second time, and only checks that the
	// journal and seal directories lie outside what the sandbox can write
	// (cleanup.CheckOutside), which it does for every launch.
	JournalsCompleted bool

	// Prestarted, if set, is an init cloned ahead by Prestart, before Config was built.
	// Start takes it when its clone parameters are those Config needs (namespaces, id
	// maps, host id range, no CPU affinity, no cgroup v2 group, no egress or port
	// forwards) and Stdin, Stdout and Stderr are the ones it was given; otherwise Start
	// kills and reaps it and clones the init anew, as without it. Either way Start
	// clears the field, and the Cmd runs exactly its Config. A Pool's or a Session's
	// command never takes one (Start closes it). A Prestarted is for one Cmd: the
	// first to Start with it has it (its sandbox id too); another given the same one,
	// or one given it after Close, leaves it alone and runs as without it.
	Prestarted *Prestarted

	// Result is set by Wait once the sandbox has ended.
	Result *Result

	init     *initProc
	own      owner // what holds the sandbox from outside: life pipe, cgroup, host id
	sync     *syncReader
	syncFile *os.File
	start    time.Time
	timer    *time.Timer
	mu       sync.Mutex
	timedOut bool
	started  bool // the init was cloned
	waited   bool

	identityMap string // why a root caller's command kept host uid 0 (RootID.AllowHostRoot)

	pool  *Pool      // set by Pool.Command: Start takes a sandbox built ahead
	ctl   *os.File   // a pooled init's socket (fd 3 inside): the process and its stdio go there
	stdio *stdioCopy // a pooled command's stdio pipes, copied until Wait

	session bool     // the init of a Session (NewSession): it serves requests
	guarded bool     // a session command that passed its session's guard (endGuard)
	counted bool     // a session command its session counts as running (endCount)
	sess    *Session // set by Session.Command: Start asks the session's init
	sessPid int      // a session command's pid in the init's pid namespace
	// sessLimitEvents are the session's cgroup's OOM kills and pids-limit refusals
	// when the session command was sent (cgroup.Group.LimitEvents)
	sessLimitEvents [2]int64
	// sessRemoved, sessNotRemoved: what the session's cleanup before this command's
	// start removed or could not (Session.Cleanup), reported with its exit
	sessRemoved, sessNotRemoved []string
	hostPid                     int      // and on the host
	pty                         *os.File // a session command's terminal master (TTY)

	setupOut *setupOutput // the init's fd 2 until it restores the command's stderr
}

// Command returns a Cmd that runs cfg.Process in a sandbox built from cfg.
func Command(cfg *config.Config) *Cmd { return &Cmd{Config: cfg} }

// Run starts the command and waits for it. See Start and Wait for the errors.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Start clones the init stage into new namespaces, sends it the config, and returns once
// the command is running. A sandbox that could not be built gives a *SetupError, a
// command that could not be executed an *ExecError; in both cases the command never ran
// and nothing is left running.
//
// Every descriptor of the calling process above 2 is marked close-on-exec first, so
// nothing but the stdio reaches the sandbox.
func (c *Cmd) Start() error {
	if c.Prestarted != nil && (c.pool != nil || c.sess != nil || c.TTY || c.init != nil) {
		c.Prestarted.Close()
		c.Prestarted = nil
	}
	if !c.TTY && !c.Prestarted.hasStdio(c.Stdin, c.Stdout, c.Stderr) {
		// Every path of a Cmd (Go or raw init, pooled, a session's) starts here: before
		// anything is built or a pooled sandbox taken, a descriptor the command could
		// reach outside through is refused. Not again for the stdio a Prestarted init
		// was given (Prestart checked it): ~5 µs a stream here, three syscalls.
		if err := checkStdio(c.Stdin, c.Stdout, c.Stderr); err != nil {
			c.Prestarted.Close()
			c.Prestarted = nil
			return c.fail(&SetupError{Step: "stdio", Err: err})
		}
	}
	if c.pool != nil {
		return c.startPooled()
	}
	if c.sess != nil {
		return c.startInSession()
	}
	if c.TTY {
		return c.fail(&SetupError{Step: "config", Err: errors.New("TTY is for a command of a Session")})
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

// spawn clones the init stage with c.Config and sends it the config; the init's cgroup
// placement runs beside its setup and reports on the returned channel. A pooled init
// (Pool) waits on its socket for the process once its sandbox is built; its stdio is
// /dev/null until then.
//
// Only what the clone needs comes before it (the namespaces, the id mappings, a root
// caller's host id, a cgroup v2 group); the rest (the bind sources, a root caller's
// idmaps, the encoded config) is done while the new init's Go
// runtime starts, which takes ~1.5 ms, and sent on its socket.
func (c *Cmd) spawn(pooled bool) (_ <-chan error, err error) {
	spec := c.Config
	// An init cloned ahead (Prestart) is taken when it is the one spec needs, and
	// otherwise killed before this launch clones its own; on any failure before, it is
	// killed and reaped too.
	pre := c.takePrestarted(pooled)
	defer pre.Close()
	c.own.sandboxID()
	err = spec.Validate()
	if err == nil && !pooled && spec.Process == nil {
		err = errors.New("the config has no process")
	}
	if err != nil {
		return nil, c.fail(&SetupError{Step: "config", Err: err})
	}
	if spec.Linux != nil && spec.Linux.Resources != nil && spec.Linux.Resources.Pids != nil &&
		spec.Linux.Resources.Pids.Limit != nil && *spec.Linux.Resources.Pids.Limit > 0 &&
		*spec.Linux.Resources.Pids.Limit < SetupPids {
		// Refused before the clone: under it the init could fork and then die on a
		// thread it cannot create, with its runtime's crash report on the command's stderr.
		return nil, c.fail(&SetupError{Step: "pids", Err: setupPidsError(spec, "")})
	}
	// What the sandbox's binds need and the policy only named: created now, by the
	// owner of the launch (policy.Build writes nothing).
	if err := cleanup.MakeDirs(spec.MakeDirs); err != nil {
		return nil, c.fail(&SetupError{Step: "config", Err: err})
	}
	rng, mapped := rootMapping(spec)
	mapped = mapped && c.identityMap == ""
	var hid *hostID
	if mapped {
		// A root caller: the command runs as a host id of the range, never uid 0.
		if hid = pre.takeHostID(rng, false); hid == nil {
			hid, err = takeHostID(rng, c.own.sandboxID())
		}
		if err != nil {
			return nil, c.fail(&SetupError{Step: "host id", Err: err})
		}
		defer func() {
			if err != nil {
				pre.Close() // the init cloned as hid first: the id is free only once it is gone
				hid.release()
			}
		}()
		spec = withHostID(spec, hid.id)
	}
	var nsOwner *hostID // a host id that owns the user namespace of a uid 0 mapped to itself
	if !mapped {
		if r, ok := ownerRange(spec); ok {
			if nsOwner = pre.takeHostID(r, true); nsOwner == nil {
				nsOwner, err = takeHostID(r, c.own.sandboxID())
			}
			if err != nil {
				return nil, c.fail(&SetupError{Step: "host id", Err: err})
			}
			defer func() {
				if c.own.nsOwner != nsOwner { // the launch failed
					pre.Close() // the init that owns it first: the id is free only once it is gone
					nsOwner.release()
				}
			}()
		}
	}
	if err := fault.Check("config"); err != nil {
		return nil, c.fail(&SetupError{Step: "config", Err: err})
	}
	// the sandbox's user namespace limits, half of the caller's (userlimits.go); none
	// where a host id of the sandbox's own owns its user namespace (ownUserCounts)
	if mapped || nsOwner != nil {
		spec = ownUserCounts(spec)
	} else if spec, err = withUserCounts(spec); err != nil {
		return nil, c.fail(&SetupError{Step: "user counts", Err: err})
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
		c.own.nproc = true
	} else {
		// Where no cgroup can be had, the process limit is RLIMIT_NPROC in the
		// sandbox's fresh user namespace (nprocInUserNS).
		limit, ok := nprocLimit(spec)
		ok = ok && nprocInUserNS(spec)
		if err := c.own.makeGroup(c.Config, ok); err != nil {
			return nil, c.fail(err)
		}
		switch {
		case c.own.nproc && pooled:
			c.own.nprocLimit = limit // the process, when it comes, gets it (startPooled)
		case c.own.nproc:
			spec = withRlimit(spec, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Hard: limit, Soft: limit})
		}
	}
	// the group's limits, seen under /sys/fs/cgroup (sysfs.go)
	spec = withCgroupMounts(spec, c.own.group)
	cpus, cpuList, err := sandboxCPUs(spec, c.own.sandboxID()) // --cpus N: on ceil(N) CPUs (affinity.go)
	if err != nil {
		c.own.dropGroup()
		return nil, c.fail(&SetupError{Step: "cpu affinity", Err: err})
	}
	c.own.cpus = cpuList
	// fd 7, with egress or port forwards: the socket pair on which the init sends its
	// listening sockets and connects the forwards (egress.go, publish.go)
	var egressR, egressW *os.File
	var egressPolicy *egress.Policy
	if spec.Egress != nil {
		if egressPolicy, err = egress.NewPolicy(spec.Egress.Allow, spec.Egress.Deny); err != nil {
			c.own.dropGroup()
			return nil, c.fail(&SetupError{Step: "egress", Err: err})
		}
	}
	var pub *publisher
	if len(spec.Publish) > 0 {
		if err = fault.Check("publish"); err == nil {
			pub, err = listenPublish(spec.Publish)
		}
		if err != nil {
			c.own.dropGroup()
			return nil, c.fail(&SetupError{Step: "publish", Err: err})
		}
		defer func() {
			if c.own.publisher != pub {
				pub.close() // the launch failed before its owner took it
			}
		}()
	}
	if spec.Egress != nil || pub != nil || len(spec.HostPorts) > 0 {
		if egressR, egressW, err = egressPair(); err != nil {
			c.own.dropGroup()
			return nil, c.fail(&SetupError{Step: "pipe", Err: err})
		}
	}
	cgroupFd := -1
	if c.own.group != nil {
		cgroupFd = c.own.group.CloneFd()
	}
	params := cloneParams{args: initArgs(c.session, pooled, mapped), sys: initSysAttr(spec, mapped, nsOwner != nil, cgroupFd),
		cpus: cpus, egressR: egressR, nsEvent: c.Events != nil || pooled || c.session}
	switch {
	case mapped:
		params.as = hid
	case nsOwner != nil:
		params.as = nsOwner
	}
	var l *initLaunch
	var raw *rawLaunch
	var step string
	goInit := true
	if rawWanted(spec, &params, pooled, c.session, c.own.group) {
		// the raw init (rawlaunch.go): no init cloned ahead is taken
		pre.Close()
		var stdio *stdioCopy
		if stdio, err = newStdioCopy(c.Stdin, c.Stdout, c.Stderr); err != nil {
			step = "pipe"
		} else {
			l, raw, step, err = launchRaw(spec, params, stdio, c.own.group)
		}
		// A plan larger than the raw init holds (its registers, ops or arena: a config
		// with very many binds, review11 F3) is found before any clone: the Go init sets
		// that sandbox up, as any config rawEligible refuses (nothing was started, and
		// the stdio copy was ended unread)
		goInit = errors.Is(err, rawplan.ErrFull)
		if goInit {
			l, raw, step, err = nil, nil, "", nil
		}
	}
	if goInit && rawLive.Load() {
		pre.Close()
		step, err = "clone", errRawLive
	} else if goInit {
		if l = pre.take(&params, c.Stdin, c.Stdout, c.Stderr); l == nil {
			pre.Close() // not the init this config needs: gone before another is cloned
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
				step = "pipe"
			} else {
				l, step, err = launchInit(params, stdio)
			}
		}
	}
	if egressR != nil {
		egressR.Close()
	}
	if err == nil && egressW != nil {
		// served from when the init sends its sockets; ended by release
		c.own.startNet(egressPolicy, spec.Hostname, egressW, c.NetEvents, c.NetDenied, c.NetWithheld, pub, spec.Publish, spec.HostPorts, capturePorts(spec), c.netOrigin())
		egressW = nil
	}
	if egressW != nil {
		egressW.Close()
	}
	if err != nil {
		c.own.dropGroup()
		var me *mounts.Error
		if !goInit && step == "idmap" && mapped && spec.RootID.AllowHostRoot && errors.As(err, &me) && me.Op == "idmap" && errors.Is(err, unix.EINVAL) {
			// the raw init's trees (launchRaw), as the Go init's below: the policy
			// accepts host uid 0 where a bind cannot be idmapped
			c.identityMap = err.Error()
			hid.release()
			c.own.nproc = false
			return c.spawn(pooled)
		}
		if step == "clone" && mapped && errors.Is(err, unix.EACCES) {
			return nil, c.fail(&SetupError{Step: "clone", Err: err, Hint: fmt.Sprintf("a root caller's init runs as the unprivileged "+
				"host id %d: the gosbx binary must be executable by other users, e.g. mode 0755", hid.id)})
		}
		return nil, c.fail(&SetupError{Step: step, Err: err})
	}
	c.init, c.start = l.init, l.start
	stdio, specW, syncR, lifeW, setupR := l.stdio, l.specW, l.syncR, l.lifeW, l.setupR
	c.own.life, c.syncFile, c.sync = lifeW, syncR, newSyncReader(syncR)
	if raw != nil {
		c.sync.raw = raw.next
	}
	c.setupOut = readSetupOutput(setupR)
	c.started = true
	if raw == nil {
		if err := c.sendSpec(spec, specW, mapped, hid); err != nil {
			specW.Close()
			c.stdio = stdio // aborted by reapFailed: nothing was read
			c.reapFailed()
			c.stdio = nil
			if ws := c.init.wait(); ws.Exited() && (errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)) {
				// it closed its socket by exiting before it read its config: say why that is
				// (a quick start ends before the spec is sent)
				err = &SetupError{Step: "init", Err: diedEarly(ws, c.setupOut.summary())}
			}
			allow := spec.RootID != nil && spec.RootID.AllowHostRoot
			var me *mounts.Error
			if mapped && allow && errors.As(err, &me) && me.Op == "idmap" && errors.Is(err, unix.EINVAL) {
				// The policy accepts host uid 0 where a bind cannot be idmapped.
				c.identityMap = err.Error()
				hid.release()
				c.init, c.started, c.waited, c.own.nproc = nil, false, false, false
				return c.spawn(pooled)
			}
			var se *SetupError
			if !errors.As(err, &se) {
				err = &SetupError{Step: "idmap", Err: err}
			}
			return nil, c.fail(err)
		}
	}
	if mapped {
		c.own.hostID = hid
	}
	c.own.nsOwner = nsOwner
	if pooled {
		c.ctl = specW
		stdio.abort() // nothing to copy: /dev/null until the process comes
	} else {
		if specW != nil {
			specW.Close()
		}
		stdio.run()
		c.stdio = stdio // Wait waits for the copies
	}
	if c.own.nproc {
		cgroup.CollectStale() // groups of killed launchers; this launch makes none
	}
	// cgroup v1: place the init while it builds the sandbox (a v1 migration waits for an
	// RCU grace period, milliseconds); the init forks the command only after the "go"
	// byte, so the command and all it starts are in the group from birth. On failure
	// the init is killed before it gets the byte.
	placed := make(chan error, 1)
	go func() {
		var err error
		if c.own.group != nil {
			// (the raw init never joins: each command does, in its process stage)
			if err = fault.Check("cgroup place"); err == nil && raw == nil {
				err = c.own.group.Add(c.init.pid)
			}
		}
		if err == nil {
			err = c.beginJournal(spec)
		}
		if err != nil {
			c.init.kill()
		} else {
			c.own.life.Write([]byte{c.goAhead(pooled)})
		}
		placed <- err
	}()
	return placed, nil
}

// beginJournal records the after-run cleanup this launch owes (cleanup.BeginJournal),
// before the init may fork the command: should this process and the init both die
// before it is done, the next launch of this user completes it. Journals that earlier
// launches left (their launcher and init gone) are completed first, unless the caller
// did so (JournalsCompleted). Every launch, whatever it owes, refuses to run when the
// journal or seal directory lies in a tree its sandbox can write
// (cleanup.CheckOutside): a sandbox there could forge journals.
func (c *Cmd) beginJournal(spec *config.Config) error {
	var writable []string
	for _, m := range spec.Mounts {
		if m.Type == "bind" && !slices.Contains(m.Options, "ro") {
			writable = append(writable, m.Source)
		}
	}
	// CompleteJournals checks CheckOutside first and does nothing when it fails: only
	// then is it asked again, for the error. What it cannot complete, a squatted
	// directory included, fails only a launch that must write a journal there
	// (BeginJournal).
	var err error
	if c.JournalsCompleted {
		err = cleanup.CheckOutside(writable)
	} else if _, _, cerr := cleanup.CompleteJournals(writable); cerr != nil {
		err = cleanup.CheckOutside(writable)
	}
	if err == nil && len(spec.Cleanup) > 0 {
		if err = fault.Check("journal"); err == nil {
			c.own.journal, err = cleanup.BeginJournal(spec.Cleanup, c.init.pid, writable)
		}
	}
	if err != nil {
		return &SetupError{Step: "journal", Err: err}
	}
	return nil
}

// sendSpec sends a cloned init its config (with the compiled seccomp program) and the
// bind sources: O_PATH descriptors of the sources for a caller other than root, trees
// cloned by the launcher for root, their read-write ones idmapped to the owner's host
// id (mapped). The init waits for them before any mount. Errors are *SetupError, or
// an idmap *mounts.Error the caller may retry without the mapping.
func (c *Cmd) sendSpec(spec *config.Config, sock *os.File, mapped bool, hid *hostID) (err error) {
	frame := config.Encode(spec)
	if len(frame) > maxFrame {
		return &SetupError{Step: "config", Err: fmt.Errorf("the config is %d bytes encoded, more than %d", len(frame), maxFrame)}
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
		var owners []fileOwner
		if err == nil {
			plan, owners, err = idmapPlan(spec, trees)
		}
		if err != nil {
			return &SetupError{Step: "open bind source", Err: err}
		}
		self := fileOwner{spec.Linux.UIDMappings[0].ContainerID, spec.Linux.GIDMappings[0].ContainerID}
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
	if err := writeFrame(sock, frame, nil); err != nil {
		return &SetupError{Step: "config", Err: fmt.Errorf("send the config: %w", err)}
	}
	if err := sendFds(sock, fds); err != nil {
		return &SetupError{Step: "open bind source", Err: fmt.Errorf("send the bind sources: %w", err)}
	}
	return nil
}

func (c *Cmd) startTimer() {
	if d := c.limit(); d > 0 {
		c.timer = time.AfterFunc(d, c.expire)
	}
}

// limit is the wall-clock limit in force: the shorter positive one of Cmd.Timeout and
// Config.Timeout, or 0 for none.
func (c *Cmd) limit() time.Duration {
	d := c.Timeout
	if c.Config != nil && c.Config.Timeout > 0 && (d <= 0 || c.Config.Timeout < d) {
		d = c.Config.Timeout
	}
	return max(d, 0)
}

// awaitExec waits for the init's report on the command's execve and, when placed is
// not nil, for the init's cgroup placement.
func (c *Cmd) awaitExec(placed <-chan error) error {
	pid := c.init.pid
	m, ok := c.sync.next()
	if placed != nil {
		if err := <-placed; err != nil {
			c.reapFailed()
			var se *SetupError
			if errors.As(err, &se) {
				return c.fail(se)
			}
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
			c.Events(Event{Exec: true, Pid: childPid(pid, m.Pid), Path: m.Path})
		}
		if c.goAhead(c.ctl != nil) == lifeGo {
			c.own.life.Write([]byte{lifeAck}) // the reaper may reap the command now
		}
		return nil
	case ok && m.Type == msgExecError:
		c.reapFailed()
		return c.fail(&ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)})
	case ok && m.Type == msgError:
		pids := c.own.group != nil && c.own.group.Stats().PidsMaxHit
		c.reapFailed()
		if pids {
			// a fork or thread the pids limit refused (EAGAIN), said as such
			return c.fail(&SetupError{Step: "pids", Err: fmt.Errorf("%s: %w; %w", m.Step, m.err(), setupPidsError(c.Config, ""))})
		}
		return c.fail(&SetupError{Step: m.Step, Err: m.err()})
	}
	if forking {
		// The init ended once the command may have started (killed from outside, or
		// crashed): the command counts as started, and Wait reports how the sandbox
		// ended and removes what must not outlive it, as for any command.
		return nil
	}
	// The init died before reporting: killed (timeout, by the memory limit, or by
	// someone) or crashed.
	var stats cgroup.Stats
	if c.own.group != nil {
		stats = c.own.group.Stats()
	}
	c.reapFailed()
	crash := c.setupOut.summary()
	if c.isTimedOut() {
		return c.fail(&SetupError{Step: "timeout", Err: fmt.Errorf("the %v wall-clock limit expired before the command started", c.limit())})
	}
	if stats.OOMKilled {
		return c.fail(&SetupError{Step: "memory", Err: setupOOM(c.Config, c.init.wait())})
	}
	if stats.PidsMaxHit {
		return c.fail(&SetupError{Step: "pids", Err: setupPidsError(c.Config, diedHow(c.init.wait(), crash))})
	}
	return c.fail(&SetupError{Step: "init", Err: diedEarly(c.init.wait(), crash)})
}

// fail reports err as an event and returns it; a *SetupError gets its Hint.
func (c *Cmd) fail(err error) error {
	var se *SetupError
	if errors.As(err, &se) && se.Hint == "" {
		se.Hint = Hint(se.Step, se.Err)
	}
	if c.Events != nil {
		var ee *ExecError
		switch {
		case se != nil:
			c.Events(Event{Error: se.cause(), Step: se.Step, Status: ExitSetup})
		case errors.As(err, &ee):
			c.Events(Event{Error: ee.Error(), Step: "exec", Status: ee.ExitCode()})
		case errors.As(err, new(*StartUnknownError)):
			c.Events(Event{Error: err.Error(), Step: "session", Status: ExitKilled})
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
	c.own.journal.Done() // the command never ran: nothing is owed
	if c.stdio != nil {
		c.stdio.wait()
	}
	c.release()
	c.own.dropGroup()
}

func (c *Cmd) release() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.syncFile.Close()
	if c.ctl != nil {
		c.ctl.Close()
	}
	c.own.release()
	c.waited = true
}

func (c *Cmd) expire() {
	c.mu.Lock()
	c.timedOut = true
	c.mu.Unlock()
	if c.sess != nil {
		c.signalInSession(unix.SIGKILL, true) // the command's process group, not the session
		return
	}
	c.init.kill()
}

func (c *Cmd) isTimedOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

// Signal sends sig to the command; the sandbox's init forwards SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM and SIGWINCH to it, each but SIGWINCH followed by
// SIGCONT (timeout(1)'s way: a stopped command gets it); SIGTSTP, SIGTTIN and SIGTTOU
// stop every process of the sandbox (SIGSTOP) and SIGCONT continues them all. SIGKILL
// kills the whole sandbox. For a command of a Session, any signal goes to the command
// alone, through the session's init, while it runs (SignalGroup: to its process group),
// with the same SIGCONT after it, and SIGTSTP, SIGTTIN, SIGTTOU and SIGCONT act on its
// process group.
func (c *Cmd) Signal(sig os.Signal) error {
	if c.sess != nil {
		ss, ok := sig.(syscall.Signal)
		if !ok {
			return errors.New("nsinit: unsupported signal type")
		}
		return c.signalInSession(ss, false)
	}
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
	if c.sess != nil {
		return c.waitInSession()
	}
	var status *int
	var left message
	for {
		m, ok := c.sync.next()
		if !ok {
			break
		}
		if m.Type == msgExit {
			s := m.Status
			status, left = &s, m
			break // the last message: every process of the sandbox but its init is gone
		}
	}
	// With the exit report every process of the sandbox but pid 1 is dead (reap,
	// endRest): no process of the command's outlives Wait, and the commit-mode cleanup
	// below sees what they left. With TeardownLater, pid 1's own exit and the kernel's
	// teardown of the namespaces are not waited for, unless the sandbox has a cgroup,
	// which cannot be removed before pid 1 has left it and must not outlive Wait. The
	// host ids are let go at once: the init holds no process and runs only its exit.
	// Without the report (the init killed, or a timeout) the init's exit is what ends
	// the sandbox: waited for.
	later := c.TeardownLater && status != nil && c.pool == nil && c.own.group == nil
	var initStatus unix.WaitStatus
	if later {
		// reaped, for a caller that goes on. Not at once: a goroutine blocked in waitid
		// makes the runtime start a thread for the caller's goroutines, ~0.1-0.25 ms
		// of a gosbx exec that exits before the init has
		time.AfterFunc(reapLater, func() { c.init.wait() })
	} else {
		initStatus = c.init.wait()
	}
	if c.stdio != nil {
		c.stdio.wait()
	}
	wall := time.Since(c.start)
	c.release()
	r := &Result{Wall: wall, TimedOut: c.isTimedOut(), HostUID: -1, IdentityMap: c.identityMap, LeftRunning: left.Left}
	if left.Names != "" { // each name NUL-ended
		r.LeftNames = strings.Split(strings.TrimSuffix(left.Names, "\x00"), "\x00")
	}
	if c.own.hostID != nil {
		r.HostUID = int64(c.own.hostID.id)
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
	r.Removed, r.NotRemoved = c.own.afterRun(c.Config)
	r.Limits = string(cgroup.None)
	if c.own.nproc {
		r.Limits = string(cgroup.Rlimit)
	}
	r.CPUs = c.own.cpus
	if c.own.group != nil {
		st := c.own.group.Stats()
		r.Limits = string(c.own.group.Kind())
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
			c.pool.removeLater(c.own.group)
			c.own.group = nil
		} else {
			c.own.dropGroup()
		}
	}
	c.Result = r
	if c.pool != nil {
		c.pool.refill()
	}
	if c.Events != nil {
		code, to, ms := r.ExitCode, r.TimedOut, wall.Milliseconds()
		e := Event{ExitCode: &code, Signal: int(r.Signal), TimedOut: &to, WallMs: &ms, Removed: r.Removed, NotRemoved: r.NotRemoved,
			Limits: r.Limits, LimitsNote: c.own.limits, CPUs: r.CPUs, LeftRunning: r.LeftRunning}
		if r.Limits == string(cgroup.V1) || r.Limits == string(cgroup.V2) { // usage is known only through a cgroup
			oom, cpu := r.OOMKilled, (r.CPUUser + r.CPUSystem).Microseconds()
			e.OOMKilled, e.CPUUsec, e.LimitHit, e.MemoryPeak, e.PidsPeak = &oom, &cpu, r.LimitHit, r.MemoryPeak, r.PidsPeak
			e.CPUUserUsec, e.CPUSystemUsec = r.CPUUser.Microseconds(), r.CPUSystem.Microseconds()
		} else if r.Limits == string(cgroup.Rlimit) {
			e.UsageNote = rlimitUsageNote
		}
		c.Events(e)
	}
	if r.Success() {
		return nil
	}
	return &ExitError{r}
}

// rlimitUsageNote is the exit event's usage-note under RLIMIT_NPROC alone.
const rlimitUsageNote = "unknown: no cgroup counts the sandbox's processes, memory or CPU time; " +
	"the process limit holds as RLIMIT_NPROC, whose peak and hits the kernel does not report"

// reapLater is how long after Wait a TeardownLater init is reaped.
const reapLater = 50 * time.Millisecond

// runCleanup carries out the config's after-run cleanup (Config.Cleanup): the paths
// removed, and what could not be removed ("path: reason").
func runCleanup(spec *config.Config) (removed, failed []string) {
	return cleanup.Run(spec.Cleanup)
}

// SandboxID is the sandbox's own id, after Start: its cgroup is gosbx-<id> and a root
// caller's host id lock file holds it. 16 hex digits.
func (c *Cmd) SandboxID() string { return c.own.id }

// LimitsNote says why the sandbox runs without cgroup limits, after Start ("" when it
// has them, or none were asked for).
func (c *Cmd) LimitsNote() string { return c.own.limits }

// namespaceEvent is the first event: the init's pid and namespaces, and for a root
// caller the host id the command runs as (or why it kept uid 0).
func (c *Cmd) namespaceEvent() Event {
	var e Event
	if c.init.ns != nil {
		e = *c.init.ns
	} else {
		e = namespaceEvent(c.init.pid)
	}
	e.SandboxID = c.own.id
	if c.own.hostID != nil {
		id := int64(c.own.hostID.id)
		e.HostUID = &id
	}
	e.IdentityMap = c.identityMap
	return e
}
