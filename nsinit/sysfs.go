package nsinit

import (
	"fmt"
	"path"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// The sandbox's own cgroup under /sys/fs/cgroup, read-only, so that programs that size
// themselves (Go's runtime, the JVM, Node, glibc-less tools reading memory.max or
// cpu.cfs_quota_us) see its limits: each directory of the group (cgroup.Group.Dirs) is
// a read-only bind, made by the launcher like any other bind source (an O_PATH
// descriptor, or a root caller's cloned tree), at /sys/fs/cgroup/<controller> (v1) or
// /sys/fs/cgroup (v2). Only the group itself is bound: none of the host's other groups,
// not even its parent, is reachable. The init moves its commands' cgroup namespace to
// the group once it is placed there (the "cgroup namespace" step), so that
// /proc/self/cgroup says "/" and each bind's root in /proc/self/mountinfo is "/": the
// two agree as Go's internal/runtime/cgroup, the JVM and Node read them. Nothing inside
// can write there: the binds are read-only (mkdir of a child group fails with EROFS)
// and the files are root's. docs/decisions.md, "The sandbox's own cgroup under /sys".

// cgroupMountRoot is where the sandbox sees its group.
const cgroupMountRoot = "/sys/fs/cgroup"

// withCgroupMounts returns spec with a read-only bind of each of g's directories under
// /sys/fs/cgroup, when spec shows a /sys of its own (a tmpfs at /sys, as policy
// compiles) and g is not nil; spec itself otherwise. The binds go right after the /sys
// mount and the mounts below it, so that nothing the spec mounts later lies under them.
func withCgroupMounts(spec *config.Config, g cgroup.Group) *config.Config {
	if g == nil {
		return spec
	}
	at := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == "/sys" && m.Type == "tmpfs" })
	if at < 0 {
		return spec
	}
	for at+1 < len(spec.Mounts) && pathWithin(spec.Mounts[at+1].Destination, "/sys") {
		at++
	}
	var add []specs.Mount
	for _, d := range g.Dirs() {
		dest := cgroupMountRoot
		if d.Controller != "" {
			dest = path.Join(cgroupMountRoot, d.Controller)
		}
		add = append(add, specs.Mount{Destination: dest, Type: "bind", Source: d.Path,
			Options: []string{"bind", "nosuid", "nodev", "noexec", "ro"}})
	}
	s := *spec
	s.Mounts = slices.Concat(spec.Mounts[:at+1], add, spec.Mounts[at+1:])
	return &s
}

// cgroupNamespace roots the commands' cgroup namespace at the sandbox's group: the
// init was cloned into a cgroup namespace rooted at the caller's cgroup (a v1 group is
// joined after the clone; on v2 the clone's namespace takes the parent's cgroup), so it
// waits until the launcher has placed it (awaitGoAhead) and unshares a new one from the
// thread the commands are forked from. Needs CAP_SYS_ADMIN in the sandbox's user
// namespace: before "limit capabilities". cgroup_namespaces(7).
func (s *sandboxInit) cgroupNamespace() error {
	if !hasNamespace(s.spec, specs.CgroupNamespace) {
		return nil
	}
	s.sys.awaitGoAhead()
	return s.sys.unshareCgroup()
}

func (k *kernelInit) unshareCgroup() error {
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("unshare(CLONE_NEWCGROUP): %w", err)
	}
	return nil
}
