package nsinit

import (
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The raw init's start of its one command and its reaper, compiled after planRawBuild:
// stages.go's start (the working directory opened inside the root, the program looked
// up on PATH there, stderr restored, the terminal claimed, the "forking" report), the
// process stage (procstage.go's planProcess, as a sub-plan run by a CLONE_VFORK child
// in the commands' pid namespace), the exec report, pid 1's capabilities dropped, and
// the reaper (rawplan's Reap op).

// rawStartFds are the descriptors of the start, inherited at the clone: the launcher's
// sync pipe (the reports), the process stage's report pipe, and the life pipe.
type rawStartFds struct {
	sync, stageRepR, stageRepW, life int

	// join are the launcher's descriptors of the sandbox's tasks files, one per v1
	// hierarchy (rawLaunch): the process stage, one thread, writes "0" to each, then
	// closes it, before anything of the command runs; cgroupNS, that it then unshares
	// the command's cgroup namespace, rooted at its group
	join     []int
	cgroupNS bool
	// cgroupFd is a cgroup v2 group's directory (cgroup.Group.CloneFd) the process
	// stage is cloned into (clone3 CLONE_INTO_CGROUP), or 0 (never a group's: the
	// launcher's stdio)
	cgroupFd int
}

// rawStart is what the launcher needs to read the raw init's reports: the program's
// candidates (an address in the arena to its path) and the register the chosen one is
// in.
type rawStart struct {
	paths   map[uintptr]string
	pathReg rawplan.Reg
	fixed   string // a name with a slash: executed as it is
}

// path is the program the raw init chose (or "" before it did).
func (r *rawStart) path(p *rawplan.Plan) string {
	if r.fixed != "" {
		return r.fixed
	}
	return r.paths[uintptr(p.Value(r.pathReg))]
}

// rawStage is the arena memory of the process stage's calls.
type rawStage struct {
	how     unix.OpenHow
	termios unix.Termios
	rlimits [16]unix.Rlimit
	empty   [2]unix.CapUserData
	hdr     unix.CapUserHeader
	sigDfl  [4]uintptr
	noMask  uint64
	sigMask uint64
	fprog   struct {
		len    uint16
		_      [6]byte
		filter uintptr
	}
}

// planRawStart compiles the start of spec.Process and the reaper into p, after the
// build (built). Errors: a malformed rlimit, a plan that outgrows its arena.
func planRawStart(p *rawplan.Plan, spec *config.Config, built *rawBuilt, fd rawStartFds) (*rawStart, error) {
	root, goByte := built.root, built.goByte
	lit := rawplan.Lit
	proc := spec.Process
	c := rawplan.Alloc[rawStage](p)
	c.hdr.Version = unix.LINUX_CAPABILITY_VERSION_3
	c.sigMask = initSigMask()
	errno := func(what string) func(unix.Errno) error {
		return func(e unix.Errno) error { return fmt.Errorf("%s: %w", what, e) }
	}
	res, err := parseRlimits(proc.Rlimits)
	if err != nil {
		return nil, &stepError{"rlimits", err}
	}
	if len(res) > len(c.rlimits) {
		return nil, &stepError{"rlimits", fmt.Errorf("%d rlimits, at most %d", len(res), len(c.rlimits))}
	}

	// the signals the reaper forwards, on a signalfd (catchSignals): blocked already
	s := p.Begin("signals")
	sigfd := p.Reg()
	p.Call(s, errno("signalfd"), unix.SYS_SIGNALFD4, lit(^uintptr(0)), lit(rawplan.Ptr(&c.sigMask)), lit(8), lit(unix.SFD_CLOEXEC|unix.SFD_NONBLOCK)).Into(sigfd)

	// the working directory, inside the root (Root.OpenDir)
	s = p.Begin("chdir")
	c.how = unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
	dir := p.Reg()
	cwd := proc.Cwd
	p.Call(s, func(e unix.Errno) error { return &mounts.Error{Op: "open", Target: cwd, Err: e} },
		unix.SYS_OPENAT2, root.Root.Arg(), lit(p.Str(relPath(cwd))), lit(rawplan.Ptr(&c.how)), lit(unix.SizeofOpenHow)).Into(dir)

	// the program, looked up on PATH from there (lookPathAt)
	st := &rawStart{paths: map[uintptr]string{}}
	name := proc.Args[0]
	var pathArg rawplan.Arg
	if strings.Contains(name, "/") {
		st.fixed = name
		pathArg = lit(p.Str(name))
	} else {
		path := defaultPath
		for _, kv := range proc.Env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v
			}
		}
		var addrs []uintptr
		for _, d := range strings.Split(path, ":") {
			if d == "" {
				d = "."
			}
			a := p.Str(d + "/" + name)
			st.paths[a] = d + "/" + name
			addrs = append(addrs, a)
		}
		st.pathReg = p.Reg()
		pathArg = st.pathReg.Arg()
		p.Op(s, func(e unix.Errno) error {
			e, i := rawplan.LookPathErrno(e)
			if i >= 0 && i < len(addrs) {
				return &execError{path: st.paths[addrs[i]], errno: e}
			}
			return &execError{path: name, errno: e}
		}, rawplan.LookPath, 0, dir.Arg(), lit(p.PathTable(addrs))).Into(st.pathReg)
	}

	// the go-ahead, when the cgroup namespace step did not read it
	if goByte == nil {
		s = p.Begin("go-ahead")
		r := p.Reg()
		p.Op(s, errno("the launcher's go-ahead"), rawplan.ReadOne, unix.SYS_READ, lit(uintptr(fd.life)), lit(0), lit(1)).Into(r)
		goByte = &r
	}

	// the terminal claimed (claimTerminal), the "forking" report; fd 2 is the command's
	// stderr from the start (the raw init has no runtime whose crash the launcher reads)
	s = p.Begin("signal dispositions")
	var ends []int
	for tty := uintptr(0); tty <= 2; tty++ {
		r := p.Reg()
		p.Op(s, nil, rawplan.Try, unix.SYS_IOCTL, lit(tty), lit(unix.TCGETS), lit(rawplan.Ptr(&c.termios))).Into(r)
		m := p.Mark()
		p.Op(s, nil, rawplan.SkipUnlessSet, 0, r.Arg())
		p.Op(s, nil, rawplan.Try, unix.SYS_IOCTL, lit(tty), lit(unix.TIOCSCTTY), lit(0))
		ends = append(ends, p.Mark())
		p.Op(s, nil, rawplan.Skip, 0)
		p.Guard(m)
		p.Release(r)
	}
	for _, i := range ends {
		p.Guard(i)
	}
	p.Op(s, errno("report"), rawplan.Emit, unix.SYS_WRITE, lit(uintptr(fd.sync)), lit(rawplan.RecForking), lit(0), lit(0))

	// the process stage, in a child of its own (planProcess's steps and calls)
	sub := p.BeginSub(s)
	if len(fd.join) > 0 || fd.cgroupFd > 0 {
		// The sandbox's cgroup, joined by the command first of all: the raw init, which
		// shares the launcher's memory, never joins (a memory cgroup's OOM kill of a
		// process sharing it would kill the launcher with it; docs/decisions.md "Speed,
		// sixth attempt"). This child shares that memory too until its execve, but
		// under CLONE_VFORK the OOM killer never picks it (oom_badness: in_vfork), and
		// its page faults are charged to the memory's owner, the launcher.
		ps := p.Begin("cgroup place")
		for _, j := range fd.join {
			p.Call(ps, errno("write 0 to tasks"), unix.SYS_WRITE, lit(uintptr(j)), lit(p.Str("0")), lit(1))
			p.Call(ps, errno("close tasks"), unix.SYS_CLOSE, lit(uintptr(j)))
		}
		if fd.cgroupFd > 0 {
			// (already in the v2 group: cloned into it) its directory closed as well
			p.Call(ps, errno("close the cgroup"), unix.SYS_CLOSE, lit(uintptr(fd.cgroupFd)))
		}
		if fd.cgroupNS {
			ps = p.Begin("cgroup namespace")
			p.Call(ps, errno("unshare(CLONE_NEWCGROUP)"), unix.SYS_UNSHARE, lit(unix.CLONE_NEWCGROUP))
		}
	}
	if built.oomRaise {
		// The command's oom_score_adj, raised here in its own process (oomscore.go):
		// a write by pid 1, which shares the launcher's memory (MMF_MULTIPROCESS), is
		// copied by __set_oom_adj (fs/proc/base.c) to every process of that memory,
		// the launcher too; this child's (vfork_done set) is its own alone. Its file
		// is its own only while the memory is dumpable (task_dump_owner): set so for
		// the open, and not dumpable again before anything else runs.
		ps := p.Begin("oom score")
		p.Call(ps, errno("prctl(PR_SET_DUMPABLE)"), unix.SYS_PRCTL, lit(unix.PR_SET_DUMPABLE), lit(1))
		oom := p.Reg()
		p.Call(ps, errno("open "+oomScorePath), unix.SYS_OPENAT, lit(atFdcwd), lit(p.Str(oomScorePath)), lit(unix.O_WRONLY|unix.O_CLOEXEC)).Into(oom)
		p.Call(ps, errno("prctl(PR_SET_DUMPABLE)"), unix.SYS_PRCTL, lit(unix.PR_SET_DUMPABLE), lit(0))
		p.Call(ps, errno("write "+oomScoreAdj+" to "+oomScorePath), unix.SYS_WRITE, oom.Arg(), lit(p.Str(oomScoreAdj)), lit(uintptr(len(oomScoreAdj))))
		p.CloseReg(ps, oom)
	}
	ps := p.Begin("signal mask")
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(unix.SIGKILL) || sig == uintptr(unix.SIGSTOP) {
			continue
		}
		p.Call(ps, errno(fmt.Sprintf("rt_sigaction %d SIG_DFL", sig)), unix.SYS_RT_SIGACTION, lit(sig), lit(rawplan.Ptr(&c.sigDfl)), lit(0), lit(8))
	}
	p.Call(ps, errno("unblock every signal"), unix.SYS_RT_SIGPROCMASK, lit(unix.SIG_SETMASK), lit(rawplan.Ptr(&c.noMask)), lit(0), lit(8))
	ps = p.Begin("setsid")
	p.Call(ps, errno("setsid"), unix.SYS_SETSID)
	ps = p.Begin("rlimits")
	for i, r := range proc.Rlimits {
		c.rlimits[i] = unix.Rlimit{Cur: r.Soft, Max: r.Hard}
		p.Call(ps, errno(fmt.Sprintf("setrlimit %s=%d:%d", r.Type, r.Soft, r.Hard)), unix.SYS_PRLIMIT64, lit(0), lit(uintptr(res[i])), lit(rawplan.Ptr(&c.rlimits[i])), lit(0))
	}
	ps = p.Begin("close fds")
	p.Call(ps, errno("close_range 3-max CLOSE_RANGE_CLOEXEC"), unix.SYS_CLOSE_RANGE, lit(3), lit(^uintptr(0)), lit(unix.CLOSE_RANGE_CLOEXEC))
	ps = p.Begin("chdir")
	p.Call(ps, errno("fchdir "+proc.Cwd), unix.SYS_FCHDIR, dir.Arg())
	p.Op(ps, errno("getcwd: working directory "+proc.Cwd+" is outside the new root"), rawplan.AbsCwd, unix.SYS_GETCWD)
	if u := proc.User.Umask; u != nil {
		ps = p.Begin("umask")
		p.Call(ps, errno(fmt.Sprintf("umask %#o", *u)), unix.SYS_UMASK, lit(uintptr(*u)))
	}
	ps = p.Begin("drop capabilities")
	for cp := 0; cp <= lastCap(); cp++ {
		p.Call(ps, errno("drop capability "+fmt.Sprint(cp)+" from the bounding set"), unix.SYS_PRCTL, lit(unix.PR_CAPBSET_DROP), lit(uintptr(cp)))
	}
	p.Call(ps, errno("set securebits"), unix.SYS_PRCTL, lit(unix.PR_SET_SECUREBITS), lit(caps.LockedNoRoot))
	p.Call(ps, errno("clear the ambient set"), unix.SYS_PRCTL, lit(unix.PR_CAP_AMBIENT), lit(unix.PR_CAP_AMBIENT_CLEAR_ALL))
	p.Call(ps, errno("capset to empty"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.empty[0])))
	p.Call(ps, errno("set no_new_privs"), unix.SYS_PRCTL, lit(unix.PR_SET_NO_NEW_PRIVS), lit(1))
	if filter := spec.Linux.Filter; len(filter) > 0 {
		ps = p.Begin("seccomp")
		prog := make([]byte, 8*len(filter))
		for i, ins := range filter {
			b := prog[8*i:]
			b[0], b[1], b[2], b[3] = byte(ins.Code), byte(ins.Code>>8), ins.Jt, ins.Jf
			b[4], b[5], b[6], b[7] = byte(ins.K), byte(ins.K>>8), byte(ins.K>>16), byte(ins.K>>24)
		}
		c.fprog.len, c.fprog.filter = uint16(len(filter)), p.Bytes(prog)
		if built.setid != nil {
			planRawListener(p, ps, built.setid, rawplan.Ptr(&c.fprog)) // rawsetid.go
		} else {
			p.Call(ps, errno("seccomp(SECCOMP_SET_MODE_FILTER)"), unix.SYS_SECCOMP, lit(unix.SECCOMP_SET_MODE_FILTER), lit(0), lit(rawplan.Ptr(&c.fprog)))
		}
	}
	ps = p.Begin("exec")
	argv, err := p.StrArray(proc.Args)
	if err != nil {
		return nil, &stepError{"exec", fmt.Errorf("args: %w", err)}
	}
	envv, err := p.StrArray(proc.Env)
	if err != nil {
		return nil, &stepError{"exec", fmt.Errorf("env: %w", err)}
	}
	p.Call(ps, func(e unix.Errno) error { return &execError{path: st.path(p), errno: e} }, unix.SYS_EXECVE, pathArg, lit(argv), lit(envv))
	p.EndSub(sub, fd.stageRepW)

	// the fork, reported as startPlan's are: under the process stage's first step
	s = p.Begin("signal mask")
	cmd := p.Reg()
	if fd.cgroupFd > 0 {
		// into the v2 group from its birth; its page faults until its execve are the
		// launcher's memory's, charged to the memory's owner (as a v1 join's)
		p.CloneSubInto(s, errno("clone3 CLONE_INTO_CGROUP"), sub, unix.CLONE_VFORK, fd.cgroupFd, cmd)
		p.Call(s, errno("close the cgroup"), unix.SYS_CLOSE, lit(uintptr(fd.cgroupFd)))
	} else {
		p.CloneSub(s, errno("clone"), sub, unix.CLONE_VFORK, cmd)
	}
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.stageRepW)))
	for _, j := range fd.join {
		p.Call(s, errno("close tasks"), unix.SYS_CLOSE, lit(uintptr(j)))
	}
	p.AwaitSub(s, errno("the process stage's report"), sub, lit(uintptr(fd.stageRepR)))
	p.Call(s, errno("close"), unix.SYS_CLOSE, lit(uintptr(fd.stageRepR)))
	p.CloseReg(s, dir) // as awaitPlan closes the command's working directory
	if built.setid != nil {
		planRawSetIDDone(p, s, built.setid)
	}

	// the exec report, then pid 1's capabilities dropped (dropThreadCaps), then the reaper
	s = p.Begin("exec report")
	p.Op(s, errno("report"), rawplan.Emit, unix.SYS_WRITE, lit(uintptr(fd.sync)), lit(rawplan.RecExec), lit(0), cmd.Arg())
	p.Call(s, errno("capset to empty"), unix.SYS_CAPSET, lit(rawplan.Ptr(&c.hdr)), lit(rawplan.Ptr(&c.empty[0])))
	pidfd := p.Reg()
	p.Call(s, errno("pidfd_open"), unix.SYS_PIDFD_OPEN, cmd.Arg(), lit(0)).Into(pidfd)
	var forward uint64
	for _, sig := range forwarded {
		forward |= 1 << (uint(sig.(unix.Signal)) - 1)
	}
	p.ReapOp(s, sigfd, pidfd, cmd, built.holder, built.helper, *goByte, fd.life, fd.sync, forward, lifeAck, lifeGoNoAck)
	if err := p.Finish(); err != nil {
		return nil, err
	}
	return st, nil
}

// relPath is a sandbox path relative to the root ("." for "/"), as mounts resolves it.
func relPath(p string) string {
	p = strings.TrimLeft(filepath.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}
