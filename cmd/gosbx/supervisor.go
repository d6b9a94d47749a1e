package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/memtrim"
	"github.com/gosbx/gosbx/internal/rawjson"
	"github.com/gosbx/gosbx/internal/session"
	"github.com/gosbx/gosbx/internal/sigpipe"
	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// supervisorArg, as argv[1], makes the binary a session's supervisor (started by
// `gosbx session start`, detached: a session of its own, stdio /dev/null). fd 3 carries
// its startData (JSON), fd 4 (a socket) its answer: "0" once the session is ready, "1"
// and the error that stopped it otherwise; after "0" the starter answers "k" once it
// has it, and a session whose starter is gone without it is ended (the caller that
// killed `session start` took it as failed).
const supervisorArg = "gosbx-session-supervisor"

// startData is what `session start` hands its supervisor.
type startData struct {
	Name, Dir string
	// Config travels as Init and Launch (startWire), not as JSON of its own.
	Config *config.Config `json:"-"`
	Policy string         // the summary `session ls` shows
	// Bounds are what the session's policy lets a request set (--env, --chdir,
	// --timeout), held to the rules of gosbx exec's flags.
	Bounds policy.Bounds
	// DieWithOwner: fd 5 is a pidfd of a process whose end ends the session.
	DieWithOwner bool
	IdleTimeout  time.Duration // 0: none
	Lifetime     time.Duration // the policy's --timeout: the session's own, 0: none
	// Protected is what the search for protected paths found before the build: a
	// request is refused while one has appeared since that no command made (the
	// session's config.Guard: policy.SessionGuard)
	Protected policy.ProtectedScan
	// NotFound explains a command's exit 127 as gosbx exec does, from the host as the
	// session's start saw it (its PATH and HOME: those its binds were chosen from). It
	// travels as NotFoundJSON, decoded by the supervisor at the first exit 127 only
	// (lazyNotFound).
	NotFound     policy.NotFoundContext `json:"-"`
	NotFoundJSON json.RawMessage        `json:",omitempty"`
	// GitMode is the policy's filesystem.git: a failed command's git notes follow it
	// (gitFailureNotes), as gosbx exec's do
	GitMode string `json:",omitempty"`
	// Credentials are the policy's filesystem.credentials: the local-remote note never
	// advises showing one (gitRemoteNote)
	Credentials []string `json:",omitempty"`
	// ToolchainAuto: the policy binds the caller's toolchains (--toolchain auto), so a
	// failed command gets no unseenFirstNote
	ToolchainAuto bool `json:",omitempty"`
	// Init is config.Encode of Config: what the init is sent (the seccomp program
	// among it, not its source, Linux.Seccomp, which the supervisor never reads).
	Init []byte `json:",omitempty"`
	// Launch are the fields of Config that config.Encode leaves to the launcher.
	Launch *launchFields `json:",omitempty"`
}

// launchFields are the launcher's own fields of a config.Config (config.Encode sends
// the init the rest). The config as JSON cost the supervisor its whole life: encoding/json
// builds a field table and an encoder for every struct type it decodes into (the
// runtime-spec process, mounts, the Linux section...), and the filter went as an array
// of objects; ~500 KiB of allocations that no collection frees in an idle process
// (docs/decisions.md, "The launcher's memory").
type launchFields struct {
	// Resources travel as Res (resourceLimits: the limits gosbx sets, not the
	// runtime-spec's whole resources tree, whose JSON field tables cost the supervisor
	// 53 KiB)
	Resources *specs.LinuxResources `json:"-"`
	Res       *resourceLimits       `json:",omitempty"`
	Limits    config.Limits
	RootID    *config.RootID   `json:",omitempty"`
	MakeDirs  []string         `json:",omitempty"`
	Timeout   time.Duration    `json:",omitempty"`
	Egress    *config.Egress   `json:",omitempty"`
	Publish   []config.Publish `json:",omitempty"`
	HostPorts []uint16         `json:",omitempty"`
	// UserCounts: nil from policy.Build (the supervisor's nsinit then sets its own)
	UserCounts []config.UserCount `json:",omitempty"`
}

// startWire is sd as sent to the supervisor: Init and Launch set from its Config, the
// filter's source left out, NotFoundJSON from NotFound (sd itself unchanged). Errors:
// resources other than those resourceLimits carries; NotFound's encoding.
func startWire(sd *startData) (*startData, error) {
	out := *sd
	nf, err := json.Marshal(rawjson.Escaped(sd.NotFound)) // host paths byte for byte
	if err != nil {
		return nil, fmt.Errorf("encode the session's not-found context: %w", err)
	}
	out.NotFoundJSON = nf
	c := sd.Config
	if c == nil {
		return &out, nil
	}
	enc := *c
	if c.Linux != nil {
		l := *c.Linux
		l.Seccomp = nil
		enc.Linux = &l
	}
	out.Init = config.Encode(&enc)
	out.Launch = &launchFields{Limits: c.Limits, RootID: c.RootID, MakeDirs: c.MakeDirs, Timeout: c.Timeout,
		Egress: c.Egress, Publish: c.Publish, HostPorts: c.HostPorts, UserCounts: c.UserCounts}
	if c.Linux != nil && c.Linux.Resources != nil {
		if out.Launch.Res, err = limitsOf(c.Linux.Resources); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// readStartData decodes the start data from r, and its config from Init and Launch.
func readStartData(r io.Reader) (*startData, error) {
	b, err := readFramed(r)
	if err != nil {
		return nil, err
	}
	var sd startData
	if err := json.Unmarshal(b, &sd); err != nil {
		return nil, err
	}
	if !rawjson.Unescaped(&sd) {
		return nil, errors.New("a string of the start data (base64 after a NUL) does not decode")
	}
	if sd.Init == nil || sd.Launch == nil {
		return nil, errors.New("no config in the start data")
	}
	c, err := config.Decode(sd.Init)
	if err != nil {
		return nil, err
	}
	f := sd.Launch
	if f.Res != nil {
		f.Resources = f.Res.resources()
	}
	c.Limits, c.RootID, c.MakeDirs, c.Timeout, c.Egress, c.Publish, c.HostPorts, c.UserCounts =
		f.Limits, f.RootID, f.MakeDirs, f.Timeout, f.Egress, f.Publish, f.HostPorts, f.UserCounts
	if f.Resources != nil {
		if c.Linux == nil {
			return nil, errors.New("resources without a Linux section in the start data")
		}
		c.Linux.Resources = f.Resources
	}
	sd.Config, sd.Init, sd.Launch = c, nil, nil
	return &sd, nil
}

// stopGrace is how long `session stop` lets the session's processes end after SIGTERM
// before the rest are killed.
const stopGrace = 2 * time.Second

// supervisor is a session's owner: it holds the sandbox (nsinit.Session: the init's
// life pipe, cgroup, host id, cleanup), the session's lock, and serves its control
// socket.
type supervisor struct {
	name  string
	files session.Files
	// lock is the session's lock file, held (flock(2)) for the supervisor's whole
	// life: a field closed at its end, as an *os.File left unreachable is closed by its
	// finalizer at the next GC, and the flock with it (trial finding F12: a second
	// supervisor of the same name started after a GC)
	lock *os.File
	// sock is the identity of the control socket's file as bound (session.RemoveOwn)
	sock    session.FileID
	sess    *nsinit.Session
	routes  *netRoutes // the proxy's lines to the requests (sessionnet.go)
	started time.Time
	// userNS is this process's user namespace (its /proc/self/ns/user link): a peer
	// must be in it (sameUserNamespace); it does not change, so it is read once
	userNS string
	policy string
	bounds policy.Bounds
	// notFound is startData.NotFound, decoded at its first use (withNotFoundHint)
	notFound func() policy.NotFoundContext
	// gitMode is startData.GitMode
	gitMode string
	// credentials is startData.Credentials
	credentials []string
	// toolchainAuto is startData.ToolchainAuto
	toolchainAuto bool
	// trees is startData.Protected: the trees searched after each command for what it
	// left at a name git opens (treeNotes)
	trees policy.ProtectedScan

	mu       sync.Mutex
	closing  bool      // no new command: the session ends (set before sess.Close)
	active   int       // commands running for a client
	last     time.Time // the last request's end
	requests int
	jobs     jobs

	stop     chan struct{}
	stopOnce sync.Once
	trim     *memtrim.Trimmer // the heap returned after requests, once idle
	killNow  atomic.Bool      // session kill: no SIGTERM, no grace
	finished chan struct{}    // closed once the session has ended and its files are gone
	replies  sync.WaitGroup
}

// superviseMain is the supervisor process; its exit status is not read by anyone.
func superviseMain() int {
	slowSysmon() // where the package init could not (another task had the id after the pid)
	ready := os.NewFile(4, "ready")
	fail := func(err error) int {
		ready.Write([]byte("1" + nsinit.ForCLI(err).Error()))
		ready.Close()
		return nsinit.ExitSetup
	}
	sd, err := readStartData(os.NewFile(3, "start"))
	if err != nil {
		return fail(fmt.Errorf("read the session's config: %w", err))
	}
	files := session.FilesOf(sd.Dir, sd.Name)
	lock, err := session.Lock(files)
	if errors.Is(err, session.ErrExists) {
		return fail(fmt.Errorf("session %q is running already (gosbx session stop %s)", sd.Name, sd.Name))
	}
	if err != nil {
		return fail(fmt.Errorf("lock session %q: %w", sd.Name, err))
	}
	// Held to the end: closed when this function returns, after the session's files
	// are removed (an early return exits the process, which ends the lock with it).
	defer lock.Close()
	// A crashed predecessor's socket, if any (its lock was free), and the record of why
	// the last one ended: it is not this one's.
	os.Remove(files.Sock)
	os.Remove(files.Ended)
	// Ends from a signal are orderly: the sandbox stopped, its files removed.
	// Caught by sigpipe, not os/signal, whose thread parked in signal_recv an idle
	// session would keep (docs/decisions.md, "Memory: idle sessions").
	sigf, err := sigpipe.Catch(unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if err != nil {
		session.RemoveOwn(files, lock, session.FileID{})
		return fail(err)
	}
	sigc := make(chan os.Signal, 4)
	go readSignals(sigf, sigc)
	userNS, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		session.RemoveOwn(files, lock, session.FileID{})
		return fail(fmt.Errorf("read this process's user namespace: %w", err))
	}
	routes := &netRoutes{proxied: sd.Config.Egress != nil || len(sd.Config.HostPorts) > 0}
	// the guard of the search made before the build (startData.Protected), which the
	// config's JSON does not carry: the session searches the trees around each command
	// and refuses a request while a repository made between commands is there
	sd.Config.Guard = policy.NewSessionGuard(sd.Name, sd.Protected)
	sess, err := nsinit.NewSessionNet(sd.Config, routes.sessionNet())
	if err != nil {
		session.RemoveOwn(files, lock, session.FileID{})
		return fail(err)
	}
	lfd, err := listen(files.Sock)
	if err != nil {
		sess.Close(0)
		session.RemoveOwn(files, lock, session.FileID{})
		return fail(err)
	}
	sockID := session.IDOf(files.Sock) // no other supervisor binds there: the lock is held
	lock.Truncate(0)
	// Who to wait for once this supervisor is gone (sweepStale): it, and the init, each
	// with its start time (the init is this process's child: its pid cannot be reused
	// before this process is gone).
	fmt.Fprintf(lock, "%v %v\n", refOf(os.Getpid()), refOf(sess.InitPid()))
	sv := &supervisor{name: sd.Name, files: files, lock: lock, sock: sockID, sess: sess, routes: routes, started: time.Now(), userNS: userNS, policy: sd.Policy, bounds: sd.Bounds, notFound: lazyNotFound(sd.NotFoundJSON), gitMode: sd.GitMode, credentials: sd.Credentials, toolchainAuto: sd.ToolchainAuto,
		trees: sd.Protected, last: time.Now(), stop: make(chan struct{}), finished: make(chan struct{}),
		trim: memtrim.New(memtrim.SessionIdle, memtrim.SessionMin, nil)}
	go sv.accept(lfd)
	if !delivered(ready) {
		// the starter is gone without taking "ready": its caller holds the session for
		// failed; ended at once, as by session kill (the wait below breaks on stop)
		sv.killNow.Store(true)
		sv.requestStop()
	}

	var lifetime <-chan time.Time
	if sd.Lifetime > 0 {
		lifetime = time.After(sd.Lifetime)
	}
	ownerGone := make(chan struct{})
	if sd.DieWithOwner {
		go func() {
			fds := []unix.PollFd{{Fd: 5, Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(fds, -1); err != unix.EINTR {
					break
				}
			}
			close(ownerGone)
		}()
	}
	var idle <-chan time.Time
	if sd.IdleTimeout > 0 {
		t := time.NewTicker(min(max(sd.IdleTimeout/4, 10*time.Millisecond), time.Second))
		defer t.Stop()
		idle = t.C
	}
	// why is recorded for the next client that finds no session of this name (trial
	// finding: a session that idled out was only "not running").
	var why string
wait:
	for {
		select {
		case <-sess.Done():
			why = "its sandbox's init exited"
			break wait
		case <-sv.stop:
			why = "gosbx session stop"
			if sv.killNow.Load() {
				why = "gosbx session kill"
			}
			break wait
		case s := <-sigc:
			why = "its supervisor got " + unix.SignalName(s.(unix.Signal))
			break wait
		case <-lifetime:
			why = fmt.Sprintf("its --timeout (%v) expired", sd.Lifetime)
			break wait
		case <-ownerGone:
			why = "the process of --die-with-owner exited"
			break wait
		case <-idle:
			if sv.idleFor() >= sd.IdleTimeout && sess.Processes() == 0 {
				why = fmt.Sprintf("--idle-timeout %v: no command and no process in it for that long", sd.IdleTimeout)
				break wait
			}
		}
	}
	// Not recorded when the name is another supervisor's now: its clients would read
	// this one's end as theirs.
	if session.Holds(files, sv.lock) {
		session.RecordEnd(files, fmt.Sprintf("it ended at %s: %s", time.Now().UTC().Format("15:04:05 UTC"), why))
	}
	unix.Shutdown(lfd, unix.SHUT_RDWR) // no new client
	// No command starts from here on: each one started has its handler counted in
	// replies, whose exit status is sent before this process exits.
	sv.mu.Lock()
	sv.closing = true
	sv.mu.Unlock()
	if sv.killNow.Load() {
		sess.Close(0)
	} else {
		sess.Close(stopGrace)
	}
	cgroup.CollectStale()
	session.RemoveOwn(files, sv.lock, sv.sock)
	close(sv.finished)
	// The answers owed (a command's exit status, the stop's confirmation), bounded: a
	// client that reads none of its frames must not keep the supervisor.
	answered := make(chan struct{})
	go func() { sv.replies.Wait(); close(answered) }()
	select {
	case <-answered:
	case <-time.After(5 * time.Second):
	}
	return 0
}

// delivered sends "0" (ready) on the start socket and reports whether the starter took
// it: its "k", rather than the end of the socket (the starter killed before it could
// return, its caller told nothing of a session).
func delivered(ready *os.File) bool {
	defer ready.Close()
	if _, err := ready.Write([]byte("0")); err != nil {
		return false
	}
	if unix.Shutdown(int(ready.Fd()), unix.SHUT_WR) != nil {
		return false
	}
	b := make([]byte, 1)
	for {
		n, err := ready.Read(b)
		if n == 1 {
			return b[0] == 'k'
		}
		if err != nil {
			return false
		}
	}
}

// listen makes the control socket at path, mode 0600 (in a 0700 directory).
func listen(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	old := unix.Umask(0o177)
	err = unix.Bind(fd, &unix.SockaddrUnix{Name: path})
	unix.Umask(old)
	if err == nil {
		err = unix.Listen(fd, 64)
	}
	if err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "bind", Path: path, Err: err}
	}
	return fd, nil
}

// accept takes the next connection and serves it on this goroutine, a new one taking
// over the accepting first: the thread that accept4 woke goes on with the request
// (its peer checks, its frame), where handing it to a new goroutine put a second
// thread's wake-up between the connect and the first check (docs/decisions.md,
// "Speed, seventh attempt: the session after a pause").
func (sv *supervisor) accept(lfd int) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			return // shut down
		}
		go sv.accept(lfd)
		sv.handle(fd)
		return
	}
}

func (sv *supervisor) requestStop() { sv.stopOnce.Do(func() { close(sv.stop) }) }

func (sv *supervisor) idleFor() time.Duration {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.active > 0 {
		return 0
	}
	return time.Since(sv.last)
}

// handle serves one client connection: only a peer of the session's own uid
// (SO_PEERCRED, unix(7)) is answered at all.
func (sv *supervisor) handle(fd int) {
	defer unix.Close(fd)
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil || int(cred.Uid) != os.Getuid() || !sameUserNamespace(fd, int(cred.Pid), sv.userNS) {
		return
	}
	kind, body, fds, err := session.ReadFrame(fd, 3+1+maxDrains)
	if err != nil {
		return
	}
	// every request is work for the trim (internal/memtrim): a command's, and the
	// info requests every `session ls` and `session start` sends each session
	// (measured: ~20 KiB of heap each)
	sv.trim.Busy()
	defer sv.trim.Done()
	switch kind {
	case session.ReqExec:
		sv.exec(fd, body, fds) // takes the descriptors
		return
	case session.ReqInfo:
		b, _ := json.Marshal(sv.info())
		session.WriteFrame(fd, session.RepInfo, b, nil)
	case session.ReqJobs, session.ReqJobWait, session.ReqJobKill, session.ReqJobLogs:
		sv.jobRequest(fd, kind, body, fds) // takes the descriptors
	case session.ReqStop:
		sv.replies.Add(1)
		defer sv.replies.Done()
		if v, err := session.DecodeUint(body); err == nil && v == 1 {
			sv.killNow.Store(true)
		}
		sv.requestStop()
		<-sv.finished
		session.WriteFrame(fd, session.RepDone, nil, nil)
	}
	closeAll(fds)
}

func closeAll(fds []int) {
	for _, f := range fds {
		unix.Close(f)
	}
}

func (sv *supervisor) info() session.Info {
	sv.mu.Lock()
	n := sv.requests
	sv.mu.Unlock()
	return session.Info{Name: sv.name, State: "running", Pid: os.Getpid(), InitPid: sv.sess.InitPid(),
		SandboxID: sv.sess.SandboxID(), HostUID: max(sv.sess.HostUID(), 0), Started: sv.started.UTC().Format(time.RFC3339),
		AgeSeconds: int64(time.Since(sv.started).Seconds()), Processes: sv.sess.Processes(), Memory: sv.sess.Memory(),
		Requests: n, Policy: sv.policy}
}

// exec runs one client's command in the session: its process is the session's with
// the request's args, its env added, its working directory; its stdio the client's
// own descriptors. It answers the status events (when asked), messages for stderr, and
// last the exit status, by the rules of gosbx exec.
func (sv *supervisor) exec(fd int, body []byte, fds []int) {
	// The client's descriptors, closed once done here (through their os.File alone: a
	// descriptor closed twice could be another goroutine's by then).
	files := make([]*os.File, len(fds))
	for i, f := range fds {
		files[i] = os.NewFile(uintptr(f), "client")
	}
	defer func() {
		for _, f := range files {
			if f != nil { // (nil: handed to drainRelay)
				f.Close()
			}
		}
	}()
	var wmu sync.Mutex
	reply := func(kind byte, b []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		session.WriteFrame(fd, kind, b, nil)
	}
	refuse := func(err error) {
		reply(session.RepMessage, []byte("gosbx: "+nsinit.ForCLI(err).Error()+"\n"))
		reply(session.RepExit, session.EncodeUint(nsinit.ExitSetup))
	}
	req, err := session.DecodeExec(body)
	if err == nil && (req.Drains > maxDrains || len(fds) != 3+btoi(req.Status)+req.Drains) {
		err = fmt.Errorf("the request came with %d descriptors, want stdin, stdout, stderr, with --status-fd it, and the relay's read ends (%d, at most %d)", len(fds), req.Drains, maxDrains)
	}
	for i, name := range [3]string{"stdin", "stdout", "stderr"} {
		// Checked here, not by the client (another process, which could skip it): a
		// directory (O_PATH, namespace, pidfd …) the command could walk the host from.
		// Every request, --detach and --tty too, whose commands get /dev/null, a log or
		// a terminal instead: one rule, before the dispatch (nothing ran: 125).
		if err == nil && i < len(fds) {
			if herr := nsinit.CheckHandedFd(fds[i], name); herr != nil {
				err = &nsinit.SetupError{Step: "stdio", Err: herr}
			}
		}
	}
	if err == nil && req.Status {
		// as gosbx exec refuses it: a status file the command could append to
		err = checkStatusOutsideAs(fds[3], req.StatusFd, sv.sess.Config())
	}
	if err == nil && len(req.Args) == 0 {
		err = errors.New("no command given")
	}
	var proc *specs.Process
	if err == nil {
		proc, err = sv.process(req)
	}
	if err != nil {
		refuse(err)
		return
	}
	sv.mu.Lock()
	if sv.closing {
		sv.mu.Unlock()
		refuse(&nsinit.SetupError{Step: "session", Err: fmt.Errorf("session %q is ending; the command was not started", sv.name)})
		return
	}
	sv.active++
	sv.requests++
	sv.replies.Add(1) // before sess.Close: see superviseMain
	sv.mu.Unlock()
	defer func() {
		sv.mu.Lock()
		sv.active--
		sv.last = time.Now()
		sv.mu.Unlock()
		sv.replies.Done()
	}()
	stdio := files[:3]
	cmd := sv.sess.Command(proc)
	cmd.Timeout = req.Timeout
	if req.Detach {
		sv.detach(cmd, req, reply)
		return
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
	if cmd.TTY = req.TTY; cmd.TTY {
		cmd.TTYSize = nsinit.WindowSize{Rows: req.Rows, Cols: req.Cols}
		// The command's stdio is its own terminal: the caller's descriptors (maybe its
		// terminal) stay here, and the init gets /dev/null in their place.
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	}
	if req.Status {
		cmd.Events = func(e nsinit.Event) {
			b, _ := json.Marshal(e)
			reply(session.RepEvent, b)
		}
		cmd.Events(sv.sess.Event())
	}
	// A session without a proxy has no lines to route: no route, and no /proc walk for
	// the command's host pid (its only use here), on the warm path.
	proxied := sv.routes.proxied
	if proxied {
		sv.routes.begin()
	}
	// From here the command may run before its exec is reported (the init forks it as
	// soon as it has the request): a client that loses this session after this frame
	// must not say 125, "did not run" (the caller may retry it)
	reply(session.RepEvent, dispatchEvent)
	if err := sv.checkShadowed(cmd.Config); err != nil {
		if proxied {
			sv.routes.abort()
		}
		replyStartError(err, reply)
		return
	}
	if err := cmd.Start(); err != nil {
		if proxied {
			sv.routes.abort()
		}
		replyStartError(sv.withNotFoundHint(err, cmd.Config), reply)
		return
	}
	if fault.Check("session slow exec report") != nil {
		// the exec reported late (fault injection test): the command runs, its client
		// has only the dispatch frame
		time.Sleep(5 * time.Second)
	}
	// No bare exec event for a client without --status-fd: the dispatch frame above
	// already told it the command may have run (never 125 after it), and one more frame
	// woke it between the exec and the exit (docs/decisions.md, "Speed, seventh
	// attempt: the session after a pause"). Clients still take one as their sign.
	var pid int
	var lines *lineQueue // the proxy's lines, queued: never written under the routes' lock
	if proxied {
		lines = newLineQueue(reply)
		route := &netRoute{message: lines.message}
		if req.Status {
			route.event = lines.event
		}
		pid = cmd.Pid()
		sv.routes.add(pid, route)
	}
	if pty := cmd.Terminal(); pty != nil {
		// The client copies its terminal to and from the master, and follows its window
		// size (pid 1 set the first); this process keeps no copy (the command sees a hangup when the client
		// is gone).
		wmu.Lock()
		session.WriteFrame(fd, session.RepPTY, nil, []int{int(pty.Fd())})
		wmu.Unlock()
		pty.Close()
	}
	// The client forwards its signals; should it go away before the command ends,
	// the command's process group is killed, as --timeout kills it (what it moved to a
	// session or group of its own goes on, as documented).
	var done atomic.Bool
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			kind, b, _, err := session.ReadFrame(fd, 0)
			if done.Load() {
				return
			}
			if err != nil {
				cmd.SignalGroup(unix.SIGKILL)
				return
			}
			if kind == session.ReqSignal {
				if n, err := session.DecodeUint(b); err == nil && n > 0 && n < 65 {
					cmd.Signal(syscall.Signal(n))
				}
			}
		}
	}()
	err = cmd.Wait() // (its end searched the trees: config.Guard)
	if fault.Check("session slow answer") != nil {
		// the answer late (fault injection test): the session's end must wait for it
		time.Sleep(300 * time.Millisecond)
	}
	if proxied {
		sv.routes.remove(pid) // its connections' last lines first
		lines.close()         // and written, before the exit status
	}
	done.Store(true)
	// The reader is ended once the answer is sent, not before: waking it first put a
	// goroutine hop (its thread woken from recvmsg) between the exit report and the
	// client's answer (docs/decisions.md, "The session's side").
	defer func() {
		unix.Shutdown(fd, unix.SHUT_RD) // ends the reader above, at once
		<-readerDone                    // before handle closes fd: its number could be reused
		if req.Drains > 0 {
			drains := make([]*os.File, 0, req.Drains)
			for i := len(files) - req.Drains; i < len(files); i++ {
				drains, files[i] = append(drains, files[i]), nil
			}
			drainRelay(fd, drains, &sv.jobs.gate)
		}
	}()
	var ee *nsinit.ExitError
	if err != nil && !errors.As(err, &ee) {
		refuse(err)
		return
	}
	for _, m := range append(cleanupNotes(cmd.Result), sv.treeNotes()...) {
		reply(session.RepMessage, []byte(m))
	}
	if cmd.Result.TimedOut {
		limit := req.Timeout // Cmd keeps the shorter of it and the policy's
		if t := sv.bounds.Timeout; t > 0 && (limit <= 0 || t < limit) {
			limit = t
		}
		reply(session.RepMessage, []byte(fmt.Sprintf("gosbx: timed out after %v; the command's process group was killed\n", limit)))
	}
	if note := limitNote(sv.sess.Config(), cmd.Result, true); note != "" {
		reply(session.RepMessage, []byte(note+"\n"))
	}
	if cmd.Result.ExitCode != 0 && !causeKnown(cmd.Result) {
		for _, note := range gitFailureNotes(cmd.Config, sv.gitMode, sv.credentials, os.Getuid(), true) {
			reply(session.RepMessage, []byte(note+"\n"))
		}
		if note := unseenFirstNote(cmd.Config, sv.toolchainAuto); note != "" {
			reply(session.RepMessage, []byte(sessionMountFix(note, sv.name)+"\n"))
		}
	}
	reply(session.RepExit, session.EncodeUint(uint64(cmd.Result.ExitCode)))
}

// process is the session's process with what req asks: its args, its env added to the
// session's, its working directory (a relative one from the workspace), each allowed
// only where the session's policy allows gosbx exec's flag (policy.Bounds.Check:
// environment.allow_extra, a working directory outside /proc, a timeout no longer than
// the policy's); a refusal is a *nsinit.SetupError at step policy, as gosbx exec says
// it. Nothing else of the session's policy can be changed by a request.
func (sv *supervisor) process(req *session.ExecRequest) (*specs.Process, error) {
	cwd, err := sv.bounds.Check(policy.Request{Env: req.Env, Chdir: req.Chdir, Timeout: req.Timeout, Cwd: req.Cwd})
	if err != nil {
		return nil, &nsinit.SetupError{Step: "policy", Err: err}
	}
	tpl := sv.sess.Config().Process
	p := *tpl
	p.Args = req.Args
	p.Env = append([]string(nil), tpl.Env...)
	for _, kv := range req.Env {
		k, _, _ := strings.Cut(kv, "=") // checked above
		p.Env = setEnv(p.Env, k, kv)
	}
	if cwd != "" {
		p.Cwd = cwd
	}
	if req.HasUmask && tpl.User.Umask == nil {
		// the caller's, as gosbx exec's command inherits it (a policy's own stays)
		u := req.Umask
		p.User.Umask = &u
	}
	return &p, nil
}

// setEnv sets kv (KEY=VALUE) in env, in place of key's earlier value.
func setEnv(env []string, key, kv string) []string {
	for i, e := range env {
		if strings.HasPrefix(e, key+"=") {
			env[i] = kv
			return env
		}
	}
	return append(env, kv)
}

// startSupervisor starts the supervisor of session sd.Name, detached from the caller,
// and returns once the session is ready, or the error that stopped it (the supervisor
// then has left nothing behind).
func startSupervisor(sd *startData, ownerPidfd int) error {
	w, err := startWire(sd)
	if err != nil {
		return err
	}
	// a host path or name that is not UTF-8 (a Latin-1 workspace) byte for byte:
	// encoding/json alone makes its bad bytes U+FFFD, another path (internal/rawjson)
	b, err := json.Marshal(rawjson.Escaped(w))
	if err != nil {
		return err
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return err
	}
	// the answer's socket: "0" (or "1" and the error) one way, "k" back
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("start the supervisor: socketpair: %w", err)
	}
	readyR, readyW := os.NewFile(uintptr(sp[0]), "ready"), os.NewFile(uintptr(sp[1]), "ready")
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	files := []uintptr{null.Fd(), null.Fd(), null.Fd(), cfgR.Fd(), readyW.Fd()}
	if ownerPidfd >= 0 {
		files = append(files, uintptr(ownerPidfd))
	}
	// The supervisor gets files and nothing else: syscall.ForkExec leaves every other
	// descriptor without close-on-exec open in the child, which the supervisor would keep
	// for the session's life (this process's caller's: a pipe's write end whose reader
	// waits for EOF, a privileged caller's file) (from an attack review, r34 F3). This
	// process runs nothing else after it; the close-on-exec flags stay with it.
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		null.Close()
		cfgR.Close()
		cfgW.Close()
		readyR.Close()
		readyW.Close()
		return fmt.Errorf("start the supervisor: close_range(3, ~0, CLOSE_RANGE_CLOEXEC): %w", err)
	}
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"gosbx", supervisorArg, sd.Name}, &syscall.ProcAttr{
		Env:   supervisorEnv(),
		Files: files,
		Sys:   &syscall.SysProcAttr{Setsid: true},
		Dir:   "/", // keeps no directory of the caller's busy
	})
	null.Close()
	cfgR.Close()
	readyW.Close()
	if err != nil {
		cfgW.Close()
		readyR.Close()
		return fmt.Errorf("start the supervisor: %w", err)
	}
	go func() { cfgW.Write(framed(b)); cfgW.Close() }()
	ans, _ := io.ReadAll(readyR)
	switch {
	case len(ans) > 0 && ans[0] == '0':
		// The supervisor runs on; its parent (this process) exits without waiting. Had
		// this process been killed before this "k", the supervisor ends the session.
		if _, err := readyR.Write([]byte("k")); err != nil {
			readyR.Close()
			return fmt.Errorf("the session's supervisor ended as it became ready: %w", err)
		}
		readyR.Close()
		return nil
	}
	readyR.Close()
	switch {
	case len(ans) > 0 && ans[0] == '1':
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		return errors.New(string(ans[1:]))
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil)
	return fmt.Errorf("the session's supervisor ended before the session was ready (%v)", ws)
}

// cleanupNotes are the lines gosbx exec prints for what the git guard's cleanup removed
// (or could not) after a command: a session runs it before and after each of its
// commands (nsinit.Session.Cleanup).
func cleanupNotes(r *nsinit.Result) []string {
	var out []string
	for _, p := range r.Removed {
		if note := policy.ReplaceRefNote(p); note != "" {
			out = append(out, note+"\n")
			continue
		}
		out = append(out, fmt.Sprintf("gosbx: the session's commands created (or replaced) %s, which would redirect git outside the sandbox; removed\n", policy.Shown(p)))
	}
	for _, p := range r.NotRemoved {
		out = append(out, policy.NotRemovedNote(p, "the session's commands")+"\n")
	}
	return out
}

// replyStartError answers a command that did not start: the error for stderr, and
// 125, 126 or 127.
func replyStartError(err error, reply func(byte, []byte)) {
	code := nsinit.ExitSetup
	var ec exitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	reply(session.RepMessage, []byte("gosbx: "+nsinit.ForCLI(err).Error()+"\n"))
	reply(session.RepExit, session.EncodeUint(uint64(code)))
}

func sysSignal(n uint64) syscall.Signal { return syscall.Signal(n) }

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5, asm-generic/socket.h): a pidfd of the peer
// that connected.
const soPeerPidfd = 77

// sameUserNamespace reports whether the peer pid of connection fd is in this process's
// user namespace. A command of a sandbox runs as the caller's own uid on the host (an
// unprivileged caller's), so SO_PEERCRED alone would answer it, were the socket within
// its reach (a runtime directory bound into a sandbox); it is always in a user namespace
// of its sandbox's. The peer's pidfd (SO_PEERPIDFD) checked alive after the
// /proc/PID/ns/user read makes sure that pid was still the peer's; a kernel without it
// leaves the pid from SO_PEERCRED.
// self is this process's own /proc/self/ns/user link, read once at the session's start.
func sameUserNamespace(fd, pid int, self string) bool {
	pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, soPeerPidfd)
	switch {
	case err == nil:
		defer unix.Close(pidfd)
	case err == unix.ENOPROTOOPT:
		pidfd = -1
	default:
		return false
	}
	if self == "" {
		return false
	}
	// unix.Readlink into a buffer of this frame: os.Readlink allocates and retries
	// with a larger one; a link longer than 64 bytes is no user namespace's
	var buf [64]byte
	n, err := unix.Readlink("/proc/"+strconv.Itoa(pid)+"/ns/user", buf[:])
	if err != nil || n >= len(buf) || string(buf[:n]) != self {
		return false
	}
	return pidfd < 0 || unix.PidfdSendSignal(pidfd, 0, nil, 0) == nil
}

// supervisorEnv is the caller's environment with GOMAXPROCS=1 first (the runtime reads
// the first of a name): the supervisor idles, and serves a request in well under a
// millisecond; a runtime started with one P has 0.3 MiB less unique memory on this
// 2-core host (2.0-2.05 → 1.73 MiB, docs/decisions.md).
func supervisorEnv() []string {
	env := []string{"GOMAXPROCS=1"}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "GOMAXPROCS=") {
			env = append(env, e)
		}
	}
	return env
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
