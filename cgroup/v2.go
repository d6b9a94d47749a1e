package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/containerd/cgroups/v3/cgroup2"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// v2Mount is the unified hierarchy's mount point (a variable so tests can point it at a tmpfs).
var v2Mount = "/sys/fs/cgroup"

// DefaultParent is the v2 group sandboxes are made in when no parent is named.
const DefaultParent = "/gosbx"

type v2Group struct {
	group string
	m     *cgroup2.Manager
	fd    int
	gone  bool
}

// newV2 makes parent/gosbx-… with the limits (enabling the controllers it needs in
// every ancestor's cgroup.subtree_control) and opens it for CLONE_INTO_CGROUP.
func newV2(r *specs.LinuxResources, o Options) (Group, error) {
	parent := o.Parent
	if parent == "" {
		parent = DefaultParent
	}
	parent = "/" + strings.Trim(filepath.Clean("/"+parent), "/")
	gcV2(parent)
	id := o.ID
	if id == "" {
		id = NewID()
	}
	group := filepath.Join(parent, groupName(id))
	// no sweep until this group is locked (owner.go); the parent must exist to be locked
	os.MkdirAll(filepath.Join(v2Mount, parent), 0o755)
	creating := lockDir(filepath.Join(v2Mount, parent), unix.LOCK_SH)
	defer creating.Close()
	res := cgroup2.ToResources(r)
	if r != nil && r.Memory != nil && r.Memory.Swap != nil && *r.Memory.Swap < 0 && res.Memory != nil {
		max := int64(math.MaxInt64) // memory.swap.max "max": ToResources turns -1 into -1-limit
		res.Memory.Swap = &max
	}
	m, err := cgroup2.NewManager(v2Mount, group, res)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("%w: create cgroup v2 group %s: %v (no cgroup delegated to this user: name one with --cgroup-parent, e.g. inside `systemd-run --user --scope -p Delegate=yes`)", ErrUnavailable, group, err)
		}
		return nil, fmt.Errorf("create cgroup v2 group %s: %w", group, err)
	}
	fd, err := unix.Open(filepath.Join(v2Mount, group), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		m.Delete()
		return nil, fmt.Errorf("open cgroup %s: %w", group, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil { // the owner's lock (owner.go)
		unix.Close(fd)
		m.Delete()
		return nil, fmt.Errorf("lock cgroup %s: %w", group, err)
	}
	return &v2Group{group: group, m: m, fd: fd}, nil
}

func (g *v2Group) Kind() Kind    { return V2 }
func (g *v2Group) CloneFd() int  { return g.fd }
func (g *v2Group) Add(int) error { return nil } // cloned into the group

func (g *v2Group) Stats() Stats {
	var s Stats
	if m, err := g.m.Stat(); err == nil && m != nil {
		if m.Memory != nil {
			s.MemoryPeak = int64(m.Memory.MaxUsage)
		}
		if m.MemoryEvents != nil {
			s.OOMKilled = m.MemoryEvents.OomKill > 0
		}
		if m.CPU != nil {
			s.CPUUser, s.CPUSystem = int64(m.CPU.UserUsec), int64(m.CPU.SystemUsec)
		}
	}
	dir := filepath.Join(v2Mount, g.group)
	if b, err := os.ReadFile(filepath.Join(dir, "pids.peak")); err == nil {
		s.PidsPeak, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	s.PidsMaxHit = eventCount(filepath.Join(dir, "pids.events"), "max") > 0
	return s
}

// Destroy kills what is left with cgroup.kill and removes the group.
func (g *v2Group) Destroy() error {
	if g.gone {
		return nil
	}
	g.gone = true
	defer unix.Close(g.fd) // the owner's lock, held until the group is gone
	g.m.Kill()
	if err := g.m.Delete(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", g.group, err)
	}
	return nil
}

// gcV2 removes groups in parent whose owner is gone (owner.go), when no launch is
// making one there.
func gcV2(parent string) {
	dir := filepath.Join(v2Mount, parent)
	sweeping := lockDir(dir, unix.LOCK_EX|unix.LOCK_NB)
	if sweeping == nil {
		return
	}
	defer sweeping.Close()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "gosbx-") || ownerAlive(dir, e.Name()) {
			continue
		}
		if m, err := cgroup2.Load(filepath.Join(parent, e.Name()), cgroup2.WithMountpoint(v2Mount)); err == nil {
			m.Kill()
			m.Delete()
		}
	}
}
