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

// v1Root is where the v1 hierarchies are mounted, one directory per controller (a
// variable so that tests can point it at a directory of their own).
var v1Root = "/sys/fs/cgroup"

// v1Subsystems are the hierarchies a sandbox's group is made in, in this order.
var v1Subsystems = [...]string{"memory", "pids", "cpu", "cpuacct"}

// v1Dir is a directory in one hierarchy: the caller's own group, or a sandbox's.
type v1Dir struct {
	sub string // the controller: memory, pids, cpu, cpuacct
	dir string
}

// v1Hierarchies is the caller's own group in each hierarchy of v1Subsystems that is mounted
// and listed in /proc/self/cgroup (co-mounted hierarchies each appear). Every launch
// asks (CollectStale): one read(2) of the file and a stat(2) per listed hierarchy.
func v1Hierarchies() ([]v1Dir, error) {
	b, err := readSelfCgroup()
	if err != nil {
		return nil, err
	}
	paths, found, err := v1Paths(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", selfCgroupFile, err)
	}
	out := make([]v1Dir, 0, len(v1Subsystems))
	for i, sub := range v1Subsystems {
		root := v1Root + "/" + sub
		if !found[i] || !isDir(root) {
			continue
		}
		out = append(out, v1Dir{sub, filepath.Join(root, paths[i])})
	}
	if len(out) == 0 {
		return nil, errors.New("none of the memory, pids, cpu, cpuacct hierarchies is mounted")
	}
	return out, nil
}

// FixContainerCgroup is what a container's caller does when it cannot make cgroups:
// Podman on a cgroup v1 host mounts the container's own group read-only, with or without
// its own cgroup namespace (--cgroupns=private: measured, "read-only file system"). No
// runtime option gives a container a writable cgroup mount of its own safely, so none
// is suggested (trial 2026-12-02, T15: the fix named no flag; doctor's row and its
// "How to fix" line then said two things).
const FixContainerCgroup = "run without limits (--limits best-effort, and limit the container itself: podman/docker run " +
	"--memory, --pids-limit, --cpus), or run gosbx outside the container (as root on a cgroup v1 host, or as any user in a " +
	"delegated cgroup v2 group); a cgroup namespace of the container's own (--cgroupns=private) does not help: its cgroup " +
	"mount stays read-only"

// ownGroupsMounted says why the caller's own group in a hierarchy, the path
// /proc/self/cgroup names under its mount, is not a directory in this mount namespace:
// a container that shares the host's cgroup namespace (Podman and Docker on a cgroup v1
// host) gets paths relative to the host's root, with only its own group mounted at
// /sys/fs/cgroup/<controller> (cgroup_namespaces(7)). The mkdir below it would fail
// with a bare ENOENT.
func ownGroupsMounted(own []v1Dir) error {
	for _, p := range own {
		if _, err := os.Stat(p.dir); err != nil {
			return fmt.Errorf("this process's %s group is not in this mount namespace: %w (the path /proc/self/cgroup names, "+
				"under the %s hierarchy's mount; a container sharing the host's cgroup namespace sees the host's path with only its "+
				"own group mounted): %s", p.sub, err, p.sub, FixContainerCgroup)
		}
	}
	return nil
}

type v1Group struct {
	name  string
	dirs  []v1Dir    // in each hierarchy; co-mounted ones share a directory
	owner *os.File   // the owner's lock (owner.go)
	locks []*os.File // the flock on the group's directory an older gosbx's sweep reads (holdDir)
	gone  bool
	// events are LimitEvents' files, kept open (events.go)
	events *eventFiles
}

// v1Parents are the caller's own group in each hierarchy gosbx uses: where its groups
// are made and swept. Hierarchies mounted together (one directory) count once.
func v1Parents(own []v1Dir) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range own {
		if r, err := filepath.EvalSymlinks(o.dir); err == nil && !seen[r] {
			seen[r] = true
			out = append(out, o.dir)
		}
	}
	return out
}

// newV1 makes the group gosbx-<o.ID> in each v1 hierarchy, nested under the caller's
// own group, takes its owner's lock on each of its directories, and writes the limits:
// memory.limit_in_bytes then memory.memsw.limit_in_bytes (memory+swap may not be below
// the memory limit), pids.max, cpu.cfs_period_us then cpu.cfs_quota_us
// (Documentation/admin-guide/cgroup-v1/memory.rst, pids.rst; scheduler/sched-bwc.rst).
// The caller's own group differs between hierarchies, and between callers in one
// hierarchy (another caller's groups may sit beside its own in one and elsewhere in
// another): so each directory carries its own lock, and a sweep judges each directory
// by that.
func newV1(r *specs.LinuxResources, o Options) (Group, error) {
	r = withoutUnaccountedSwap(r)
	id := o.ID
	if id == "" {
		id = NewID()
	}
	n := groupName(id)
	own, err := v1Hierarchies()
	if err != nil {
		return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
	}
	collectV1(own) // as CollectStale: only when a sweep could find a group
	// A hierarchy that is not mounted (cgroup_disable=memory, a kernel without the
	// controller) is skipped: a limit asked for must have its controller, or nothing
	// would enforce it.
	have := map[string]bool{}
	for _, p := range own {
		have[p.sub] = true
	}
	for _, need := range neededV1(r) {
		if !have[need] {
			return nil, fmt.Errorf("%w: the cgroup v1 %s controller is not mounted, so its limit cannot be applied", ErrUnavailable, need)
		}
	}
	if err := ownGroupsMounted(own); err != nil {
		return nil, fmt.Errorf("%w: create cgroup v1 group %s: %w", ErrUnavailable, n, err)
	}
	if os.Geteuid() != 0 {
		// said before the owner's lock, whose directory (/tmp/gosbx-<uid> made by
		// another user) may be refused: that error would hide this one (faccessat(2),
		// AT_EACCESS)
		for _, p := range own {
			if err := unix.Faccessat(unix.AT_FDCWD, p.dir, unix.W_OK, unix.AT_EACCESS); err != nil {
				return nil, fmt.Errorf("%w: create cgroup v1 group %s: %s: %v (unprivileged callers cannot create v1 groups)", ErrUnavailable, n, p.dir, err)
			}
		}
	}
	var dirs []string
	for _, p := range own {
		dirs = append(dirs, filepath.Join(p.dir, n))
	}
	lock, err := ownerLock(n, dirs...) // before the mkdir: a sweep never finds the group unowned
	if err != nil {
		if os.Geteuid() != 0 {
			return nil, fmt.Errorf("%w: create cgroup v1 group %s: %v (unprivileged callers cannot create v1 groups)", ErrUnavailable, n, err)
		}
		return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
	}
	g := &v1Group{name: n, owner: lock}
	for _, p := range own {
		d := v1Dir{p.sub, filepath.Join(p.dir, n)}
		err := os.Mkdir(d.dir, 0o755)
		if errors.Is(err, os.ErrExist) && g.has(d.dir) {
			g.dirs = append(g.dirs, d) // co-mounted controllers (cpu,cpuacct) share a directory
			continue
		}
		if err == nil {
			g.dirs = append(g.dirs, d)
			if held := holdDir(d.dir); held != nil {
				g.locks = append(g.locks, held)
			}
			err = writeV1Limits(d, r)
		}
		if err != nil {
			g.abandon()
			if errors.Is(err, syscall.EROFS) && os.Geteuid() == 0 {
				// not the caller's privilege: the mount (a container's, mounted read-only)
				return nil, fmt.Errorf("%w: create cgroup v1 group %s: %v (the cgroup file system is mounted read-only here, as a container runtime mounts it: %s)",
					ErrUnavailable, n, err, FixContainerCgroup)
			}
			if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
				return nil, fmt.Errorf("%w: create cgroup v1 group %s: %v (unprivileged callers cannot create v1 groups)", ErrUnavailable, n, err)
			}
			return nil, fmt.Errorf("create cgroup v1 group %s: %w", n, err)
		}
	}
	g.events = newEventFiles(g.file("memory", "memory.oom_control"), "oom_kill", g.file("pids", "pids.events"), "max")
	return g, nil
}

// file is file in the group's directory of the hierarchy sub, "" when it has none.
func (g *v1Group) file(sub, file string) string {
	if d := g.dir(sub); d != "" {
		return filepath.Join(d, file)
	}
	return ""
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

// abandon removes the directories made so far (a failed New), then drops their locks.
func (g *v1Group) abandon() {
	for _, d := range g.dirs {
		syscall.Rmdir(d.dir)
	}
	for _, l := range g.locks {
		l.Close()
	}
	releaseOwnerIfGone(g.owner, g.paths()...)
}

// paths lists the group's directories.
func (g *v1Group) paths() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, d.dir)
	}
	return out
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
			if m.Limit != nil && *m.Limit > 0 {
				if err := writeTCPLimit(d.dir, *m.Limit); err != nil {
					return err
				}
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

// tcpLimitFile is the v1 memory controller's limit on its TCP socket buffers
// (Documentation/admin-guide/cgroup-v1/memory.rst, "Kernel Memory Extension", tcp).
const tcpLimitFile = "memory.kmem.tcp.limit_in_bytes"

// writeTCPLimit bounds the TCP socket buffers of the v1 memory group dir by limit
// bytes. v1 charges a group's socket buffers only once this file was written
// (memcg->tcpmem_active, for sockets made after it: the command starts later), and to a
// counter of their own, not memory.usage_in_bytes: without it a sandbox's TCP queues
// are bounded only by the host-wide net.ipv4.tcp_mem (attack review 17: 398 MB queued
// in a 64M sandbox). With it a group holds up to 2x limit (two counters). A kernel
// without the file (v1's kmem files may be dropped) is not an error: the memory limit
// itself holds, TCP buffers are then bounded by tcp_mem only (README, Known limits;
// gosbx doctor says which). Errors are writeFile's.
func writeTCPLimit(dir string, limit int64) error {
	err := writeFile(dir, tcpLimitFile, strconv.FormatInt(limit, 10))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// V1TCPAccounted reports whether the host's v1 memory controller can bound a group's
// TCP socket buffers (it has memory.kmem.tcp.limit_in_bytes at its root); false also
// when the memory hierarchy is not mounted.
func V1TCPAccounted() bool {
	_, err := os.Stat(filepath.Join(v1Root, "memory", tcpLimitFile))
	return err == nil
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

// Stats reads memory.max_usage_in_bytes, memory.oom_control's oom_kill, the CPU time
// (cpuacctUsage), pids.events and pids.peak.
func (g *v1Group) Stats() Stats {
	var s Stats
	mem, cpuacct, pids := g.dir("memory"), g.dir("cpuacct"), g.dir("pids")
	if mem != "" {
		s.MemoryPeak = readInt(filepath.Join(mem, "memory.max_usage_in_bytes"))
		s.OOMKilled = eventCount(filepath.Join(mem, "memory.oom_control"), "oom_kill") > 0
	}
	if cpuacct != "" {
		s.CPUUser, s.CPUSystem = cpuacctUsage(cpuacct)
	}
	if pids != "" {
		s.PidsMaxHit = eventCount(filepath.Join(pids, "pids.events"), "max") > 0
		s.PidsPeak = readInt(filepath.Join(pids, "pids.peak"))
	}
	return s
}

// LimitEvents reads memory.oom_control's oom_kill and pids.events' max, through
// descriptors kept open until Destroy (events.go).
func (g *v1Group) LimitEvents() (oomKills, pidsMaxHits int64) { return g.events.counts() }

// Dirs lists the group's directory in each hierarchy it was made in, each path
// without symlinks (hosts that co-mount cpu and cpuacct link /sys/fs/cgroup/cpu to
// cpu,cpuacct; a bind source is opened without following one).
func (g *v1Group) Dirs() []Dir {
	out := make([]Dir, len(g.dirs))
	for i, d := range g.dirs {
		out[i] = Dir{Controller: d.sub, Path: canonical(d.dir)}
	}
	return out
}

// canonical is p with its symlinks resolved, or p when it cannot be.
func canonical(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
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
	g.events.close()
	defer func() { // held until the group is gone: no sweep races the removal
		for _, l := range g.locks {
			l.Close()
		}
		releaseOwnerIfGone(g.owner, g.paths()...)
	}()
	if !emptyV1(g.dirs) {
		killAll(g.dirs)
	}
	var errs []error
	for _, d := range g.dirs {
		errs = append(errs, rmdirRetry(d.dir))
	}
	return errors.Join(errs...)
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

// killAll kills every process of the group with SIGKILL (killListed: by pidfd, only
// processes still in the group) and waits, at most 5 s, until no hierarchy lists one:
// v1 refuses to remove a group that still has processes, and SIGKILL takes effect
// asynchronously. Each round kills what is listed again, so a child forked as the
// first round read the list goes too. (The group is not in the freezer hierarchy, so
// there is no freeze first: containerd's Freeze was a no-op here too.)
func killAll(dirs []v1Dir) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := 0
		for _, d := range dirs {
			n += killListed(d.dir)
		}
		if n == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gcV1 removes groups whose owner is gone (a SIGKILLed gosbx exec: owner.go) from
// the caller's own group in each hierarchy, one directory at a time: a directory
// whose owner's lock can be taken; then the lock files of the groups removed. Groups
// named by an older gosbx go by their launcher's pid, in every hierarchy at once (one
// may be gone already from a partial removal). No lock is waited for (wait is not
// used: a sweep no longer locks the parents, owner.go); it reports whether the
// hierarchies could be listed.
func gcV1(wait time.Duration) (all bool) {
	own, err := v1Hierarchies()
	if err != nil {
		return false
	}
	sweepV1(own)
	return true
}

// collectV1 is sweepV1 of own when sweepNeeded for own's directories (the key of its
// sweptMarker: the caller's own groups as /proc/self/cgroup names them, without the
// symbolic-link walk of v1Parents).
func collectV1(own []v1Dir) {
	if sweepNeeded(ownDirs(own)) {
		sweepV1(own)
	}
}

// ownDirs are the directories of own.
func ownDirs(own []v1Dir) []string {
	out := make([]string, len(own))
	for i, o := range own {
		out[i] = o.dir
	}
	return out
}

// sweepV1 is gcV1's sweep of the caller's own groups own.
func sweepV1(own []v1Dir) {
	parents := v1Parents(own)
	legacy := map[string]bool{}
	for _, parent := range parents {
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
	}
	sweepOwnerLocks(parents, V1)
	for n := range legacy {
		if launcherAlive(n) {
			continue
		}
		var dirs []v1Dir
		for _, p := range own {
			if d := filepath.Join(p.dir, n); isDir(d) {
				dirs = append(dirs, v1Dir{p.sub, d})
			}
		}
		killAll(dirs)
		for _, d := range dirs {
			removeWithin(d.dir, 300*time.Millisecond)
		}
	}
	markSwept(ownDirs(own))
}

func isDir(p string) bool {
	var st unix.Stat_t
	return unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// removeDirV1 removes one hierarchy's directory of a group whose owner is gone: every
// process still listed is killed (killListed; the sandbox dies with its owner already:
// its init sees the life pipe close), then the directory is removed once empty, trying
// for 5 s.
func removeDirV1(dir string) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			return
		}
		if killListed(dir) == 0 {
			rmdirRetry(dir)
			return
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// eventCount reads the count of key in a cgroup events file ("max 3"). Read into a
// buffer on the stack: a session's supervisor reads three or four of these files after
// every command, and os.ReadFile's file, stat and buffer were ~6 KiB of garbage a
// command that it keeps (no collection below a 4 MiB heap; docs/decisions.md, "Memory:
// idle sessions"). A file larger than the buffer is read with os.ReadFile.
func eventCount(file, key string) int64 {
	var buf [1024]byte
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	unix.Close(fd)
	b := buf[:n]
	if n == len(buf) {
		if b, err = os.ReadFile(file); err != nil {
			return 0
		}
	}
	return countIn(b, key)
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

// cpuacctUsage is the CPU time, user and system, in microseconds, of the cpuacct group
// at dir. The total is cpuacct.usage (nanoseconds, the scheduler's own sum of each run:
// Documentation/admin-guide/cgroup-v1/cpuacct.rst), not cpuacct.stat, whose USER_HZ
// ticks (10 ms) gave 0 for a short command (trial finding); cpuacct.usage_user and
// usage_sys are the kernel's tick counts in nanoseconds (measured: multiples of 4 ms on
// this HZ=250 kernel), so they only split the total, as cputime_adjust splits cgroup
// v2's usage_usec (kernel/sched/cputime.c): in their ratio, all to user when no system
// tick was counted, all to system when no user tick was. cpuacct.stat alone where the
// kernel has no cpuacct.usage.
func cpuacctUsage(dir string) (user, system int64) {
	total, err := readInt64(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		const usecPerTick = 1e6 / 100
		return eventCount(filepath.Join(dir, "cpuacct.stat"), "user") * usecPerTick,
			eventCount(filepath.Join(dir, "cpuacct.stat"), "system") * usecPerTick
	}
	total /= 1000
	u, errU := readInt64(filepath.Join(dir, "cpuacct.usage_user"))
	k, errK := readInt64(filepath.Join(dir, "cpuacct.usage_sys"))
	switch {
	case errU != nil || errK != nil || k <= 0:
		return total, 0
	case u <= 0:
		return 0, total
	}
	// in float64: total × u in integers could overflow int64 (nanoseconds × microseconds)
	user = int64(float64(total) * (float64(u) / float64(u+k)))
	return user, total - user
}

// readInt64 reads a file holding one decimal number.
func readInt64(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
