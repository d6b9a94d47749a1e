package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// v2Mount is the unified hierarchy's mount point (a variable so tests can point it at a tmpfs).
var v2Mount = "/sys/fs/cgroup"

// DefaultParent is the v2 group sandboxes are made in when no parent is named.
const DefaultParent = "/gosbx"

type v2Group struct {
	group string
	fd    int
	owner *os.File // the owner's lock (owner.go)
	held  *os.File // the flock on the group's directory an older gosbx's sweep reads (holdDir)
	gone  bool
	// events are LimitEvents' files, kept open (events.go)
	events *eventFiles
}

// newV2 makes parent/gosbx-<o.ID> with the limits (enabling the controllers it needs in
// every ancestor's cgroup.subtree_control) and opens it for CLONE_INTO_CGROUP.
func newV2(r *specs.LinuxResources, o Options) (Group, error) {
	parent := o.Parent
	if parent == "" {
		parent = DefaultParent
	}
	parent = "/" + strings.Trim(filepath.Clean("/"+parent), "/")
	gcV2(parent, 0)
	id := o.ID
	if id == "" {
		id = NewID()
	}
	group := filepath.Join(parent, groupName(id))
	lock, err := ownerLock(groupName(id), filepath.Join(v2Mount, group)) // before the mkdir: a sweep never finds the group unowned
	if err != nil {
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("%w: create cgroup v2 group %s: %v", ErrUnavailable, group, err)
		}
		return nil, fmt.Errorf("create cgroup v2 group %s: %w", group, err)
	}
	if err := makeV2(filepath.Join(v2Mount, group), r); err != nil {
		releaseOwnerIfGone(lock, filepath.Join(v2Mount, group))
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("%w: create cgroup v2 group %s: %v (no cgroup delegated to this user: name one with --cgroup-parent, e.g. inside `systemd-run --user --scope -p Delegate=yes`)", ErrUnavailable, group, err)
		}
		return nil, fmt.Errorf("create cgroup v2 group %s: %w", group, err)
	}
	fd, err := unix.Open(filepath.Join(v2Mount, group), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		removeWithin(filepath.Join(v2Mount, group), 0)
		releaseOwnerIfGone(lock, filepath.Join(v2Mount, group))
		return nil, fmt.Errorf("open cgroup %s: %w", group, err)
	}
	dir := filepath.Join(v2Mount, group)
	return &v2Group{group: group, fd: fd, owner: lock, held: holdDir(dir),
		events: newEventFiles(filepath.Join(dir, "memory.events"), "oom_kill", filepath.Join(dir, "pids.events"), "max")}, nil
}

func (g *v2Group) Kind() Kind    { return V2 }
func (g *v2Group) CloneFd() int  { return g.fd }
func (g *v2Group) Add(int) error { return nil } // cloned into the group

// Stats reads memory.peak, memory.events' oom_kill, cpu.stat's user_usec and
// system_usec, pids.peak and pids.events.
func (g *v2Group) Stats() Stats {
	dir := filepath.Join(v2Mount, g.group)
	return Stats{
		MemoryPeak: readInt(filepath.Join(dir, "memory.peak")),
		OOMKilled:  eventCount(filepath.Join(dir, "memory.events"), "oom_kill") > 0,
		CPUUser:    eventCount(filepath.Join(dir, "cpu.stat"), "user_usec"),
		CPUSystem:  eventCount(filepath.Join(dir, "cpu.stat"), "system_usec"),
		PidsPeak:   readInt(filepath.Join(dir, "pids.peak")),
		PidsMaxHit: eventCount(filepath.Join(dir, "pids.events"), "max") > 0,
	}
}

// LimitEvents reads memory.events' oom_kill and pids.events' max, through descriptors
// kept open until Destroy (events.go).
func (g *v2Group) LimitEvents() (oomKills, pidsMaxHits int64) { return g.events.counts() }

// Dirs is the group's directory in the unified hierarchy.
func (g *v2Group) Dirs() []Dir { return []Dir{{Path: canonical(filepath.Join(v2Mount, g.group))}} }

// Destroy kills what is left with cgroup.kill and removes the group.
func (g *v2Group) Destroy() error {
	if g.gone {
		return nil
	}
	g.gone = true
	g.events.close()
	defer func() { // the owner's lock, held until the group is gone
		unix.Close(g.fd)
		if g.held != nil {
			g.held.Close()
		}
		releaseOwnerIfGone(g.owner, filepath.Join(v2Mount, g.group))
	}()
	return killRemoveV2(filepath.Join(v2Mount, g.group), 5*time.Second)
}

// makeV2 makes the group dir, enables the controllers its limits need in every
// ancestor's cgroup.subtree_control below the mount (an error only when the last write
// fails: a delegated subtree's caller may not write its upper ancestors, which have
// them enabled already), and writes the limits: cpu.max ("quota period", "max" for
// no quota), memory.swap.max (runtime-spec's memory+swap less the memory limit; "max"
// for -1), memory.max, pids.max (Documentation/admin-guide/cgroup-v2.rst).
func makeV2(dir string, r *specs.LinuxResources) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var ctrl []string
	var vals [][2]string
	if r != nil && r.CPU != nil {
		ctrl = append(ctrl, "+cpu")
		if r.CPU.Period != nil {
			quota := "max"
			if r.CPU.Quota != nil {
				quota = strconv.FormatInt(*r.CPU.Quota, 10)
			}
			vals = append(vals, [2]string{"cpu.max", quota + " " + strconv.FormatUint(*r.CPU.Period, 10)})
		}
	}
	if r != nil && r.Memory != nil {
		ctrl = append(ctrl, "+memory")
		m := r.Memory
		if m.Swap != nil {
			swap := strconv.FormatInt(*m.Swap, 10)
			if *m.Swap < 0 {
				swap = "max" // the kernel refuses a negative value
			} else if m.Limit != nil {
				swap = strconv.FormatInt(*m.Swap-*m.Limit, 10)
			}
			vals = append(vals, [2]string{"memory.swap.max", swap})
		}
		if m.Limit != nil {
			vals = append(vals, [2]string{"memory.max", strconv.FormatInt(*m.Limit, 10)})
		}
	}
	if r != nil && r.Pids != nil && r.Pids.Limit != nil {
		ctrl = append(ctrl, "+pids")
		max := "max"
		if *r.Pids.Limit > 0 {
			max = strconv.FormatInt(*r.Pids.Limit, 10)
		}
		vals = append(vals, [2]string{"pids.max", max})
	}
	if len(ctrl) > 0 {
		// from the mount down: a controller is enabled in a group only once its parent has it
		var up []string
		for a := filepath.Dir(dir); a == v2Mount || strings.HasPrefix(a, v2Mount+"/"); a = filepath.Dir(a) {
			up = append(up, a)
		}
		var last error
		for i := len(up) - 1; i >= 0; i-- {
			last = writeFile(up[i], "cgroup.subtree_control", strings.Join(ctrl, " "))
		}
		if last != nil {
			syscall.Rmdir(dir)
			return last
		}
	}
	for _, v := range vals {
		if err := writeFile(dir, v[0], v[1]); err != nil {
			removeWithin(dir, 0)
			return err
		}
	}
	return nil
}

// killRemoveV2 writes cgroup.kill (Linux 5.14: the kernel kills the group's processes,
// forks racing it included; where it cannot be written, killListed SIGKILLs each
// process cgroup.procs lists, by pidfd), waits at most d until the group is empty, and
// removes it.
func killRemoveV2(dir string, d time.Duration) error {
	deadline := time.Now().Add(d)
	killed := writeFile(dir, "cgroup.kill", "1") == nil
	for len(procs(dir)) > 0 {
		if !killed {
			killListed(dir) // again each round: a fork that raced the last read
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: processes are left after SIGKILL", dir)
		}
		time.Sleep(time.Millisecond)
	}
	return removeWithin(dir, time.Until(deadline))
}

// gcV2 removes groups in parent whose owner is gone (owner.go), then their lock
// files. No lock is waited for (wait is not used: a sweep no longer locks the parent).
func gcV2(parent string, wait time.Duration) {
	dir := filepath.Join(v2Mount, parent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "gosbx-") || ownerAlive(dir, e.Name()) {
			continue
		}
		killRemoveV2(filepath.Join(dir, e.Name()), 300*time.Millisecond)
	}
	sweepOwnerLocks([]string{dir}, V2)
	if parent == DefaultParent { // the parent CollectStale sweeps
		markSwept([]string{dir})
	}
}
