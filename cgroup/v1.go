package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// v1Subsystems are the hierarchies a sandbox's group is made in.
var v1Subsystems = map[cgroup1.Name]bool{cgroup1.Memory: true, cgroup1.Pids: true, cgroup1.Cpu: true, cgroup1.Cpuacct: true}

func v1Hierarchy() ([]cgroup1.Subsystem, error) {
	all, err := cgroup1.Default()
	if err != nil {
		return nil, err
	}
	var out []cgroup1.Subsystem
	for _, s := range all {
		if v1Subsystems[s.Name()] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("none of the memory, pids, cpu, cpuacct hierarchies is mounted")
	}
	return out, nil
}

type v1Group struct {
	name  string
	cg    cgroup1.Cgroup
	locks []*os.File // the owner's flock on the group's directory in each hierarchy (owner.go)
	gone  bool
}

// v1Parents are the caller's own group in each hierarchy gosbx uses: where its groups
// are made, and what a creator and a sweep lock (owner.go). Hierarchies mounted
// together (one directory) count once.
func v1Parents(paths map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, sub := range []cgroup1.Name{cgroup1.Memory, cgroup1.Pids, cgroup1.Cpu, cgroup1.Cpuacct} {
		p, ok := paths[string(sub)]
		if !ok {
			continue
		}
		d := filepath.Join("/sys/fs/cgroup", string(sub), p)
		if r, err := filepath.EvalSymlinks(d); err == nil && !seen[r] {
			seen[r] = true
			out = append(out, d)
		}
	}
	return out
}

// newV1 makes the group gosbx-<o.ID> in each v1 hierarchy, nested under the caller's
// own group, and takes its owner's lock on each of its directories. The caller's own
// group differs between hierarchies, and between callers in one hierarchy (another
// caller's groups may sit beside its own in one and elsewhere in another): so each
// directory carries its own lock, and a sweep judges each directory by that.
func newV1(r *specs.LinuxResources, o Options) (Group, error) {
	gcV1()
	r = withoutUnaccountedSwap(r)
	id := o.ID
	if id == "" {
		id = NewID()
	}
	n := groupName(id)
	var parents []string
	if paths, err := cgroup1.ParseCgroupFile("/proc/self/cgroup"); err == nil {
		parents = v1Parents(paths)
	}
	for _, p := range parents {
		creating := lockDir(p, unix.LOCK_SH) // no sweep there until this group is locked
		defer creating.Close()
	}
	cg, err := cgroup1.New(cgroup1.NestedPath(n), r, cgroup1.WithHierarchy(v1Hierarchy))
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("%w: create cgroup v1 group %s: %v (unprivileged callers cannot create v1 groups)", ErrUnavailable, n, err)
		}
		return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
	}
	// containerd skips hierarchies that are not mounted (cgroup_disable=memory, a kernel
	// without the controller): a limit asked for must have its controller, or nothing
	// would enforce it.
	have := map[cgroup1.Name]bool{}
	for _, s := range cg.Subsystems() {
		have[s.Name()] = true
	}
	for _, need := range neededV1(r) {
		if !have[need] {
			cg.Delete()
			return nil, fmt.Errorf("%w: the cgroup v1 %s controller is not mounted, so its limit cannot be applied", ErrUnavailable, need)
		}
	}
	g := &v1Group{name: n, cg: cg}
	for _, p := range parents {
		d := filepath.Join(p, n)
		if _, err := os.Stat(d); err != nil {
			continue // a hierarchy containerd skipped
		}
		lock := lockDir(d, unix.LOCK_EX|unix.LOCK_NB)
		if lock == nil {
			g.Destroy()
			return nil, fmt.Errorf("lock cgroup %s: cannot open it, or taken by another process", d)
		}
		g.locks = append(g.locks, lock)
	}
	return g, nil
}

func (g *v1Group) Kind() Kind   { return V1 }
func (g *v1Group) CloneFd() int { return -1 }

func (g *v1Group) Add(pid int) error {
	if err := g.cg.Add(cgroup1.Process{Pid: pid}); err != nil {
		return fmt.Errorf("place pid %d in cgroup %s: %w", pid, g.name, err)
	}
	return nil
}

func (g *v1Group) Stats() Stats {
	var s Stats
	m, err := g.cg.Stat(cgroup1.IgnoreNotExist)
	if err != nil || m == nil {
		return s
	}
	if m.Memory != nil && m.Memory.Usage != nil {
		s.MemoryPeak = int64(m.Memory.Usage.Max)
	}
	if m.MemoryOomControl != nil {
		s.OOMKilled = m.MemoryOomControl.OomKill > 0
	}
	if m.CPU != nil && m.CPU.Usage != nil {
		s.CPUUser = int64(m.CPU.Usage.User / 1000)
		s.CPUSystem = int64(m.CPU.Usage.Kernel / 1000)
	}
	s.PidsMaxHit = eventCount(g.path(cgroup1.Pids, "pids.events"), "max") > 0
	if b, err := os.ReadFile(g.path(cgroup1.Pids, "pids.peak")); err == nil {
		s.PidsPeak, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	return s
}

// path is a file of the group in one hierarchy.
func (g *v1Group) path(sub cgroup1.Name, file string) string {
	paths, err := cgroup1.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	return filepath.Join("/sys/fs/cgroup", string(sub), paths[string(sub)], g.name, file)
}

// Destroy kills what is left (v1 has no cgroup.kill: freeze, kill, thaw) and removes
// the group from every hierarchy.
func (g *v1Group) Destroy() error {
	if g.gone {
		return nil
	}
	g.gone = true
	defer func() { // held until the group is gone: no sweep races the removal
		for _, l := range g.locks {
			l.Close()
		}
	}()
	dirs := g.dirs()
	if dirs == nil {
		// the paths are unknown: containerd's walk and removal
		killAll(g.cg)
		if err := g.cg.Delete(); err != nil {
			return fmt.Errorf("remove cgroup %s: %w", g.name, err)
		}
		return nil
	}
	if !emptyV1(dirs) {
		killAll(g.cg)
	}
	var errs []error
	for _, d := range dirs {
		errs = append(errs, rmdirRetry(d))
	}
	return errors.Join(errs...)
}

// dirs are the group's directories, one per hierarchy it was made in; nil when one
// cannot be known.
func (g *v1Group) dirs() []string {
	var out []string
	for _, s := range g.cg.Subsystems() {
		p, ok := s.(interface{ Path(string) string })
		if !ok {
			return nil
		}
		rel, err := cgroup1.NestedPath(g.name)(s.Name())
		if err != nil {
			return nil
		}
		out = append(out, p.Path(rel))
	}
	return out
}

// emptyV1 reports whether no process is left in any of dirs (a sandbox's group has no
// children: nothing inside can write a cgroup filesystem).
func emptyV1(dirs []string) bool {
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			return false
		}
	}
	return true
}

// rmdirRetry removes a group's directory. Right after its last process has been reaped
// a v1 group can still be busy for a moment: EBUSY is retried from 100 µs, doubling up
// to 10 ms, for 5 s. (containerd's Delete first waits 10 ms, longer than a whole launch.)
func rmdirRetry(dir string) error {
	delay := 100 * time.Microsecond
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(delay)
		if delay < 10*time.Millisecond {
			delay *= 2
		}
	}
}

// killAll kills every process of the group (v1 has no cgroup.kill: freeze, SIGKILL,
// thaw) and waits, at most 5 s, until no hierarchy lists one: v1 refuses to remove a
// group that still has processes, and SIGKILL takes effect asynchronously.
func killAll(cg cgroup1.Cgroup) {
	deadline := time.Now().Add(5 * time.Second)
	for first := true; ; first = false {
		var procs []cgroup1.Process
		for _, sub := range cg.Subsystems() {
			if p, err := cg.Processes(sub.Name(), true); err == nil {
				procs = append(procs, p...)
			}
		}
		if len(procs) == 0 || time.Now().After(deadline) {
			return
		}
		if first {
			cg.Freeze()
			for _, p := range procs {
				syscall.Kill(p.Pid, syscall.SIGKILL)
			}
			cg.Thaw()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gcV1 removes groups whose owner is gone (a SIGKILLed gosbx exec: owner.go) from
// the caller's own group in each hierarchy, one directory at a time: a directory
// whose owner's lock can be taken, in a hierarchy where no launch is making a group
// now. Groups named by an older gosbx go by their launcher's pid, in every hierarchy
// at once (one may be gone already from a partial removal).
func gcV1() {
	paths, err := cgroup1.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return
	}
	legacy := map[string]bool{}
	for _, parent := range v1Parents(paths) {
		sweeping := lockDir(parent, unix.LOCK_EX|unix.LOCK_NB)
		if sweeping == nil {
			continue
		}
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			n := e.Name()
			switch {
			case !e.IsDir() || !strings.HasPrefix(n, "gosbx-"):
			case legacyName(n):
				legacy[n] = true
			case !ownerAlive(parent, n):
				removeDirV1(filepath.Join(parent, n))
			}
		}
		sweeping.Close()
	}
	for n := range legacy {
		if launcherAlive(n) {
			continue
		}
		if cg, err := cgroup1.Load(cgroup1.NestedPath(n), cgroup1.WithHierarchy(v1Hierarchy)); err == nil {
			killAll(cg)
			cg.Delete()
		}
	}
}

// removeDirV1 removes one hierarchy's directory of a group whose owner is gone: every
// process still listed is killed (the sandbox dies with its owner already: its init
// sees the life pipe close), then the directory is removed once empty, trying for 5 s.
func removeDirV1(dir string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		pids := strings.Fields(string(b))
		if len(pids) == 0 {
			rmdirRetry(dir)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
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
func neededV1(r *specs.LinuxResources) []cgroup1.Name {
	var out []cgroup1.Name
	if r == nil {
		return out
	}
	if r.Memory != nil && r.Memory.Limit != nil {
		out = append(out, cgroup1.Memory)
	}
	if r.Pids != nil {
		out = append(out, cgroup1.Pids)
	}
	if r.CPU != nil && r.CPU.Quota != nil {
		out = append(out, cgroup1.Cpu)
	}
	return out
}
