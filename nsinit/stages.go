package nsinit

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The init's two stages (README.md, "Sessions: one sandbox, many commands"):
//
//   - the sandbox init, pid 1 of the sandbox: buildSteps once (the root, the commands'
//     pid namespace), then per command startSteps, which fork the command; then it
//     reaps and forwards signals (reaper.go);
//   - the process stage, per command, in the forked child: procstage.go's plan.
//
// Each is an ordered list of named steps, read top to bottom; every call they make on
// the kernel goes through initSys or rawSys, so that a unit test asserts the order.
// A step's name is what a failure reports (exit 125, "<step>: <cause>") and what the
// fault-injection test fails on request.

// sandboxInit is pid 1's state across its steps.
type sandboxInit struct {
	sys           initSys
	pooled, trees bool
	session       bool // serves its owner's requests (sessioninit.go)

	spec    *config.Config
	sources []int
	root    *mounts.Root
	holder  int // pid of the commands' pid 1

	// the holder's plan (its memory is the holder's until it executes), socket pair
	// and program
	holderPlan                        *procPlan
	holderSend, holderRecv, holderExe int
}

type initStep struct {
	name string
	do   func(*sandboxInit) error
}

// buildSteps build the sandbox once: its root and the pid namespace of its commands.
// A pooled init then reports ready and waits for its one process.
func (s *sandboxInit) buildSteps() []initStep {
	steps := []initStep{
		{"read config", (*sandboxInit).readConfig},
		{"pid namespace", (*sandboxInit).pidNamespace},
		{"hostname", (*sandboxInit).hostname},
		{"loopback", (*sandboxInit).loopback},
		// egress: after lo is up, while pid 1 may still bind ports below 1024 there;
		// and the port forwards' connections from then on
		{"egress", (*sandboxInit).egress},
		{"mount", (*sandboxInit).mount},
		// the set-ID handler's procfs (setid.go): pid 1's own pid namespace, made while
		// the host's /proc is still in view and pid 1 may still mount
		{"set-ID procfs", (*sandboxInit).setIDProc},
		{"resolv.conf", (*sandboxInit).resolvConf},
		// through the sandbox's own procfs (userlimits.go), once it exists, while the
		// init holds CAP_SYS_RESOURCE and before any command runs
		{"user counts", (*sandboxInit).userCounts},
		{"pivot_root", (*sandboxInit).pivotRoot},
		// Not dumpable: nothing inside can open /proc/<pid>/{exe,mem,fd/*} of pid 1 or
		// of the commands' pid 1, or ptrace them.
		{"set not dumpable", func(s *sandboxInit) error { return s.sys.setNotDumpable() }},
		{"session keyring", func(s *sandboxInit) error { return s.sys.joinSessionKeyring() }},
		// once placed in the sandbox's cgroup, while CAP_SYS_ADMIN is kept (sysfs.go)
		{"cgroup namespace", (*sandboxInit).cgroupNamespace},
		{"limit capabilities", func(s *sandboxInit) error { return s.sys.limitCaps() }},
	}
	if !s.session {
		// a session's comes once every thread's capabilities are limited (serveSession)
		steps = append(steps, initStep{"set-ID thread", (*sandboxInit).setIDHandler})
	}
	if s.pooled {
		steps = append(steps, initStep{"read process", (*sandboxInit).readProcess})
	}
	return steps
}

// run builds the sandbox and starts its command; it returns the command's resolved
// path and pid (in the init's pid namespace).
func (s *sandboxInit) run() (string, int, error) {
	for _, st := range s.buildSteps() {
		if err := step(st.name, st.do(s)); err != nil {
			return "", 0, err
		}
	}
	return s.start(s.spec.Process)
}

func (s *sandboxInit) readConfig() error {
	var err error
	s.spec, s.sources, err = s.sys.readConfig(s.pooled || s.session)
	return err
}

// userCounts sets the sandbox's user namespace limits (config.Config.UserCounts).
func (s *sandboxInit) userCounts() error {
	return s.sys.setUserCounts(s.root, s.spec.UserCounts)
}

func (s *sandboxInit) setIDProc() error {
	if !s.spec.Linux.Filter.Notifies() {
		return nil
	}
	return s.sys.setIDProc()
}

// setIDHandler starts the threads that answer every command's set-ID calls
// (startSetIDHandler: one, sessionSetIDThreads for a session), after pivot_root (its
// root is the sandbox's) and before any command exists (while the pids limit has room
// for them).
func (s *sandboxInit) setIDHandler() error {
	if !s.spec.Linux.Filter.Notifies() {
		return nil
	}
	threads := 1
	if s.session {
		threads = sessionSetIDThreads
	}
	return s.sys.startSetID(threads)
}

func (s *sandboxInit) hostname() error {
	if s.spec.Hostname == "" {
		return nil
	}
	return s.sys.sethostname(s.spec.Hostname)
}

func (s *sandboxInit) loopback() error {
	if !hasNamespace(s.spec, specs.NetworkNamespace) {
		return nil
	}
	return s.sys.loopbackUp()
}

// pidNamespace makes the pid namespace the commands run in, a child of the init's,
// and starts its pid 1, the holder (planHolder, holderELF), which makes the procfs context the
// root's /proc is mounted from (awaited by mount, so that the holder runs beside the
// hostname and loopback steps): the commands cannot see or name pid 1 (issue 15:
// prlimit(2), /proc/1/*, ptrace, signals to the init). The holder is started before
// the init is in a cgroup v1 group (the launcher places the init beside these steps),
// and does nothing but reap.
func (s *sandboxInit) pidNamespace() error {
	if err := s.sys.unsharePID(); err != nil {
		return err
	}
	var err error
	if s.holderSend, s.holderRecv, s.holderExe, err = s.sys.holderFiles(); err != nil {
		return err
	}
	s.holderPlan = planHolder(s.holderSend, s.holderExe)
	if s.holder, err = s.sys.startHolder(s.holderPlan); err != nil {
		s.sys.closeFds([]int{s.holderSend, s.holderRecv, s.holderExe})
		return err
	}
	return nil
}

func (s *sandboxInit) mount() error {
	procFS, err := s.sys.awaitHolder(s.holderPlan, s.holder, s.holderSend, s.holderRecv, s.holderExe)
	if err != nil {
		return err
	}
	s.root, err = s.sys.buildRoot(s.spec, s.sources, s.trees, procFS)
	if err != nil {
		return err
	}
	if !s.trees {
		// the O_PATH descriptors of the host sources, cloned into the root now (trees are
		// consumed by SetupTrees): none of the host stays within the init's reach
		s.sys.closeFds(s.sources)
	}
	s.sources = nil
	return nil
}

func (s *sandboxInit) egress() error {
	forwards := len(s.spec.Publish) > 0
	if s.spec.Egress != nil {
		if err := s.sys.listenEgress(s.spec.Egress.CapturePorts, forwards || len(s.spec.HostPorts) > 0); err != nil {
			return err
		}
	}
	if len(s.spec.HostPorts) > 0 {
		if err := s.sys.listenHostPorts(s.spec.HostPorts, forwards); err != nil {
			return err
		}
	}
	if forwards {
		ports := make([]uint16, len(s.spec.Publish))
		for i, p := range s.spec.Publish {
			ports[i] = p.Port
		}
		s.sys.serveDials(ports)
	}
	return nil
}

func (s *sandboxInit) resolvConf() error {
	if s.spec.Egress == nil {
		return nil
	}
	return s.sys.resolvConf(s.root)
}

func (s *sandboxInit) pivotRoot() error { return s.sys.pivotRoot(s.root) }

func (s *sandboxInit) readProcess() error {
	s.sys.restoreStderr() // before the process's own stdio replaces fd 0-2
	s.sys.send(message{Type: msgReady})
	proc, err := s.sys.readProcess()
	if err != nil {
		return err
	}
	spec := *s.spec
	spec.Process = proc
	s.spec = &spec
	return nil
}

// start starts one command: its process stage compiled, then, once the init is in the
// sandbox's cgroup, the command forked into the commands' pid namespace, where the plan
// runs and executes it. The caller reports it (reportExec), which drops what pid 1's
// threads still hold of their capabilities.
func (s *sandboxInit) start(proc *specs.Process) (string, int, error) {
	dir, err := s.sys.openDir(s.root, proc.Cwd)
	if err != nil {
		return "", 0, &stepError{"chdir", err}
	}
	path, err := s.sys.lookPath(dir, proc.Args[0], proc.Env)
	if err != nil {
		dir.Close()
		return "", 0, err
	}
	plan, err := planProcess(proc, s.spec.Linux.Filter, dir, path)
	if err != nil {
		dir.Close()
		return "", 0, err
	}
	s.sys.awaitGoAhead()
	if err := step("signal dispositions", s.sys.defaultSignals()); err != nil {
		dir.Close()
		return "", 0, err
	}
	s.sys.restoreStderr()
	s.sys.claimTerminal()
	// From here the command may run: should the init die before its exec report, the
	// launcher must not say the command never ran.
	cleanupSpec = s.spec
	forked.Store(true)
	s.sys.send(message{Type: msgForking})
	pid, err := s.sys.fork(plan)
	if err != nil {
		return "", 0, err // no command runs: the init reports the error and exits
	}
	return path, pid, nil
}

// reportExec sends the exec report of the command pid (path executed), then clears the
// capabilities of every thread of pid 1 (dropAllCaps). In this order, the launcher
// reads the report and sends its acknowledgement (which the reaper waits for) while
// pid 1's threads drop theirs: the drop, a stop-the-world that signals every thread,
// is no longer between the command's exec and the report, where for a short command
// it delayed the reaping and the exit report (docs/decisions.md, "Speed, third
// attempt"). Pid 1 holds capabilities from the fork until the drop returns, as before
// plus the one write(2) of the report: in the sandbox's user namespace only, and no
// process of the sandbox can reach pid 1 meanwhile (it is outside the commands' pid
// namespace and not dumpable).
func (s *sandboxInit) reportExec(path string, pid int) {
	s.sys.send(message{Type: msgExec, Path: path, Pid: pid})
	s.sys.dropAllCaps()
}
