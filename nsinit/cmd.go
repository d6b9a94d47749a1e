package nsinit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/mounts"
)

// Cmd is a command to run in a new sandbox, shaped like os/exec.Cmd: configure it,
// then Start and Wait, or Run. The sandbox is described entirely by Spec (compile one
// with the policy package); the command is Spec.Process.Args.
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

	init     *exec.Cmd
	life     *os.File // held for the launch: its closing kills the sandbox
	sync     *syncReader
	syncFile *os.File
	start    time.Time
	timer    *time.Timer
	mu       sync.Mutex
	timedOut bool
	waited   bool
}

// Event is one status event, with bwrap's --json-status-fd keys.
type Event struct {
	ChildPid int    `json:"child-pid,omitempty"` // host pid of the sandbox init (pid 1 inside)
	CgroupNS uint64 `json:"cgroup-namespace,omitempty"`
	IpcNS    uint64 `json:"ipc-namespace,omitempty"`
	MntNS    uint64 `json:"mnt-namespace,omitempty"`
	NetNS    uint64 `json:"net-namespace,omitempty"`
	PidNS    uint64 `json:"pid-namespace,omitempty"`
	UserNS   uint64 `json:"user-namespace,omitempty"`
	UtsNS    uint64 `json:"uts-namespace,omitempty"`
	Exec     bool   `json:"exec,omitempty"` // execve(2) of the command succeeded
	Pid      int    `json:"pid,omitempty"`  // with Exec: the command's host pid
	Path     string `json:"path,omitempty"` // with Exec: the executable inside the sandbox
	ExitCode *int   `json:"exit-code,omitempty"`
	Signal   int    `json:"signal,omitempty"`
	TimedOut *bool  `json:"timed-out,omitempty"`
	WallMs   *int64 `json:"wall-ms,omitempty"`
	Error    string `json:"error,omitempty"`
	Step     string `json:"step,omitempty"`   // with Error: the step that failed ("exec" for 126/127)
	Status   int    `json:"status,omitempty"` // with Error: the exit status gosbx exec returns (125, 126, 127)
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

// initCaps are the capabilities the init stage keeps across its re-execution (as
// ambient capabilities, see capabilities(7)), for a caller whose uid inside is not 0.
// They hold only in the new user namespace and are all dropped before the command.
var initCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN,
	unix.CAP_SYS_CHROOT, unix.CAP_SYS_ADMIN, unix.CAP_SYS_RESOURCE, unix.CAP_MKNOD,
}

var nsFlags = map[specs.LinuxNamespaceType]uintptr{
	specs.UserNamespace: unix.CLONE_NEWUSER, specs.MountNamespace: unix.CLONE_NEWNS,
	specs.PIDNamespace: unix.CLONE_NEWPID, specs.NetworkNamespace: unix.CLONE_NEWNET,
	specs.IPCNamespace: unix.CLONE_NEWIPC, specs.UTSNamespace: unix.CLONE_NEWUTS,
	specs.CgroupNamespace: unix.CLONE_NEWCGROUP,
}

// Start clones the init stage into new namespaces, sends it the spec, and returns once
// the command is running. A sandbox that could not be built gives a *SetupError, a
// command that could not be executed an *ExecError; in both cases the command never ran
// and nothing is left running.
//
// Every descriptor of the calling process above 2 is marked close-on-exec first, so
// nothing but the stdio reaches the sandbox.
func (c *Cmd) Start() error {
	if c.init != nil {
		return errors.New("nsinit: already started")
	}
	flags, uids, gids, err := cloneConfig(c.Spec)
	if err != nil {
		return c.fail(&SetupError{Step: "config", Err: err})
	}
	config, err := json.Marshal(c.Spec)
	if err != nil {
		return c.fail(&SetupError{Step: "config", Err: err})
	}
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return c.fail(&SetupError{Step: "close fds", Err: err})
	}
	var sources []*os.File
	defer func() {
		for _, f := range sources {
			f.Close()
		}
	}()
	for _, p := range mounts.BindSources(c.Spec) {
		fd, err := mounts.OpenSourcePath(p)
		if err != nil {
			return c.fail(&SetupError{Step: "open bind source", Err: err})
		}
		sources = append(sources, os.NewFile(uintptr(fd), p))
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return c.fail(&SetupError{Step: "pipe", Err: err})
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		return c.fail(&SetupError{Step: "pipe", Err: err})
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		syncR.Close()
		syncW.Close()
		return c.fail(&SetupError{Step: "pipe", Err: err})
	}
	c.init = &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{InitArg},
		Env:        []string{},
		Stdin:      c.Stdin,
		Stdout:     c.Stdout,
		Stderr:     c.Stderr,
		ExtraFiles: append([]*os.File{specR, syncW, lifeR}, sources...),
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:                     true, // keyboard signals reach the launcher only, which forwards them
			Cloneflags:                 flags,
			UidMappings:                uids,
			GidMappings:                gids,
			GidMappingsEnableSetgroups: false,
			AmbientCaps:                initCaps,
		},
	}
	c.start = time.Now()
	err = c.init.Start()
	specR.Close()
	syncW.Close()
	lifeR.Close()
	if err != nil {
		specW.Close()
		syncR.Close()
		lifeW.Close()
		return c.fail(&SetupError{Step: "clone", Err: cloneHint(err)})
	}
	c.life, c.syncFile, c.sync = lifeW, syncR, newSyncReader(syncR)
	if c.Timeout > 0 {
		c.timer = time.AfterFunc(c.Timeout, c.expire)
	}
	go func() {
		specW.Write(config)
		specW.Close()
	}()
	pid := c.init.Process.Pid
	if c.Events != nil {
		c.Events(namespaceEvent(pid))
	}
	m, ok := c.sync.next()
	switch {
	case ok && m.Type == msgExec:
		if c.Events != nil {
			c.Events(Event{Exec: true, Pid: childPid(pid), Path: m.Path})
		}
		c.life.Write([]byte{1}) // the reaper may reap the command now
		return nil
	case ok && m.Type == msgExecError:
		c.reapFailed()
		return c.fail(&ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)})
	case ok && m.Type == msgError:
		c.reapFailed()
		return c.fail(&SetupError{Step: m.Step, Err: errors.New(m.Error)})
	}
	// The init died before reporting: killed (timeout, or by someone) or crashed.
	c.reapFailed()
	if c.isTimedOut() {
		return c.fail(&SetupError{Step: "timeout", Err: fmt.Errorf("the %v wall-clock limit expired before the command started", c.Timeout)})
	}
	return c.fail(&SetupError{Step: "init", Err: fmt.Errorf("the init stage died during setup: %v", c.init.ProcessState)})
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

// reapFailed waits for an init that reported failure or died, and releases the pipes.
func (c *Cmd) reapFailed() {
	c.init.Process.Kill()
	c.init.Wait()
	c.release()
}

func (c *Cmd) release() {
	if c.timer != nil {
		c.timer.Stop()
	}
	c.syncFile.Close()
	c.life.Close()
	c.waited = true
}

func (c *Cmd) expire() {
	c.mu.Lock()
	c.timedOut = true
	c.mu.Unlock()
	c.init.Process.Signal(unix.SIGKILL)
}

func (c *Cmd) isTimedOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.timedOut
}

// Signal sends sig to the command; the sandbox's init forwards SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH and SIGCONT to it. SIGKILL kills the whole sandbox.
func (c *Cmd) Signal(sig os.Signal) error {
	if c.init == nil || c.init.Process == nil {
		return errors.New("nsinit: not started")
	}
	return c.init.Process.Signal(sig)
}

// Wait waits for the command to end and for the sandbox to be gone, then sets Result.
// It returns nil for exit status 0, an *ExitError when the command exited non-zero, was
// killed by a signal or timed out.
func (c *Cmd) Wait() error {
	if c.init == nil {
		return errors.New("nsinit: not started")
	}
	if c.waited {
		return errors.New("nsinit: Wait was already called")
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
	werr := c.init.Wait()
	wall := time.Since(c.start)
	c.release()
	r := &Result{Wall: wall, TimedOut: c.isTimedOut()}
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
		if ps := c.init.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.Signal = ws.Signal()
			}
		}
		r.ExitCode = 128 + int(r.Signal)
		_ = werr
	}
	c.Result = r
	if c.Events != nil {
		code, to, ms := r.ExitCode, r.TimedOut, wall.Milliseconds()
		c.Events(Event{ExitCode: &code, Signal: int(r.Signal), TimedOut: &to, WallMs: &ms})
	}
	if r.Success() {
		return nil
	}
	return &ExitError{r}
}

// cloneConfig derives the clone flags and id maps from spec.Linux.
func cloneConfig(spec *specs.Spec) (uintptr, []syscall.SysProcIDMap, []syscall.SysProcIDMap, error) {
	if spec == nil || spec.Process == nil || len(spec.Process.Args) == 0 {
		return 0, nil, nil, errors.New("spec has no process args")
	}
	if spec.Linux == nil {
		return 0, nil, nil, errors.New("spec has no linux section")
	}
	var flags uintptr
	for _, ns := range spec.Linux.Namespaces {
		f, ok := nsFlags[ns.Type]
		if !ok {
			return 0, nil, nil, fmt.Errorf("unsupported namespace %q", ns.Type)
		}
		if ns.Path != "" {
			return 0, nil, nil, fmt.Errorf("joining namespace %s (%s) is not supported", ns.Type, ns.Path)
		}
		flags |= f
	}
	if flags&unix.CLONE_NEWUSER == 0 || flags&unix.CLONE_NEWNS == 0 || flags&unix.CLONE_NEWPID == 0 {
		return 0, nil, nil, errors.New("the user, mount and pid namespaces are required")
	}
	conv := func(ms []specs.LinuxIDMapping) []syscall.SysProcIDMap {
		out := make([]syscall.SysProcIDMap, len(ms))
		for i, m := range ms {
			out[i] = syscall.SysProcIDMap{ContainerID: int(m.ContainerID), HostID: int(m.HostID), Size: int(m.Size)}
		}
		return out
	}
	if len(spec.Linux.UIDMappings) == 0 || len(spec.Linux.GIDMappings) == 0 {
		return 0, nil, nil, errors.New("spec has no uid/gid mappings")
	}
	return flags, conv(spec.Linux.UIDMappings), conv(spec.Linux.GIDMappings), nil
}

// cloneHint explains the usual reasons a user namespace cannot be created.
func cloneHint(err error) error {
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w (creating a user namespace failed: check kernel.unprivileged_userns_clone, "+
			"user.max_user_namespaces (ENOSPC when exhausted), kernel.apparmor_restrict_unprivileged_userns, "+
			"or a container's seccomp profile)", err)
	}
	return err
}

// namespaceEvent reads the namespace inode numbers of the init from /proc/PID/ns.
func namespaceEvent(pid int) Event {
	e := Event{ChildPid: pid}
	for name, dst := range map[string]*uint64{"cgroup": &e.CgroupNS, "ipc": &e.IpcNS, "mnt": &e.MntNS,
		"net": &e.NetNS, "pid": &e.PidNS, "user": &e.UserNS, "uts": &e.UtsNS} {
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/"+name, &st) == nil {
			*dst = st.Ino
		}
	}
	return e
}

// childPid returns the host pid of the init's (only) child, the command, from the
// children files of all the init's threads (proc(5)). The reaper does not reap before
// the launcher's acknowledgement, so the command is there, running or a zombie.
func childPid(pid int) int {
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.Atoi(f[0])
			return n
		}
	}
	return 0
}
