// Package cgroup puts a sandbox in a cgroup of its own with resource limits, reports
// what it used, and removes the group when the sandbox is gone. It detects the host's
// mode at run time: cgroup v2 (limits in memory.max, memory.swap.max, pids.max,
// cpu.max; the init cloned straight into the group with CLONE_INTO_CGROUP; teardown by
// cgroup.kill), or v1 and hybrid hosts (memory, memsw, pids, cpu, cpuacct hierarchies;
// the init placed before it receives its config, so before the command can run).
// Groups are nested under the caller's own cgroup (v1), or under a parent the caller
// names or /gosbx (v2), through github.com/containerd/cgroups/v3. Source of truth: the
// kernel's Documentation/admin-guide/cgroup-v2.rst and cgroup-v1/*.rst.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/cgroups/v3"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Kind names the mechanism that applied the limits.
type Kind string

const (
	None Kind = "none" // no cgroup: the sandbox runs without cgroup limits
	// Rlimit is no cgroup either, but the process limit held as RLIMIT_NPROC on a host id
	// the sandbox alone runs as (nsinit, a root caller's default limit).
	Rlimit Kind = "rlimit"
	V1     Kind = "cgroup-v1" // v1 hierarchies (legacy or hybrid hosts)
	V2     Kind = "cgroup-v2" // the unified hierarchy
)

// ErrUnavailable is wrapped by New when no cgroup can be made for this caller here.
var ErrUnavailable = errors.New("no usable cgroup")

// Group is one sandbox's cgroup.
type Group interface {
	// Kind says which mechanism holds the limits.
	Kind() Kind
	// CloneFd is an open directory of the group for CLONE_INTO_CGROUP, or -1 (v1).
	CloneFd() int
	// Add places a process (v1; a no-op when the process was cloned into the group).
	Add(pid int) error
	// Stats reads what the sandbox used.
	Stats() Stats
	// LimitEvents reads how many times so far the memory limit's OOM killer killed a
	// process of the group (oom_kill) and a fork was refused at the pids limit (pids.events
	// max): counts, 0 when unknown. Cheaper than Stats (two files): a session reads them
	// around each command.
	LimitEvents() (oomKills, pidsMaxHits int64)
	// Destroy kills whatever is left and removes the group; safe to call twice.
	Destroy() error
	// Dirs are the group's directories on the host, for a sandbox to see its own
	// limits through: one per v1 hierarchy (Controller "memory", "pids", "cpu",
	// "cpuacct"), or the v2 group (Controller "").
	Dirs() []Dir
}

// Dir is a group's directory in one hierarchy: Path on the host, Controller the v1
// hierarchy's name ("" for the unified hierarchy).
type Dir struct {
	Controller string
	Path       string
}

// Stats is what a sandbox used, read when it has ended. Zero when unknown.
type Stats struct {
	MemoryPeak int64 // bytes
	CPUUser    int64 // microseconds
	CPUSystem  int64 // microseconds
	PidsPeak   int64 // v2 with pids.peak only
	OOMKilled  bool  // the memory limit killed a process
	PidsMaxHit bool  // a fork failed at the pids limit
}

// Options are where and how to make the group.
type Options struct {
	// Parent is a cgroup v2 group (relative to the mount point) to create the group in,
	// such as a subtree delegated to the caller; "" means /gosbx for v2, and the
	// caller's own cgroup for v1.
	Parent string
	// ID is the sandbox's id (NewID): the group is gosbx-<ID>. "" takes a new one.
	ID string
}

// Mode is the host's cgroup mode: V2 when the unified hierarchy holds the controllers,
// V1 on legacy and hybrid hosts, None without any.
func Mode() Kind {
	switch cgroups.Mode() {
	case cgroups.Unified:
		return V2
	case cgroups.Legacy, cgroups.Hybrid:
		return V1
	}
	return None
}

// New makes a group with the resources r (runtime-spec: memory limit and swap as
// memory+swap, pids, cpu quota and period). Errors wrap ErrUnavailable when the host or
// the caller's rights allow no group, naming the path and the cause.
func New(r *specs.LinuxResources, o Options) (Group, error) {
	switch Mode() {
	case V2:
		return newV2(r, o)
	case V1:
		if o.Parent != "" {
			return nil, fmt.Errorf("%w: a cgroup parent (%s) names a cgroup v2 group, and this host keeps its controllers in cgroup v1", ErrUnavailable, o.Parent)
		}
		return newV1(r, o)
	}
	return nil, fmt.Errorf("%w: no cgroup file system is mounted at /sys/fs/cgroup", ErrUnavailable)
}

// CollectStale removes the groups of gosbx launchers that are gone (a SIGKILLed gosbx
// exec), as New does before it makes one: for a launch that makes none. Errors are
// ignored; v1 as root, and v2 under /gosbx. A parent where another launch is making a
// group (or another sweep runs) is skipped: the next sweep does it. It sweeps only when
// sweepNeeded: a free owner's lock file, or no whole sweep since boot.
func CollectStale() {
	switch Mode() {
	case V1:
		if os.Geteuid() == 0 {
			if own, err := v1Hierarchies(); err == nil {
				collectV1(own)
			}
		}
	case V2:
		if sweepNeeded([]string{filepath.Join(v2Mount, DefaultParent)}) {
			gcV2(DefaultParent, 0)
		}
	}
}

// CollectStaleWait is CollectStale where a parent in use is tried again for up to wait
// before it is skipped: for a cleanup that should not leave a group it could remove
// (after a session's supervisor was found dead), not for a launch, which should not
// wait.
func CollectStaleWait(wait time.Duration) {
	switch Mode() {
	case V1:
		if os.Geteuid() == 0 {
			gcV1(wait)
		}
	case V2:
		gcV2(DefaultParent, wait)
	}
}

// launcherAlive reports whether the pid in a group name of an older gosbx
// (gosbx-<pid>-<seq>-<time>) is a live process.
func launcherAlive(group string) bool {
	parts := strings.Split(group, "-")
	if len(parts) < 2 || parts[0] != "gosbx" {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return true
	}
	_, err = os.Stat("/proc/" + strconv.Itoa(pid))
	return err == nil
}
