package nsinit

import (
	"errors"
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The raw init (issue 20, phase 1): the sandbox init's one-shot job compiled by the
// launcher into a raw plan (internal/rawplan) that a CLONE_VM child of the launcher
// runs, without executing a Go program. This file compiles the Go init's buildSteps
// (stages.go), step for step and under the same step names, so that a failure reports
// the *stepError the Go init would: the id maps awaited, setsid, the init's
// capabilities, the commands' pid namespace and its holder (a sub-plan: planHolder's
// calls), hostname, loopback, the root (mounts.PlanSetup), pivot_root, not dumpable,
// the session keyring, the cgroup namespace after the launcher's go-ahead, and the
// capabilities limited to stageCaps. Not wired to a launch yet: the command's start,
// the reaper and the protocol's reports are the next phase (docs/decisions.md,
// "Speed, fifth attempt").

// rawFds are the descriptors the raw child inherits from the launcher at the clone, at
// the same numbers: the bind sources (mounts.OpenSourcePath), /dev/null (mounts.OpenNull,
// for masks), the id maps' gate, the holder's socket pair, program (holderFile) and
// report pipe, and the life pipe's read end.
type rawFds struct {
	sources      []int
	null         *mounts.Null
	mapsR, mapsW int // -1 without id maps
	holderSend   int
	holderRecv   int
	holderExe    int
	holderRepR   int
	holderRepW   int
	life         int
}

// rawCaps are the capability sets the raw init sets with capset(2): its own (initCaps,
// what the Go init keeps from its ambient set after execve), stageCaps once the root is
// built, and the holder's empty ones.
type rawCaps struct {
	hdr                unix.CapUserHeader
	init, stage, empty [2]unix.CapUserData
	ifr                [40]byte // struct ifreq of lo (SIOCGIFFLAGS, SIOCSIFFLAGS)
	sigAll             uint64
	argv               [2]uintptr // the holder's argv: its name, NULL
	envv               [1]uintptr
}

// rawEligible reports why spec cannot take the raw init, or nil: only what planRawBuild
// implements fully, so that no raw launch runs with less isolation than the Go init's
// would.
func rawEligible(spec *config.Config) error {
	switch {
	case spec.Linux == nil || spec.Process == nil:
		return errors.New("no linux section or no process")
	case spec.RootID != nil:
		return errors.New("a root caller's host id (bind trees, credentials)")
	case spec.Egress != nil || len(spec.Publish) > 0 || len(spec.HostPorts) > 0:
		return errors.New("egress, port forwards or host ports")
	case spec.Linux.Filter.Notifies():
		return errors.New("a set-ID listener")
	case !hasNamespace(spec, specs.PIDNamespace) || !hasNamespace(spec, specs.MountNamespace) || !hasNamespace(spec, specs.UserNamespace):
		return errors.New("no pid, mount or user namespace")
	}
	return mounts.RawSupported(spec)
}

// rawBuilt is what the start needs of the build: the root, the holder's pid and the
// go-ahead's byte (nil when the build did not read it), in registers.
type rawBuilt struct {
	root   *mounts.RawRoot
	holder rawplan.Reg
	goByte *rawplan.Reg
	oom    rawplan.Reg // pid 1's own oom_score_adj, open (oomscore.go)
}

// planRawBuild compiles buildSteps for spec into p (see the top of this file). It
// returns what the start needs, or an error for a config rawEligible refuses or a plan
// that outgrows its arena.
func planRawBuild(p *rawplan.Plan, spec *config.Config, fd *rawFds) (*rawBuilt, error) {
	if err := rawEligible(spec); err != nil {
		return nil, err
	}
	lit := rawplan.Lit
	c := rawplan.Alloc[rawCaps](p)
	c.hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	for _, cp := range initCaps {
		c.init[cp/32].Effective |= 1 << (cp % 32)
		c.init[cp/32].Permitted |= 1 << (cp % 32)
	}
	for _, cp := range stageCaps {
		c.stage[cp/32].Effective |= 1 << (cp % 32)
		c.stage[cp/32].Permitted |= 1 << (cp % 32)
	}
	c.sigAll = ^uint64(0)
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}

	// what forkExecInit's child does before execve: the id maps, setsid; then the
	// capabilities the Go init has after it (its ambient set)
	if fd.mapsR >= 0 {
		s := p.Begin("wait for the id maps")
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.mapsW)))
		p.Op(s, errno("read"), rawplan.ReadOne, unix.SYS_READ, lit(uintptr(fd.mapsR)), lit(0), lit(1))
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.mapsR)))
	}
	s := p.Begin("setsid")
	p.Call(s, errno("setsid"), unix.SYS_SETSID)
	s = p.Begin("ambient capabilities")
	p.Call(s, errno("capset"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.init[0])))

	// The Go init's steps in its order; a step with nothing to do for this config is
	// named all the same (a fault-injection build fails it on request, as the Go
	// init's step does).
	p.Begin("read config")
	// pid namespace: this process's next child is pid 1 of a new one, the holder
	s = p.Begin("pid namespace")
	p.Call(s, errno("unshare(CLONE_NEWPID)"), unix.SYS_UNSHARE, lit(unix.CLONE_NEWPID))
	sub := p.BeginSub(s)
	hs := p.Begin("pid 1 of the commands")
	proc := p.Reg()
	p.Call(hs, errno("fsopen proc"), unix.SYS_FSOPEN, lit(p.Str("proc")), lit(unix.FSOPEN_CLOEXEC)).Into(proc)
	p.Op(hs, errno("send the procfs context"), rawplan.SendFd, unix.SYS_SENDMSG, lit(uintptr(fd.holderSend)), proc.Arg())
	p.Call(hs, errno("set securebits"), unix.SYS_PRCTL, lit(unix.PR_SET_SECUREBITS), lit(caps.LockedNoRoot))
	p.Call(hs, errno("capset to empty"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.empty[0])))
	p.Call(hs, errno("set no_new_privs"), unix.SYS_PRCTL, lit(unix.PR_SET_NO_NEW_PRIVS), lit(1))
	p.Call(hs, errno("block every signal"), unix.SYS_RT_SIGPROCMASK, lit(unix.SIG_SETMASK), lit(rawplan.Ptr(&c.sigAll)), lit(0), lit(8))
	p.Call(hs, errno("close_range 0-max CLOSE_RANGE_CLOEXEC"), unix.SYS_CLOSE_RANGE, lit(0), lit(^uintptr(0)), lit(unix.CLOSE_RANGE_CLOEXEC))
	c.argv[0] = p.Str("gosbx-pid1")
	p.Call(hs, errno("execveat the holder (a memfd: vm.memfd_noexec=2 forbids it)"), unix.SYS_EXECVEAT, lit(uintptr(fd.holderExe)),
		lit(p.Str("")), lit(rawplan.Ptr(&c.argv[0])), lit(rawplan.Ptr(&c.envv[0])), lit(unix.AT_EMPTY_PATH))
	p.Release(proc)
	p.EndSub(sub, fd.holderRepW)
	built := &rawBuilt{holder: p.Reg()}
	p.CloneSub(s, errno("clone"), sub, 0, built.holder)
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.holderRepW)))

	s = p.Begin("hostname")
	if spec.Hostname != "" {
		p.Call(s, errno("sethostname"), unix.SYS_SETHOSTNAME, lit(p.Str(spec.Hostname)), lit(uintptr(len(spec.Hostname))))
	}
	s = p.Begin("loopback")
	if hasNamespace(spec, specs.NetworkNamespace) {
		sock := p.Reg()
		copy(c.ifr[:], "lo")
		p.Call(s, errno("socket"), unix.SYS_SOCKET, lit(unix.AF_INET), lit(unix.SOCK_DGRAM|unix.SOCK_CLOEXEC), lit(0)).Into(sock)
		p.Call(s, errno("SIOCGIFFLAGS lo"), unix.SYS_IOCTL, sock.Arg(), lit(unix.SIOCGIFFLAGS), lit(rawplan.Ptr(&c.ifr[0])))
		p.Op(s, nil, rawplan.Or16, 0, lit(p.Offset(rawplan.Ptr(&c.ifr[unix.IFNAMSIZ]))), lit(unix.IFF_UP))
		p.Call(s, errno("SIOCSIFFLAGS lo up"), unix.SYS_IOCTL, sock.Arg(), lit(unix.SIOCSIFFLAGS), lit(rawplan.Ptr(&c.ifr[0])))
		p.CloseReg(s, sock)
	}

	p.Begin("egress")
	// mount: the holder's procfs context, then the root
	s = p.Begin("mount")
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.holderSend)))
	p.AwaitSub(s, errno("the holder's report"), sub, lit(uintptr(fd.holderRepR)))
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.holderRepR)))
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.holderExe)))
	procFS := p.Reg()
	p.RecvFd(s, func(e unix.Errno) error { return fmt.Errorf("receive the procfs context: %w", e) }, lit(uintptr(fd.holderRecv)), procFS)
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.holderRecv)))
	root, err := mounts.PlanSetup(p, s, spec, fd.sources, fd.null, procFS)
	if err != nil {
		return nil, err
	}
	built.root = root
	// the O_PATH descriptors of the host sources (and /dev/null), cloned into the root
	// now: none of the host stays within the init's reach
	for _, src := range fd.sources {
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(src)))
	}
	if fd.null != nil {
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.null.Fd())))
	}
	p.Begin("set-ID procfs")
	p.Begin("resolv.conf")
	s = p.Begin("pivot_root")
	// pid 1's own oom_score_adj (oomscore.go), opened while the host's /proc is in view
	// and pid 1 dumpable: raised for the fork of the command, then put back
	// (planRawStart)
	built.oom = p.Reg()
	p.Call(s, errno("open "+oomScorePath), unix.SYS_OPENAT, lit(atFdcwd), lit(p.Str(oomScorePath)), lit(unix.O_WRONLY|unix.O_CLOEXEC)).Into(built.oom)
	if err := root.PlanPivotRoot(s); err != nil {
		return nil, err
	}
	s = p.Begin("set not dumpable")
	p.Call(s, errno("prctl(PR_SET_DUMPABLE)"), unix.SYS_PRCTL, lit(unix.PR_SET_DUMPABLE), lit(0))
	s = p.Begin("session keyring")
	p.Call(s, errno("keyctl join session keyring"), unix.SYS_KEYCTL, lit(unix.KEYCTL_JOIN_SESSION_KEYRING), lit(0)).Tolerate(unix.ENOSYS).Tolerate(unix.EPERM)
	s = p.Begin("cgroup namespace")
	if hasNamespace(spec, specs.CgroupNamespace) {
		// after the launcher's go-ahead: the init is in the sandbox's cgroup
		r := p.Reg()
		p.Op(s, errno("the launcher's go-ahead"), rawplan.ReadOne, unix.SYS_READ, lit(uintptr(fd.life)), lit(0), lit(1)).Into(r)
		built.goByte = &r
		p.Call(s, errno("unshare(CLONE_NEWCGROUP)"), unix.SYS_UNSHARE, lit(unix.CLONE_NEWCGROUP))
	}
	s = p.Begin("limit capabilities")
	p.Call(s, errno("capset"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.stage[0])))
	p.Begin("set-ID thread")
	return built, p.Finish()
}
