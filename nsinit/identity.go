package nsinit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/internal/dirent"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// hostIDDir holds one lock file per host id in use; a launcher holds an exclusive
// flock(2) on its id's file for the sandbox's life (the kernel drops it when the
// launcher dies, and the sandbox dies with the launcher).
var hostIDDir = "/run/gosbx/ids"

// idRange is a root caller's range of host ids (config.RootID): a launcher that is
// root takes one host id of [Base, Base+Count) for the sandbox, held by no other
// sandbox while it runs, and maps the config's single uid and gid mapping to it.
type idRange = config.IDRange

// hostID is a host id taken for one sandbox.
type hostID struct {
	id   uint32
	lock *os.File
}

// release frees the id: its lock file is removed, then unlocked. A launcher that
// opened the file before the removal finds, once it has the lock, that the path no
// longer leads to it, and tries again (takeHostID).
func (h *hostID) release() {
	if h != nil && h.lock != nil {
		os.Remove(filepath.Join(hostIDDir, h.lock.Name()))
		h.lock.Close()
		h.lock = nil
	}
}

// rootMapping reports whether this launch maps a root caller's command to a host id of
// a range: the launcher is a root caller (caps.CurrentCaller) and the config has an id
// range.
func rootMapping(spec *config.Config) (idRange, bool) {
	if !caps.CurrentCaller().Root {
		return idRange{}, false
	}
	return specRange(spec)
}

// ownerRange reports whether the user namespace of a launch that keeps the config's own
// mapping (a uid 0 that is not a root caller, or a root caller's uid 0 fallback) is to
// be owned by a host id of the config's range rather than by root, so that the kernel
// charges the sandbox's per-user counts to that id (usercounts.go): the launcher is
// uid 0 of the initial user namespace able to set ids (caps.Caller.OwnsIDs) and the
// config has an id range.
func ownerRange(spec *config.Config) (idRange, bool) {
	if c := caps.CurrentCaller(); os.Geteuid() != 0 || !c.OwnsIDs {
		return idRange{}, false
	}
	return specRange(spec)
}

// specRange is the config's id range (config.RootID; Validate checked it and the single
// uid and gid mappings it needs): ok=false without one.
func specRange(spec *config.Config) (idRange, bool) {
	if spec.RootID == nil {
		return idRange{}, false
	}
	return spec.RootID.Range, true
}

// takeHostID takes a free id of r for the sandbox sandboxID: its lock file, created if
// needed in hostIDDir (a root-owned directory nobody else may write), locked without
// waiting, holding the sandbox id (which sandbox holds which id; the lock, not the
// file's content, says whether its owner lives). Ids are tried from a random one on,
// so concurrent launchers rarely try the same. A sweep locks the lock files nobody
// holds, for an instant each: so it runs only under an exclusive flock(2) of the
// directory, and takes under a shared one, or a take would find a free id locked (in
// use) or removed under it (with a range of one id: "all 1 host ids in use").
func takeHostID(r idRange, sandboxID string) (*hostID, error) {
	if err := os.MkdirAll(hostIDDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", hostIDDir, err)
	}
	dir, err := unix.Open(hostIDDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", hostIDDir, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstat(dir, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", hostIDDir, err)
	}
	// Root's alone: a directory another user may open, that user may flock(2) too, and
	// stall every take (LOCK_EX) or every sweep (LOCK_SH).
	if st.Uid != 0 || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("%s is not a directory of root's alone (owner %d, mode %#o): make it so with `chown root %s && chmod 0700 %s`",
			hostIDDir, st.Uid, st.Mode&0o7777, hostIDDir, hostIDDir)
	}
	if sweepLockIDs(dir) { // else takes kept it busy: the next launch sweeps
		sweepHostIDs(dir)
	}
	if !lockWithin(dir, unix.LOCK_SH, hostIDLockWait) { // released when dir is closed
		return nil, fmt.Errorf("lock %s: held by another process for %v (a sweep that does not end)", hostIDDir, hostIDLockWait)
	}
	start := rand.Uint32N(r.Count)
	for i, again := uint32(0), 0; i < r.Count; i++ {
		id := r.Base + (start+i)%r.Count
		name := strconv.FormatUint(uint64(id), 10)
		fd, err := unix.Openat(dir, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", filepath.Join(hostIDDir, name), err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(fd)
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			return nil, fmt.Errorf("lock %s: %w", filepath.Join(hostIDDir, name), err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(fd, &held) != nil || unix.Fstatat(dir, name, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			held.Ino != now.Ino || held.Dev != now.Dev {
			unix.Close(fd) // released and removed meanwhile: the id is free, try it again
			if again++; again < 8 {
				i--
			}
			continue
		}
		writeHolder(fd, held.Size, sandboxID)
		return &hostID{id: id, lock: os.NewFile(uintptr(fd), name)}, nil
	}
	return nil, fmt.Errorf("all %d host ids of the range %d:%d are in use by running sandboxes", r.Count, r.Base, r.Count)
}

// sweepLockIDs takes the exclusive lock of the host-id directory dir for a sweep,
// trying again every millisecond for up to 100 ms while takes (shared, each held for
// microseconds) or another sweep hold it: so that the launch after a killed one
// reclaims its id, without waiting long when launches are many.
func sweepLockIDs(dir int) bool { return lockWithin(dir, unix.LOCK_EX, 100*time.Millisecond) }

// hostIDLockWait bounds a take's wait for the host-id directory's shared lock, which a
// sweep holds for the time it locks each stale file (a variable for tests).
var hostIDLockWait = 2 * time.Second

// lockWithin takes a flock(2) of how (LOCK_SH or LOCK_EX) on fd without blocking,
// trying again every millisecond for up to wait: never a wait without bound on a lock,
// so a launch always ends (with an error) however long another holds it. It reports
// whether the lock was taken.
func lockWithin(fd, how int, wait time.Duration) bool {
	for deadline := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		if flockRetry(fd, how|unix.LOCK_NB) == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// flockRetry is flock(2) of fd, again after EINTR (a blocking lock is interrupted by
// the Go runtime's preemption signal).
func flockRetry(fd, how int) error {
	for {
		if err := unix.Flock(fd, how); err != unix.EINTR {
			return err
		}
	}
}

// writeHolder writes the sandbox id in the lock file fd, of size bytes, over what it
// held, and truncates it only when it was longer. Truncating to 0 makes ext4
// (auto_da_alloc) allocate the block at close, which the removal then frees, with a
// synchronous discard on a disk mounted with -o discard (0.3-0.8 ms at the end of every
// launch here); a new file's 17 bytes stay delayed-allocated and, in a launch shorter
// than the kernel's writeback delay, are never written before its removal.
func writeHolder(fd int, size int64, sandboxID string) {
	b := []byte(sandboxID + "\n")
	if n, err := unix.Pwrite(fd, b, 0); err == nil && n == len(b) && size > int64(len(b)) {
		unix.Ftruncate(fd, int64(len(b)))
	}
}

// sweepHostIDs removes the lock files no launcher holds (a launcher killed by SIGKILL
// cannot remove its own): each is locked, removed, unlocked, as release does.
func sweepHostIDs(dir int) {
	// listed through dir itself (not opened again as an os.File): every launch that
	// finds no take in progress sweeps
	var names []string
	if _, err := unix.Seek(dir, 0, 0); err != nil {
		return
	}
	dirent.Each(dir, make([]byte, 4096), func(name []byte, _ uint8) error {
		names = append(names, string(name))
		return nil
	})
	for _, name := range names {
		fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
			var held, now unix.Stat_t
			if unix.Fstat(fd, &held) == nil && unix.Fstatat(dir, name, &now, unix.AT_SYMLINK_NOFOLLOW) == nil &&
				held.Ino == now.Ino && held.Dev == now.Dev {
				unix.Unlinkat(dir, name, 0)
			}
		}
		unix.Close(fd)
	}
}

// withHostID returns a copy of spec whose uid and gid mappings map the command's ids to
// host id h.
func withHostID(spec *config.Config, h uint32) *config.Config {
	s := *spec
	l := *spec.Linux
	l.UIDMappings = []specs.LinuxIDMapping{{ContainerID: spec.Linux.UIDMappings[0].ContainerID, HostID: h, Size: 1}}
	l.GIDMappings = []specs.LinuxIDMapping{{ContainerID: spec.Linux.GIDMappings[0].ContainerID, HostID: h, Size: 1}}
	s.Linux = &l
	return &s
}

// fileOwner is a file's uid and gid.
type fileOwner struct{ uid, gid uint32 }

// idmapPlan says, for each bind tree (in BindSources order), whose ids it is idmapped
// to, as an index in owners: a read-write bind, or one with the "idmap" option (a
// repository's git dir bound from outside the workspace), is idmapped to the owner of
// the outermost read-write bind it lies in, or else of its own source,
// so that the command, host id h, acts on those files as their owner; a directory gosbx
// pins inside a workspace keeps the workspace's mapping. -1 for a tree not idmapped (a
// read-only system bind: root's 0600 files there stay root's).
func idmapPlan(spec *config.Config, trees []*mounts.Source) ([]int, []fileOwner, error) {
	var binds []specs.Mount
	for _, m := range spec.Mounts {
		if m.Type == "bind" {
			binds = append(binds, m)
		}
	}
	if len(binds) != len(trees) {
		return nil, nil, fmt.Errorf("%d cloned trees for %d bind mounts", len(trees), len(binds))
	}
	var plan []int
	var owners []fileOwner
	index := map[fileOwner]int{}
	for i, m := range binds {
		if !mounts.Writable(m) && !hasOption(m, "idmap") {
			plan = append(plan, -1)
			continue
		}
		from := i // the outermost read-write bind it lies in: pins nest, one per level
		for j, w := range binds {
			if j != i && mounts.Writable(w) && pathWithin(m.Source, w.Source) && m.Source != w.Source &&
				len(w.Source) < len(binds[from].Source) {
				from = j
			}
		}
		// the owner of what was cloned, not of what the path leads to now
		var st unix.Stat_t
		if err := unix.Fstat(trees[from].Fd(), &st); err != nil {
			return nil, nil, fmt.Errorf("stat %s: %w", binds[from].Source, err)
		}
		o := fileOwner{st.Uid, st.Gid}
		k, ok := index[o]
		if !ok {
			k = len(owners)
			index[o] = k
			owners = append(owners, o)
		}
		plan = append(plan, k)
	}
	return plan, owners, nil
}

func hasOption(m specs.Mount, opt string) bool {
	for _, o := range m.Options {
		if o == opt {
			return true
		}
	}
	return false
}

// usernsFor returns a user namespace descriptor that maps o's uid and gid to host id h:
// the init's own (/proc/PID/ns/user) when o is the command's own ids inside, else a
// namespace made for the purpose by a short-lived child (a multi-threaded program
// cannot unshare(2) one itself). The mount keeps its own reference to the namespace.
func usernsFor(initPid int, self fileOwner, o fileOwner, h uint32) (int, func(), error) {
	if o == self && initPid > 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(initPid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, nil, fmt.Errorf("open the sandbox's user namespace: %w", err)
		}
		return fd, func() { unix.Close(fd) }, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, nil, err
	}
	defer r.Close()
	child := &exec.Cmd{Path: "/proc/self/exe", Args: []string{holdArg}, Stdin: r,
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: int(o.uid), HostID: int(h), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: int(o.gid), HostID: int(h), Size: 1}},
		}}
	if err := child.Start(); err != nil {
		w.Close()
		return -1, nil, fmt.Errorf("make a user namespace mapping %d:%d to %d: %w", o.uid, o.gid, h, err)
	}
	done := func() {
		w.Close()
		child.Process.Kill()
		go child.Wait()
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(child.Process.Pid)+"/ns/user", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		done()
		return -1, nil, fmt.Errorf("open the user namespace mapping %d:%d to %d: %w", o.uid, o.gid, h, err)
	}
	return fd, func() { unix.Close(fd); done() }, nil
}

// holdArg is the argv[0] of the child that only holds a user namespace for usernsFor:
// it waits for its stdin to close, then exits.
const holdArg = "gosbx-userns"

// idmapTrees idmaps the trees as plan says, for a sandbox whose init is initPid and
// whose command runs as host id h with the ids self inside.
func idmapTrees(trees []*mounts.Source, plan []int, owners []fileOwner, initPid int, self fileOwner, h uint32) error {
	for oi, o := range owners {
		var fd int
		var done func()
		for i, t := range trees {
			if plan[i] != oi {
				continue
			}
			if done == nil {
				var err error
				if fd, done, err = usernsFor(initPid, self, o, h); err != nil {
					return err
				}
				defer done()
			}
			if err := t.SetIDMap(fd); err != nil {
				if errors.Is(err, unix.EINVAL) {
					return fmt.Errorf("%w (its file system, or one mounted below it, cannot be idmapped: "+
						"proc, sysfs, overlayfs, most FUSE and network file systems; the policy setting "+
						"root_identity_map: allow runs the command as host uid 0 instead)", err)
				}
				return err
			}
		}
	}
	return nil
}

// ProbeIDMap reports whether a root launcher can idmap the tree at dir for a sandbox,
// as it does each read-write bind: it clones the tree (open_tree(2), recursive) and
// idmaps the clone (mount_setattr(2) MOUNT_ATTR_IDMAP) with a user namespace that maps
// dir's owner to a host id of policy.DefaultIDRange, then drops it; nothing is mounted.
// It needs a root caller (caps.CurrentCaller). The error names the failing step;
// EINVAL from the idmap means dir's file system, or one mounted below it, cannot be
// idmapped.
func ProbeIDMap(dir string) error {
	if c := caps.CurrentCaller(); !c.Root {
		return errors.New("needs a root caller: root of the initial user namespace with CAP_SYS_ADMIN")
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	src, err := mounts.OpenSource(dir, true)
	if err != nil {
		return err
	}
	defer src.Close()
	// any id of the range: the namespace is dropped at once
	fd, done, err := usernsFor(0, fileOwner{}, fileOwner{st.Uid, st.Gid}, 2_100_000_000)
	if err != nil {
		return err
	}
	defer done()
	return src.SetIDMap(fd)
}

// pathWithin reports whether the canonical path p is dir or lies below it.
func pathWithin(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// nprocDefault reports the process limit of spec when it is its only resource and a
// default (the profile's, best effort: spec.Limits names no required limit and no
// cgroup parent).
func nprocDefault(spec *config.Config) (uint64, bool) {
	if spec.Process == nil || spec.Linux == nil || spec.Linux.Resources == nil {
		return 0, false
	}
	r := *spec.Linux.Resources
	if r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit <= 0 {
		return 0, false
	}
	limit := uint64(*r.Pids.Limit)
	r.Pids = nil
	if !reflect.ValueOf(r).IsZero() {
		return 0, false
	}
	if len(spec.Limits.Required) > 0 || spec.Limits.CgroupParent != "" {
		return 0, false
	}
	for _, rl := range spec.Process.Rlimits {
		if rl.Type == "RLIMIT_NPROC" {
			return 0, false // the spec has its own
		}
	}
	return limit, true
}

// nprocLimit reports the process limit of spec (its pids resource) when the spec sets
// no RLIMIT_NPROC of its own. A pool's template (no process) has its limit.
func nprocLimit(spec *config.Config) (uint64, bool) {
	if spec.Linux == nil || spec.Linux.Resources == nil {
		return 0, false
	}
	r := spec.Linux.Resources
	if r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit <= 0 {
		return 0, false
	}
	if spec.Process != nil {
		for _, rl := range spec.Process.Rlimits {
			if rl.Type == "RLIMIT_NPROC" {
				return 0, false
			}
		}
	}
	return uint64(*r.Pids.Limit), true
}

// withNproc returns a copy of proc whose RLIMIT_NPROC is at most limit: a pooled
// command's, whose sandbox holds its process limit so (Pool). A process that asks for
// less keeps its own.
func withNproc(proc *specs.Process, limit uint64) *specs.Process {
	p := *proc
	p.Rlimits = nil
	set := false
	for _, rl := range proc.Rlimits {
		if rl.Type == "RLIMIT_NPROC" {
			rl.Soft, rl.Hard, set = min(rl.Soft, limit), min(rl.Hard, limit), true
		}
		p.Rlimits = append(p.Rlimits, rl)
	}
	if !set {
		p.Rlimits = append(p.Rlimits, specs.POSIXRlimit{Type: "RLIMIT_NPROC", Soft: limit, Hard: limit})
	}
	return &p
}

// onlyPids reports whether the pids limit is the only resource r sets.
func onlyPids(r *specs.LinuxResources) bool {
	c := *r
	c.Pids = nil
	return reflect.ValueOf(c).IsZero()
}

// nprocInUserNS reports whether RLIMIT_NPROC on the command holds a process limit that
// counts the sandbox's tasks alone: the launcher is not root (its uid, not the root
// user the kernel exempts, is the command's) and the sandbox has a user namespace of
// its own. Since Linux 5.14 the count RLIMIT_NPROC is checked against is kept per user
// namespace and user (kernel/ucount.c, is_rlimit_overlimit): in a fresh namespace it
// counts that namespace's tasks of the uid (the init's threads, the command and all it
// forks), not the caller's other processes on the host, and a namespace made inside
// stays under the limit of its creator. Measured on 6.18: docs/decisions.md.
func nprocInUserNS(spec *config.Config) bool {
	return os.Geteuid() != 0 && os.Getuid() != 0 && hasNamespace(spec, specs.UserNamespace)
}

// withRlimit returns a copy of spec whose process has rl as well.
func withRlimit(spec *config.Config, rl specs.POSIXRlimit) *config.Config {
	s := *spec
	p := *spec.Process
	p.Rlimits = append(append([]specs.POSIXRlimit{}, spec.Process.Rlimits...), rl)
	s.Process = &p
	return &s
}
