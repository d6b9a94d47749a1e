package nsinit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"syscall"

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
	trees        bool // sources are detached trees the launcher cloned (a root caller's host id)
	null         *mounts.Null
	mapsR, mapsW int // -1 without id maps
	holderSend   int
	holderRecv   int
	holderExe    int
	holderRepR   int
	holderRepW   int
	life         int

	// grouped: the sandbox has a cgroup, which each command joins in its process stage
	// (rawStartFds.join): the raw init stays out of it, and so unshares no cgroup
	// namespace rooted at its own group (the process stage does, once in the group)
	grouped bool

	// the credentials the clone child takes inside (initSysAttr's sys.Credential, nil
	// for none) and whether it calls setgroups(2) for them, as forkAndExecInChild1 does
	cred      *syscall.Credential
	setgroups bool

	setid *rawSetIDFds // the set-ID handler's (rawsetid.go), when the filter notifies
}

// rawCred is the clone child's supplementary groups, in the arena.
type rawCred struct {
	groups [64]uint32
}

// maxRawGroups bounds the supplementary groups a raw init sets.
const maxRawGroups = 64

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
	case spec.Egress != nil || len(spec.Publish) > 0 || len(spec.HostPorts) > 0:
		return errors.New("egress, port forwards or host ports")
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
	// the command's process stage raises its own oom_score_adj (oomscore.go)
	oomRaise bool
	// the set-ID handler's pid (negative: none) and descriptors (rawsetid.go)
	helper rawplan.Reg
	setid  *rawSetIDFds
}

// planRawBuild compiles buildSteps for spec into p (see the top of this file). It
// returns what the start needs, or an error for a config rawEligible refuses or a plan
// that outgrows its arena.
func planRawBuild(p *rawplan.Plan, spec *config.Config, fd *rawFds) (*rawBuilt, error) {
	if err := rawEligible(spec); err != nil {
		return nil, err
	}
	if spec.Linux.Filter.Notifies() != (fd.setid != nil) {
		return nil, errors.New("a set-ID listener needs its handler's descriptors, and only one")
	}
	built := &rawBuilt{helper: p.Reg(), setid: fd.setid}
	lit := rawplan.Lit
	c := rawplan.Alloc[rawCaps](p)
	c.hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	for _, cp := range initCaps {
		c.init[cp/32].Effective |= 1 << (cp % 32)
		c.init[cp/32].Permitted |= 1 << (cp % 32)
	}
	stage := stageCaps
	if fd.grouped && hasNamespace(spec, specs.CgroupNamespace) {
		// the process stage unshares the command's cgroup namespace once it has joined
		// the group, before it drops every capability (planRawStart)
		stage = append(slices.Clip(stage), unix.CAP_SYS_ADMIN)
	}
	for _, cp := range stage {
		c.stage[cp/32].Effective |= 1 << (cp % 32)
		c.stage[cp/32].Permitted |= 1 << (cp % 32)
	}
	c.sigAll = ^uint64(0)
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}

	// what forkExecInit's child does before execve, in its order: keep the capabilities
	// across a change of uid, the id maps, setsid, the credentials; then the
	// capabilities the Go init has after it (its ambient set)
	s := p.Begin("keep capabilities")
	p.Call(s, errno("prctl(PR_SET_KEEPCAPS)"), unix.SYS_PRCTL, lit(unix.PR_SET_KEEPCAPS), lit(1))
	if fd.mapsR >= 0 {
		s := p.Begin("wait for the id maps")
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.mapsW)))
		p.Op(s, errno("read"), rawplan.ReadOne, unix.SYS_READ, lit(uintptr(fd.mapsR)), lit(0), lit(1))
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.mapsR)))
	}
	// The command's oom_score_adj is raised by the command's own process stage
	// (planRawStart, oomscore.go), which opens its own file while it sets the memory
	// dumpable for that open; where the launcher was not dumpable (a library
	// program's choice), that is left: no oom_score_adj then.
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d == 1 {
		built.oomRaise = true
	}
	s = p.Begin("setsid")
	p.Call(s, errno("setsid"), unix.SYS_SETSID)
	if cr := fd.cred; cr != nil {
		if fd.setgroups {
			if len(cr.Groups) > maxRawGroups {
				return nil, fmt.Errorf("%d supplementary groups, at most %d", len(cr.Groups), maxRawGroups)
			}
			g := rawplan.Alloc[rawCred](p)
			copy(g.groups[:], cr.Groups)
			s = p.Begin("setgroups")
			p.Call(s, errno("setgroups"), unix.SYS_SETGROUPS, lit(uintptr(len(cr.Groups))), lit(rawplan.Ptr(&g.groups[0])))
		}
		s = p.Begin("setgid")
		p.Call(s, errno(fmt.Sprintf("setgid %d", cr.Gid)), unix.SYS_SETGID, lit(uintptr(cr.Gid)))
		s = p.Begin("setuid")
		p.Call(s, errno(fmt.Sprintf("setuid %d", cr.Uid)), unix.SYS_SETUID, lit(uintptr(cr.Uid)))
	}
	s = p.Begin("ambient capabilities")
	p.Call(s, errno("capset"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.init[0])))

	// The Go init's steps in its order; a step with nothing to do for this config is
	// named all the same (a fault-injection build fails it on request, as the Go
	// init's step does).
	p.Begin("read config")
	// pid namespace: this process's next child is pid 1 of a new one, the holder
	s = p.Begin("pid namespace")
	// the handler's pid, or a negative number for the reaper (a failing close(-1)): never
	// a value an earlier op left in the register
	p.Op(s, nil, rawplan.Try, unix.SYS_CLOSE, lit(^uintptr(0))).Into(built.helper)
	if fd.setid != nil {
		// cloned before the unshare: outside the commands' pid namespace
		if err := planRawSetIDHandler(p, s, fd.setid, c, built.helper); err != nil {
			return nil, err
		}
	}
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
	// the old root, moved to the sandbox's by pivot_root (planHolder)
	p.Call(hs, errno("chdir /"), unix.SYS_CHDIR, lit(p.Str("/")))
	c.argv[0] = p.Str("gosbx-pid1")
	p.Call(hs, errno("execveat the holder (a memfd: vm.memfd_noexec=2 forbids it)"), unix.SYS_EXECVEAT, lit(uintptr(fd.holderExe)),
		lit(p.Str("")), lit(rawplan.Ptr(&c.argv[0])), lit(rawplan.Ptr(&c.envv[0])), lit(unix.AT_EMPTY_PATH))
	p.Release(proc)
	p.EndSub(sub, fd.holderRepW)
	built.holder = p.Reg()
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
	setup := mounts.PlanSetup
	if fd.trees {
		setup = mounts.PlanSetupTrees // consumed there, as SetupTrees does
	}
	root, err := setup(p, s, spec, fd.sources, fd.null, procFS)
	if err != nil {
		return nil, err
	}
	built.root = root
	// the O_PATH descriptors of the host sources (and /dev/null), cloned into the root
	// now: none of the host stays within the init's reach
	for _, src := range fd.sources {
		if !fd.trees {
			p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(src)))
		}
	}
	if fd.null != nil {
		p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.null.Fd())))
	}
	s = p.Begin("set-ID procfs")
	if fd.setid != nil {
		planRawSetIDProc(p, s, fd.setid)
	}
	p.Begin("resolv.conf")
	s = p.Begin("user counts")
	if len(spec.UserCounts) > 0 {
		// through the sandbox's own procfs, below its read-only /proc/sys (userlimits.go)
		sys, ok := root.ProcSys()
		if !ok {
			return nil, &stepError{step: "user counts", err: errNoProcForCounts} // as the Go init's
		}
		for _, u := range spec.UserCounts {
			path, v := userCountsDir+u.Name, strconv.FormatInt(u.Max, 10)
			f := p.Reg()
			p.Call(s, errno("open /proc/sys/"+path+" of the sandbox's procfs"), unix.SYS_OPENAT, sys.Arg(), lit(p.Str(path)),
				lit(unix.O_WRONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW)).Into(f)
			p.Call(s, errno("write "+v+" to /proc/sys/"+path), unix.SYS_WRITE, f.Arg(), lit(p.Str(v)), lit(uintptr(len(v))))
			p.CloseReg(s, f)
		}
	}
	if err := root.PlanPivotRoot(p.Begin("pivot_root")); err != nil {
		return nil, err
	}
	s = p.Begin("set not dumpable")
	p.Call(s, errno("prctl(PR_SET_DUMPABLE)"), unix.SYS_PRCTL, lit(unix.PR_SET_DUMPABLE), lit(0))
	s = p.Begin("session keyring")
	p.Call(s, errno("keyctl join session keyring"), unix.SYS_KEYCTL, lit(unix.KEYCTL_JOIN_SESSION_KEYRING), lit(0)).Tolerate(unix.ENOSYS).Tolerate(unix.EPERM)
	s = p.Begin("cgroup namespace")
	if hasNamespace(spec, specs.CgroupNamespace) && !fd.grouped {
		// after the launcher's go-ahead (a group's placement, for the Go init)
		r := p.Reg()
		p.Op(s, errno("the launcher's go-ahead"), rawplan.ReadOne, unix.SYS_READ, lit(uintptr(fd.life)), lit(0), lit(1)).Into(r)
		built.goByte = &r
		p.Call(s, errno("unshare(CLONE_NEWCGROUP)"), unix.SYS_UNSHARE, lit(unix.CLONE_NEWCGROUP))
	}
	s = p.Begin("limit capabilities")
	p.Call(s, errno("capset"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.stage[0])))
	s = p.Begin("set-ID thread")
	if fd.setid != nil {
		planRawSetIDThread(p, s, fd.setid)
	}
	return built, p.Finish()
}
