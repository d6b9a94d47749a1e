package nsinit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The launcher's side of the raw init: the plan compiled from the config it already has
// (planRawBuild, planRawStart), the raw child cloned with the init's namespaces and id
// maps, and its reports read as the Go init's messages (rawReports), so that the rest
// of the launch (cgroup placement, go-ahead, acknowledgement, Wait) is the same code
// for both inits.

// rawLaunch is a raw init's plan and what reading its reports needs.
type rawLaunch struct {
	plan  *rawplan.Plan
	start *rawStart
	sync  *os.File
	names []byte // RecLeftName parts so far, each name NUL-ended as msgExit's Names
	named bool   // a RecLeftName record started a name
}

// rawWanted reports whether this launch takes the raw init: only in a build that asks
// for it (rawInitDefault), in a process that allowed it once (AllowRawInit: the gosbx
// CLI), for a config rawEligible accepts, and a clone whose parameters the raw clone
// implements (a root caller's host id, trees and credentials included; no CPU
// quota, pinned or not: the raw init's set-ID handler runs outside the group, so its
// CPU would be outside the quota (attack review 17); no fd 7), with or without a cgroup (group): the raw init shares the
// launcher's memory, so it never joins the group (an OOM kill in the group would kill
// every process sharing its victim's memory: the launcher with it; it is cloned
// without the Go init's CLONE_INTO_CGROUP); each command joins it in its process stage
// (rawStartFds: a v1 group's cgroup.procs written, or a v2 group's clone3
// CLONE_INTO_CGROUP of the stage, for a raw init that runs as the launcher's uid: a
// root caller's host id may not clone into a v2 group, the Go init then).
func rawWanted(spec *config.Config, p *cloneParams, pooled, session bool, group cgroup.Group) bool {
	// A v2 group's clone3 is checked against the cloner's own credentials
	// (cgroup_attach_permissions: write access to the cgroup.procs of the common
	// ancestor of its group and the target): the launcher's own, not a host id's
	// (p.as), whose raw init the launcher's group's ancestors refuse
	v2 := group != nil && group.Kind() == cgroup.V2 && group.CloneFd() >= 0 && p.as == nil
	if !rawInitDefault || pooled || session || group != nil && group.Kind() != cgroup.V1 && !v2 || p.cpus != nil || cpuCount(spec) > 0 || p.egressR != nil ||
		p.sys.UseCgroupFD && !v2 || len(spec.Cleanup) > 0 {
		return false
	}
	// the set-ID handler executes this program after pivot_root: not a program the
	// sandbox's root gives an ELF interpreter (rawSetIDExe)
	if spec.Linux != nil && spec.Linux.Filter.Notifies() {
		if _, err := rawSetIDExe(); err != nil {
			return false
		}
	}
	// last: the one raw launch of an AllowRawInit process is spent only on a config
	// that takes it
	return rawEligible(spec) == nil && takeRaw()
}

// rawArena is the size of a raw init's arena before the command's arguments,
// environment and filter, and rawOps the ops it holds: the agent policy's plan is ~700
// ops and ~60 KiB (TestRawRootSameMounts), its states and stacks ~50 KiB.
const (
	rawArena = 1 << 20
	rawOps   = 8192
)

// rawArenaSize is the arena a config's plan needs: rawArena and room for the
// command's arguments and environment (their C strings and pointers, twice for the
// PATH candidates' share), the files' contents and the filter.
func rawArenaSize(spec *config.Config) int {
	n := rawArena
	if spec.Process != nil {
		for _, a := range append(slices.Clip(spec.Process.Args), spec.Process.Env...) {
			n += 2*len(a) + 16
		}
	}
	for _, f := range spec.Files {
		n += len(f.Content) + len(f.Path) + 16
	}
	if spec.Linux != nil {
		n += 8 * len(spec.Linux.Filter)
	}
	return n
}

// launchRaw compiles spec's raw init, clones it with p's namespaces and id maps, and
// gives it stdio's descriptors. It returns the launch as launchInit does (specW nil:
// the config is in the plan), or the step and the cause, with everything it made
// closed and stdio aborted.
func launchRaw(spec *config.Config, p cloneParams, stdio *stdioCopy, group cgroup.Group) (_ *initLaunch, _ *rawLaunch, step string, err error) {
	var mine []int // the launcher's copies, closed after the clone (or on failure)
	closeMine := func() {
		closeFds(mine)
		mine = nil
	}
	var keep []*os.File // the launcher's ends it keeps
	fail := func(step string, err error) (*initLaunch, *rawLaunch, string, error) {
		closeMine()
		for _, f := range keep {
			f.Close()
		}
		stdio.abort()
		return nil, nil, step, err
	}
	pipe := func() ([2]int, error) {
		var fds [2]int
		err := unix.Pipe2(fds[:], unix.O_CLOEXEC)
		return fds, err
	}
	var fd rawFds
	var sfd rawStartFds
	// A root caller's init runs as its host id, which may not reach a source (under
	// /root): the launcher clones every bind (sendSpec's trees), and idmaps the
	// read-write ones once the raw init's user namespace has its maps (the raw init
	// holds the same detached mounts at the same numbers).
	fd.trees = slices.Contains(p.args, treesArg)
	var trees []*mounts.Source
	if fd.trees {
		if err = fault.Check("open bind source"); err == nil {
			trees, err = mounts.CloneSources(spec)
		}
		if err != nil {
			return fail("open bind source", err)
		}
		for _, t := range trees {
			mine = append(mine, t.Fd())
			fd.sources = append(fd.sources, t.Fd())
		}
	} else {
		for _, src := range mounts.BindSources(spec) {
			var sf int
			if sf, err = mounts.OpenSourcePath(src); err == nil {
				err = fault.Check("open bind source")
			}
			if err != nil {
				return fail("open bind source", err)
			}
			mine = append(mine, sf)
			fd.sources = append(fd.sources, sf)
		}
	}
	// the sandbox's v1 cgroup, joined by the command in its process stage: its tasks
	// file in each hierarchy, opened here (v1 checks the opener's credentials,
	// __cgroup1_procs_write: root's, not the host id's the raw init runs as). tasks, not
	// cgroup.procs: the stage is one thread, so moving that thread moves the process,
	// and a write of "0" to tasks (this thread alone) is the one v1 migration that does
	// not take cgroup_threadgroup_rwsem for writing (cgroup_procs_write_start), whose
	// rcu_sync costs an RCU grace period, ~9 ms here, whenever no migration ran in the
	// last one (docs/decisions.md "v1 join through tasks")
	switch {
	case group == nil:
	case group.Kind() == cgroup.V2 && group.CloneFd() >= 0:
		// the group's directory, which the process stage is cloned into: the group's own
		// descriptor, kept by the raw init at its number (not the launcher's to close)
		sfd.cgroupFd = group.CloneFd()
		fd.grouped = true
		sfd.cgroupNS = hasNamespace(spec, specs.CgroupNamespace)
	case group.Kind() != cgroup.V1:
		return fail("config", fmt.Errorf("a %s group for the raw init", group.Kind()))
	default:
		seen := map[string]bool{}
		for _, d := range group.Dirs() {
			if seen[d.Path] { // co-mounted hierarchies (cpu,cpuacct) listed twice
				continue
			}
			seen[d.Path] = true
			j, err := unix.Open(filepath.Join(d.Path, "tasks"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				// the step the Go init's placement fails at
				return fail("cgroup", &os.PathError{Op: "open", Path: filepath.Join(d.Path, "tasks"), Err: err})
			}
			mine = append(mine, j)
			sfd.join = append(sfd.join, j)
		}
		fd.grouped = true
		sfd.cgroupNS = hasNamespace(spec, specs.CgroupNamespace)
	}
	// the clone child's credentials inside, as forkAndExecInChild1 sets them
	if cr := p.sys.Credential; cr != nil {
		fd.cred = cr
		fd.setgroups = !(p.sys.GidMappings != nil && !p.sys.GidMappingsEnableSetgroups && len(cr.Groups) == 0) && !cr.NoSetGroups
	}
	if spec.Linux != nil && len(spec.Linux.MaskedPaths) > 0 {
		if fd.null, err = mounts.OpenNull("/dev/null"); err != nil {
			return fail("mount", err)
		}
		defer fd.null.Close()
	}
	var syncP, lifeP, mapsP, holderRep, stageRep [2]int
	for _, pp := range []*[2]int{&syncP, &lifeP, &mapsP, &holderRep, &stageRep} {
		if *pp, err = pipe(); err != nil {
			return fail("pipe", err)
		}
		mine = append(mine, pp[0], pp[1])
		if err = fault.Check("pipe"); err != nil {
			return fail("pipe", err)
		}
	}
	fd.mapsR, fd.mapsW, fd.life = mapsP[0], mapsP[1], lifeP[0]
	fd.holderRepR, fd.holderRepW = holderRep[0], holderRep[1]
	if fd.holderSend, fd.holderRecv, fd.holderExe, err = (&kernelInit{}).holderFiles(); err != nil {
		return fail("pid namespace", err)
	}
	mine = append(mine, fd.holderSend, fd.holderRecv, fd.holderExe)
	if spec.Linux != nil && spec.Linux.Filter.Notifies() {
		var opened []int
		if fd.setid, opened, err = openRawSetID(); err != nil { // rawsetid.go
			return fail("set-ID thread", err)
		}
		mine = append(mine, opened...)
	}
	sfd.sync, sfd.stageRepR, sfd.stageRepW, sfd.life = syncP[1], stageRep[0], stageRep[1], lifeP[0]

	plan, err := rawplan.New(rawArenaSize(spec), rawOps)
	if err != nil {
		return fail("config", err)
	}
	freePlan := true
	defer func() {
		if freePlan {
			plan.Free()
		}
	}()
	// the command's stdio at 0-2, every descriptor the plan names kept, all others closed
	var needed []int
	for _, f := range mine {
		if f != syncP[0] && f != lifeP[1] { // the launcher's ends: the life pipe must end with the launcher
			needed = append(needed, f)
		}
	}
	if fd.null != nil {
		needed = append(needed, nullFd(fd.null))
	}
	if sfd.cgroupFd > 0 {
		needed = append(needed, sfd.cgroupFd)
	}
	s := plan.Begin("move descriptors")
	// named as the Go init's argv[0] for ps(1) and the tests that look for it: its
	// command line is the launcher's, whose memory it shares
	plan.Call(s, nil, unix.SYS_PRCTL, rawplan.Lit(unix.PR_SET_NAME), rawplan.Lit(plan.Str(InitArg)))
	// A fault of its own (a bug) kills the raw init with its default action, never the
	// launcher's Go handler, which would run on the launcher's g in its memory. The
	// signal handlers are its own copy (no CLONE_SIGHAND); every other signal stays
	// blocked, the forwarded ones read from a signalfd.
	dfl := rawplan.Alloc[[4]uintptr](plan)
	for _, sig := range []unix.Signal{unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL, unix.SIGTRAP, unix.SIGSYS} {
		plan.Call(s, func(e unix.Errno) error { return fmt.Errorf("rt_sigaction %v SIG_DFL: %w", sig, e) },
			unix.SYS_RT_SIGACTION, rawplan.Lit(uintptr(sig)), rawplan.Lit(rawplan.Ptr(dfl)), rawplan.Lit(0), rawplan.Lit(8))
	}
	for i, f := range stdio.fds {
		if f < 3 && f != i {
			// another of the caller's 0-2 (Stdout and Stderr both os.Stdout, the 2>&1
			// idiom; or swapped): a launcher copy above 2, so that no dup3 below
			// overwrites a descriptor a later one reads (from an attack review)
			c, err := unix.FcntlInt(uintptr(f), unix.F_DUPFD_CLOEXEC, 3)
			if err != nil {
				return fail("config", fmt.Errorf("fcntl F_DUPFD_CLOEXEC of the command's stdio %d: %w", f, err))
			}
			mine = append(mine, c) // not needed: closed in the raw init after its dup3
			f = c
		}
		switch {
		case f == i:
			// the caller's own descriptor, shared: inherited as it is, without close-on-exec
			plan.Call(s, func(e unix.Errno) error { return fmt.Errorf("fcntl: %w", e) }, unix.SYS_FCNTL, rawplan.Lit(uintptr(f)), rawplan.Lit(unix.F_SETFD), rawplan.Lit(0))
		default:
			plan.Call(s, func(e unix.Errno) error { return fmt.Errorf("dup3: %w", e) }, unix.SYS_DUP3, rawplan.Lit(uintptr(f)), rawplan.Lit(uintptr(i)), rawplan.Lit(0))
		}
	}
	slices.Sort(needed)
	next := 3
	for _, n := range needed {
		if n < 3 {
			return fail("config", errors.New("a descriptor of the raw init below 3"))
		}
		if n > next {
			plan.Call(s, func(e unix.Errno) error { return fmt.Errorf("close_range: %w", e) }, unix.SYS_CLOSE_RANGE, rawplan.Lit(uintptr(next)), rawplan.Lit(uintptr(n-1)), rawplan.Lit(0))
		}
		next = n + 1
	}
	plan.Call(s, func(e unix.Errno) error { return fmt.Errorf("close_range: %w", e) }, unix.SYS_CLOSE_RANGE, rawplan.Lit(uintptr(next)), rawplan.Lit(^uintptr(0)), rawplan.Lit(0))
	built, err := planRawBuild(plan, spec, &fd)
	if err != nil {
		var se *stepError
		if errors.As(err, &se) {
			return fail(se.step, se.err)
		}
		return fail("config", err)
	}
	start, err := planRawStart(plan, spec, built, sfd)
	if err != nil {
		var se *stepError
		if errors.As(err, &se) {
			return fail(se.step, se.err)
		}
		return fail("config", err)
	}
	if err = fault.Check("clone"); err != nil {
		return fail("clone", err)
	}
	// The raw init's "set not dumpable" is its memory's, this process's too, until it
	// is reaped (initProc.after)
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	flags := p.sys.Cloneflags
	t0 := time.Now()
	var pid int
	var mapErr error
	clone := func() (err error) {
		if pid, err = rawplan.Start(plan, flags, syncP[1]); err == nil {
			// from the cloning thread, as forkExecInit writes them: a host id's thread
			// owns the new user namespace, which is all map_write(2) asks of the writer
			// there (a root caller without CAP_SYS_ADMIN has it nowhere else)
			mapErr = writeIDMaps(pid, p.sys)
		}
		return err
	}
	if p.as != nil {
		// cloned by the host id, which then owns the user namespace (startInitAs), and
		// its id maps written by it, without a locked thread (rawplan.StartAs)
		err = rawAsHostID(p.as.id, func() (err error) {
			files, data := idMapWrites(p.sys)
			if pid, err = rawplan.StartAs(plan, flags, syncP[1], p.as.id, files, data); err != nil && pid != 0 {
				// cloned, but its id maps not written, or the thread's credentials
				// not put back: killed and reaped as after a failed map write
				mapErr, err = err, nil
			}
			return err
		})
	} else {
		err = clone()
	}
	if err != nil {
		return fail("clone", &os.PathError{Op: "clone", Path: "raw init", Err: err})
	}
	// the launcher's copies of what the raw init holds now, but its ends of sync, life
	// and the id maps' gate, and the trees it idmaps below
	keepFd := func(f int) bool {
		return f == syncP[0] || f == lifeP[1] || f == mapsP[1] || slices.ContainsFunc(trees, func(t *mounts.Source) bool { return t.Fd() == f })
	}
	for _, f := range mine {
		if !keepFd(f) {
			unix.Close(f)
		}
	}
	mine = []int{mapsP[1]}
	// Wrapped only now, once no failure can close them as numbers (closeMine): a
	// number closed under an os.File is closed again by its finalizer, whatever the
	// process has opened at it since (docs/decisions.md "A raw launch's descriptors
	// closed twice")
	// Non-blocking (its own end only: the raw init's writes stay blocking), so that
	// os.NewFile makes it pollable: the reports are waited for in the runtime's poller,
	// not by a thread blocked in read(2) whose P goes to another thread
	unix.SetNonblock(syncP[0], true)
	syncR := os.NewFile(uintptr(syncP[0]), "sync")
	lifeW := os.NewFile(uintptr(lifeP[1]), "life")
	for _, t := range trees {
		mine = append(mine, t.Fd())
	}
	rawLive.Store(true)
	init := &initProc{pid: pid, after: func() {
		plan.Free()
		defer rawLive.Store(false)
		if dumpable == 1 {
			// the memory is this process's alone again: dumpable as before, so that
			// its later launches' clone children have /proc files it may write (the id
			// maps; review11 F1)
			unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
	}}
	freePlan = false
	// Its namespaces, read now: it waits for the id maps. Once it has made itself not
	// dumpable (PR_SET_DUMPABLE is its memory's, the launcher's too), /proc/PID/ns is
	// closed to the launcher (TestStatusFD saw it, a race the Go init's slower start hid).
	// Only when an event reports them: seven stat(2)s of /proc a launch otherwise.
	if p.nsEvent {
		ns := namespaceEvent(pid)
		init.ns = &ns
	}
	mapStep := "clone"
	if mapErr == nil && fd.trees {
		// before the go-ahead: the raw init attaches the trees only after it
		mapStep, mapErr = idmapRaw(spec, trees, pid, p.as)
	}
	if mapErr == nil {
		if _, werr := unix.Write(mapsP[1], []byte{0}); werr != nil {
			mapErr = fmt.Errorf("write the id maps' go-ahead: %w", werr)
		}
	}
	if mapErr != nil {
		// killed before the gate closes (closeMine): it must not report the gate's end
		// of file as its own failure in place of mapErr
		init.kill()
	}
	closeMine()
	if mapErr != nil {
		rl := &rawLaunch{plan: plan, start: start, sync: syncR}
		if m, ok := rl.next(); ok && m.Type == msgError {
			mapErr = m.err() // the child stopped first: its step's error
		}
		init.wait() // unmaps the arena: after its report was read
		syncR.Close()
		lifeW.Close()
		stdio.abort()
		return nil, nil, mapStep, mapErr
	}
	stdio.sent()
	// no setupR: a raw init has no runtime to crash, so nothing would write to it
	l := &initLaunch{init: init, syncR: syncR, lifeW: lifeW, stdio: stdio, params: p, start: t0}
	return l, &rawLaunch{plan: plan, start: start, sync: syncR}, "", nil
}

// idmapRaw idmaps a root caller's trees for the raw init pid, whose command runs as the
// host id hid, as sendSpec does for the Go init: it returns the step and the error
// that stopped it (a *mounts.Error of op idmap as it is, for the fallback to host uid 0
// that spawn may take).
func idmapRaw(spec *config.Config, trees []*mounts.Source, pid int, hid *hostID) (string, error) {
	plan, owners, err := idmapPlan(spec, trees)
	if err != nil {
		return "open bind source", err
	}
	self := fileOwner{spec.Linux.UIDMappings[0].ContainerID, spec.Linux.GIDMappings[0].ContainerID}
	if err = fault.Check("idmap"); err == nil {
		err = idmapTrees(trees, plan, owners, pid, self, hid.id)
	}
	return "idmap", err
}

// nullFd is the descriptor of a verified /dev/null.
func nullFd(n *mounts.Null) int { return n.Fd() }

// next reads the raw init's next report as the Go init's message: forking, exec (its
// path and pid), exit (the command's wait status), or a failure as the error or
// exec-error message the Go init's step would send; ok is false at end of file.
func (r *rawLaunch) next() (message, bool) {
	var b [16]byte
again:
	if _, err := io.ReadFull(r.sync, b[:]); err != nil {
		return message{}, false
	}
	rec := rawplan.Record{Kind: uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24,
		A: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24}
	for i := 7; i >= 0; i-- {
		rec.B = rec.B<<8 | uint64(b[8+i])
	}
	switch rec.Kind {
	case rawplan.RecForking:
		return message{Type: msgForking}, true
	case rawplan.RecExec:
		return message{Type: msgExec, Path: r.start.path(r.plan), Pid: int(rec.B)}, true
	case rawplan.RecExit:
		if r.named {
			r.names = append(r.names, 0) // the last name's end
		}
		return message{Type: msgExit, Status: int(rec.B), Left: int(rec.A), Names: string(r.names)}, true
	case rawplan.RecLeftName:
		// a part of a name the exit report carries (rawplan's leftRunning): part 0
		// starts one, which ends the one before (counted by records, not by bytes: a
		// name may be empty)
		if rec.A>>8 == 0 {
			if r.named {
				r.names = append(r.names, 0)
			}
			r.named = true
		}
		for i := uint32(0); i < rec.A&0xff && i < 8; i++ {
			r.names = append(r.names, byte(rec.B>>(8*i)))
		}
		goto again
	}
	step, err := r.plan.Failed(rec, len(b))
	var ee *execError
	if errors.As(err, &ee) {
		return message{Type: msgExecError, Path: ee.path, Errno: int(ee.errno), Error: ee.Error()}, true
	}
	return errorMessage(step, err), true
}
