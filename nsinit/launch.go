package nsinit

import (
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/fault"
	"github.com/gosbx/gosbx/nsinit/config"
)

// cloneParams are what the clone of an init needs: its arguments, its credentials and
// namespaces (sys), the host id whose effective uid clones it (as, startInitAs), the
// CPUs it is pinned to, and fd 7 (egress, publish.go). spawn and Prestart derive them
// from a config the same way, so that an init cloned ahead can be compared with the
// one a config needs (same).
type cloneParams struct {
	args    []string
	sys     *syscall.SysProcAttr
	as      *hostID
	cpus    *unix.CPUSet
	egressR *os.File
	nsEvent bool // the namespaces are reported (Events, a pool's or session's start): the raw init's read while they can be
}

// initArgs are the init's arguments: a session's or a pooled init's mode, and
// treesArg when the launcher clones the bind sources (a root caller's host id).
func initArgs(session, pooled, mapped bool) []string {
	args := []string{InitArg}
	switch {
	case session:
		args = append(args, sessionArg)
	case pooled:
		args = append(args, poolArg)
	}
	if mapped {
		args = append(args, treesArg)
	}
	return args
}

// initSysAttr is the init's SysProcAttr for spec (its mappings already on the host id of a
// mapped launch, withHostID); owned says a host id owns the user namespace of a uid 0
// that keeps its mapping (ownerRange); cgroupFd is a cgroup v2 group to clone into, or -1.
func initSysAttr(spec *config.Config, mapped, owned bool, cgroupFd int) *syscall.SysProcAttr {
	flags, uids, gids := cloneConfig(spec)
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
	} else if owned {
		// Cloned with the effective uid nsOwner (startInitAs), which the init must not
		// keep: its ids are the spec's, set inside (setgroups stays denied).
		sys.Credential = &syscall.Credential{
			Uid: spec.Linux.UIDMappings[0].ContainerID, Gid: spec.Linux.GIDMappings[0].ContainerID, NoSetGroups: true}
	}
	if cgroupFd >= 0 {
		// cgroup v2: cloned straight into the group, no process ever runs outside it
		sys.UseCgroupFD = true
		sys.CgroupFD = cgroupFd
	}
	return sys
}

// same reports whether an init cloned with p is the one q asks for: the same
// arguments, namespaces, id maps, credentials and cloning uid, neither pinned to CPUs
// nor cloned into a cgroup, and neither with fd 7.
func (p *cloneParams) same(q *cloneParams) bool {
	a, b := p.sys, q.sys
	credSame := (a.Credential == nil) == (b.Credential == nil)
	if credSame && a.Credential != nil {
		x, y := a.Credential, b.Credential
		credSame = x.Uid == y.Uid && x.Gid == y.Gid && slices.Equal(x.Groups, y.Groups) && x.NoSetGroups == y.NoSetGroups
	}
	asSame := (p.as == nil) == (q.as == nil) && (p.as == nil || p.as.id == q.as.id)
	return slices.Equal(p.args, q.args) && credSame && asSame &&
		a.Cloneflags == b.Cloneflags && a.Setsid == b.Setsid &&
		slices.Equal(a.UidMappings, b.UidMappings) && slices.Equal(a.GidMappings, b.GidMappings) &&
		a.GidMappingsEnableSetgroups == b.GidMappingsEnableSetgroups && slices.Equal(a.AmbientCaps, b.AmbientCaps) &&
		!a.UseCgroupFD && !b.UseCgroupFD && p.cpus == nil && q.cpus == nil && p.egressR == nil && q.egressR == nil
}

// initLaunch is a cloned init with the launcher's ends of its descriptors: the config
// socket (fd 3), the sync pipe (4), the life pipe (5), its setup stderr (2), and the
// command's stdio.
type initLaunch struct {
	init                        *initProc
	specW, syncR, lifeW, setupR *os.File
	stdio                       *stdioCopy
	start                       time.Time // the clone
	params                      cloneParams
}

// launchInit makes the init's pipes and clones it with p, giving it stdio's
// descriptors. On failure it returns the step ("pipe", "clone") and the cause, with
// everything it made closed and stdio aborted.
func launchInit(p cloneParams, stdio *stdioCopy) (_ *initLaunch, step string, err error) {
	var files []*os.File // the parent's ends, closed on failure
	fail := func(step string, err error) (*initLaunch, string, error) {
		for _, f := range files {
			f.Close()
		}
		stdio.abort()
		return nil, step, err
	}
	// fd 3: a unix stream socket carrying the spec and the bind sources, and for a
	// pooled init, later, the process and its stdio.
	specR, specW, err := socketPair()
	if err == nil {
		files = append(files, specR, specW)
		err = fault.Check("pipe")
	}
	if err != nil {
		return fail("pipe", err)
	}
	syncR, syncW, err := os.Pipe()
	if err != nil {
		return fail("pipe", err)
	}
	files = append(files, syncR, syncW)
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return fail("pipe", err)
	}
	files = append(files, lifeR, lifeW)
	// fd 2 of the init while it builds the sandbox: a pipe read here (setuppids.go), the
	// command's stderr passed beside it as stderrFd.
	setupR, setupW, err := os.Pipe()
	if err != nil {
		return fail("pipe", err)
	}
	files = append(files, setupR, setupW)
	l := &initLaunch{specW: specW, syncR: syncR, lifeW: lifeW, setupR: setupR, stdio: stdio, params: p, start: time.Now()}
	if err = fault.Check("clone"); err == nil {
		attr := &syscall.ProcAttr{
			// GOMAXPROCS bounds the init's runtime threads, which count against the
			// pids limit (SetupPids), on a host of any size (initProcs).
			Env: append(fault.Env(), initProcs),
			Files: []uintptr{uintptr(stdio.fds[0]), uintptr(stdio.fds[1]), setupW.Fd(),
				specR.Fd(), syncW.Fd(), lifeR.Fd(), uintptr(stdio.fds[2])},
			Sys: p.sys,
		}
		if p.egressR != nil {
			attr.Files = append(attr.Files, p.egressR.Fd())
		}
		if p.as != nil {
			// the sandbox's user namespace owned by its host id, which the kernel then
			// charges for the sandbox's per-user counts, not host root (usercounts.go)
			l.init, err = startInitAs(p.as.id, p.args, attr, p.cpus)
		} else {
			l.init, err = startInit(p.args, attr, p.cpus)
		}
	}
	if err != nil {
		return fail("clone", err)
	}
	stdio.sent() // the init holds its ends now
	specR.Close()
	syncW.Close()
	lifeR.Close()
	setupW.Close()
	return l, "", nil
}

// abort kills an init that never got its config, reaps it, and closes its
// descriptors and stdio.
func (l *initLaunch) abort() {
	l.init.kill()
	l.init.wait()
	l.specW.Close()
	l.syncR.Close()
	l.lifeW.Close()
	l.setupR.Close()
	l.stdio.abort()
}
