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

	"github.com/containerd/cgroups/v3"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// v1Root is where the v1 hierarchies are mounted, one directory per controller.
const v1Root = "/sys/fs/cgroup"

// v1Subsystems are the hierarchies a sandbox's group is made in, in this order.
var v1Subsystems = [...]string{"memory", "pids", "cpu", "cpuacct"}

// v1Dir is the group's directory in one hierarchy.
type v1Dir struct {
	sub string // the controller: memory, pids, cpu, cpuacct
	dir string
}

// v1Parents are this process's own groups in each hierarchy of v1Subsystems that is
// mounted and lists it in /proc/self/cgroup (a sandbox's group is nested in them).
func v1Parents() ([]v1Dir, error) {
	own, _, err := cgroups.ParseCgroupFileUnified("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	var out []v1Dir
	for _, sub := range v1Subsystems {
		p, ok := own[sub]
		if !ok {
			continue
		}
		if fi, err := os.Stat(filepath.Join(v1Root, sub)); err != nil || !fi.IsDir() {
			continue
		}
		out = append(out, v1Dir{sub, filepath.Join(v1Root, sub, p)})
	}
	if len(out) == 0 {
		return nil, errors.New("none of the memory, pids, cpu, cpuacct hierarchies is mounted")
	}
	return out, nil
}

type v1Group struct {
	name string
	dirs []v1Dir
	gone bool
}

// newV1 makes the group in each v1 hierarchy, nested under the caller's own group, and
// writes the limits: memory.limit_in_bytes then memory.memsw.limit_in_bytes (memory+swap
// may not be below the memory limit), pids.max, cpu.cfs_period_us then cpu.cfs_quota_us
// (Documentation/admin-guide/cgroup-v1/memory.rst, pids.rst; scheduler/sched-bwc.rst).
func newV1(r *specs.LinuxResources) (Group, error) {
	gcV1()
	r = withoutUnaccountedSwap(r)
	n := name()
	parents, err := v1Parents()
	if err != nil {
		return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
	}
	// A hierarchy that is not mounted (cgroup_disable=memory, a kernel without the
	// controller) is skipped: a limit asked for must have its controller, or nothing
	// would enforce it.
	have := map[string]bool{}
	for _, p := range parents {
		have[p.sub] = true
	}
	for _, need := range neededV1(r) {
		if !have[need] {
			return nil, fmt.Errorf("%w: the cgroup v1 %s controller is not mounted, so its limit cannot be applied", ErrUnavailable, need)
		}
	}
	g := &v1Group{name: n}
	for _, p := range parents {
		d := v1Dir{p.sub, filepath.Join(p.dir, n)}
		err := os.Mkdir(d.dir, 0o755)
		if errors.Is(err, os.ErrExist) && g.has(d.dir) {
			g.dirs = append(g.dirs, d) // co-mounted controllers (cpu,cpuacct) share a directory
			continue
		}
		if err == nil {
			g.dirs = append(g.dirs, d)
			err = writeV1Limits(d, r)
		}
		if err != nil {
			g.removeDirs()
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, fmt.Errorf("%w: create cgroup v1 group %s: %v (unprivileged callers cannot create v1 groups)", ErrUnavailable, n, err)
			}
			return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
		}
	}
	return g, nil
}

// has reports whether dir is already one of the group's directories (by inode: the
// co-mounted hierarchies' paths differ).
func (g *v1Group) has(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return false
	}
	for _, d := range g.dirs {
		if o, err := os.Stat(d.dir); err == nil && os.SameFile(fi, o) {
			return true
		}
	}
	return false
}

// writeV1Limits writes the limits of r that belong to d's controller.
func writeV1Limits(d v1Dir, r *specs.LinuxResources) error {
	if r == nil {
		return nil
	}
	var vals [][2]string
	switch d.sub {
	case "memory":
		if m := r.Memory; m != nil {
			if m.Limit != nil {
				vals = append(vals, [2]string{"memory.limit_in_bytes", strconv.FormatInt(*m.Limit, 10)})
			}
			if m.Swap != nil {
				vals = append(vals, [2]string{"memory.memsw.limit_in_bytes", strconv.FormatInt(*m.Swap, 10)})
			}
		}
	case "pids":
		if r.Pids != nil && r.Pids.Limit != nil && *r.Pids.Limit > 0 {
			vals = append(vals, [2]string{"pids.max", strconv.FormatInt(*r.Pids.Limit, 10)})
		}
	case "cpu":
		if c := r.CPU; c != nil {
			if c.Period != nil {
				vals = append(vals, [2]string{"cpu.cfs_period_us", strconv.FormatUint(*c.Period, 10)})
			}
			if c.Quota != nil {
				vals = append(vals, [2]string{"cpu.cfs_quota_us", strconv.FormatInt(*c.Quota, 10)})
			}
		}
	}
	for _, v := range vals {
		if err := writeFile(d.dir, v[0], v[1]); err != nil {
			return err
		}
	}
	return nil
}

func (g *v1Group) Kind() Kind   { return V1 }
func (g *v1Group) CloneFd() int { return -1 }

// Add writes pid to the group's cgroup.procs in every hierarchy.
func (g *v1Group) Add(pid int) error {
	for _, d := range g.dirs {
		if err := writeFile(d.dir, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("place pid %d in cgroup %s: %w", pid, g.name, err)
		}
	}
	return nil
}

// Stats reads memory.max_usage_in_bytes, memory.oom_control's oom_kill, cpuacct.stat
// (USER_HZ ticks, 100 a second on Linux), pids.events and pids.peak.
func (g *v1Group) Stats() Stats {
	var s Stats
	mem, cpuacct, pids := g.dir("memory"), g.dir("cpuacct"), g.dir("pids")
	if mem != "" {
		s.MemoryPeak = readInt(filepath.Join(mem, "memory.max_usage_in_bytes"))
		s.OOMKilled = eventCount(filepath.Join(mem, "memory.oom_control"), "oom_kill") > 0
	}
	if cpuacct != "" {
		const usecPerTick = 1e6 / 100
		s.CPUUser = eventCount(filepath.Join(cpuacct, "cpuacct.stat"), "user") * usecPerTick
		s.CPUSystem = eventCount(filepath.Join(cpuacct, "cpuacct.stat"), "system") * usecPerTick
	}
	if pids != "" {
		s.PidsMaxHit = eventCount(filepath.Join(pids, "pids.events"), "max") > 0
		s.PidsPeak = readInt(filepath.Join(pids, "pids.peak"))
	}
	return s
}

// dir is the group's directory in the hierarchy sub, "" when it has none.
func (g *v1Group) dir(sub string) string {
	for _, d := range g.dirs {
		if d.sub == sub {
			return d.dir
		}
	}
	return ""
}

// Destroy kills what is left (v1 has no cgroup.kill) and removes the group from every
// hierarchy.
func (g *v1Group) Destroy() error {
	if g.gone {
		return nil
	}
	g.gone = true
	if !emptyV1(g.dirs) {
		killAll(g.dirs)
	}
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, rmdirRetry(d.dir))
	}
	return errors.Join(errs...)
}

// removeDirs removes the directories made so far (a failed New).
func (g *v1Group) removeDirs() {
	for _, d := range g.dirs {
		syscall.Rmdir(d.dir)
	}
}

// emptyV1 reports whether no process is left in any of dirs (a sandbox's group has no
// children: nothing inside can write a cgroup filesystem).
func emptyV1(dirs []v1Dir) bool {
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d.dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(b))) > 0 {
			return false
		}
	}
	return true
}

// rmdirRetry removes a group's directory, retrying EBUSY for 5 s (removeWithin).
// (containerd's Delete first waits 10 ms, longer than a whole launch.)
func rmdirRetry(dir string) error { return removeWithin(dir, 5*time.Second) }

// killAll kills every process of the group with SIGKILL and waits, at most 5 s, until
// no hierarchy lists one: v1 refuses to remove a group that still has processes, and
// SIGKILL takes effect asynchronously. (The group is not in the freezer hierarchy, so
// there is no freeze first: containerd's Freeze was a no-op here too.)
func killAll(dirs []v1Dir) {
	deadline := time.Now().Add(5 * time.Second)
	for first := true; ; first = false {
		var all []int
		for _, d := range dirs {
			all = append(all, procs(d.dir)...)
		}
		if len(all) == 0 || time.Now().After(deadline) {
			return
		}
		if first {
			for _, pid := range all {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gcV1 removes groups left by launchers that are gone (a SIGKILLed gosbx exec), in
// every hierarchy (one may be gone already from a partial removal).
func gcV1() {
	parents, err := v1Parents()
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, p := range parents {
		ents, err := os.ReadDir(p.dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if !e.IsDir() || !strings.HasPrefix(n, "gosbx-") || seen[n] || launcherAlive(n) {
				continue
			}
			seen[n] = true
			var dirs []v1Dir
			for _, q := range parents {
				if d := filepath.Join(q.dir, n); isDir(d) {
					dirs = append(dirs, v1Dir{q.sub, d})
				}
			}
			killAll(dirs)
			for _, d := range dirs {
				removeWithin(d.dir, 300*time.Millisecond)
			}
		}
	}
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// eventCount reads the count of key in a cgroup events file ("max 3").
func eventCount(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// withoutUnaccountedSwap drops the memory+swap limit when the kernel does not account
// swap (no memory.memsw.* files, swapaccount=0) and the limit only says "no swap beyond
// memory", the default: the memory limit still holds. A swap limit asked for stays, and
// fails as it should.
func withoutUnaccountedSwap(r *specs.LinuxResources) *specs.LinuxResources {
	if r == nil || r.Memory == nil || r.Memory.Swap == nil || r.Memory.Limit == nil || *r.Memory.Swap != *r.Memory.Limit {
		return r
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"); err == nil {
		return r
	}
	c := *r
	m := *r.Memory
	m.Swap = nil
	c.Memory = &m
	return &c
}

// neededV1 lists the hierarchies the resources need.
func neededV1(r *specs.LinuxResources) []string {
	var out []string
	if r == nil {
		return out
	}
	if r.Memory != nil && r.Memory.Limit != nil {
		out = append(out, "memory")
	}
	if r.Pids != nil {
		out = append(out, "pids")
	}
	if r.CPU != nil && r.CPU.Quota != nil {
		out = append(out, "cpu")
	}
	return out
}
