package nsinit

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

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

// commandsProcs is the init's descriptor of its commands' pids group's cgroup.procs
// (cgroup/pids.go), -1 without one, and commandsCount those of the group's
// pids.current and pids.max: opened by the launcher (v1 checks the opener's
// credentials on cgroup.procs) and sent after the bind sources when the config says
// CommandsCgroup (readSpec). Each command writes joinSelf to commandsProcs in its
// process stage (planProcess, step "cgroup"), so that it and all it forks count
// against the process limit, and the init's threads do not. All are close-on-exec
// (MSG_CMSG_CLOEXEC), and the process stage makes every descriptor but 0-2
// close-on-exec anyway: no command holds one.
var (
	commandsProcs = -1
	commandsCount [2]int // pids.current, pids.max
)

// commandsFiles is how many descriptors the launcher sends for the commands' group.
const commandsFiles = 3

// joinSelf is what a process writes to cgroup.procs to join that group: "0" names the
// writer (cgroup-v1.rst, "Attaching processes").
var joinSelf = [1]byte{'0'}

// takeCommandsCgroup takes the last commandsFiles of the descriptors readSpec received
// as commandsProcs and commandsCount when spec says the launcher sent them, and
// returns the others (the bind sources).
func takeCommandsCgroup(spec *config.Config, fds []int) []int {
	if !spec.CommandsCgroup || len(fds) < commandsFiles {
		return fds
	}
	n := len(fds) - commandsFiles
	commandsProcs, commandsCount = fds[n], [2]int{fds[n+1], fds[n+2]}
	return fds[:n]
}

// commandsFull is unix.EAGAIN when the commands' group has no pid free (pids.current
// at pids.max): a process moved in is not refused at the limit (pids.rst), so a
// command is not started there, as its fork would have been refused without the
// split. nil when there is room, no limit, or no commands' group. Commands forking
// meanwhile may still take the last pid first: each command started then is one
// process over the limit, inside the sandbox group's headroom.
func commandsFull() error {
	if commandsProcs < 0 {
		return nil
	}
	var v [2]int64
	for i, fd := range commandsCount {
		var b [32]byte
		n, err := unix.Pread(fd, b[:], 0)
		if err != nil {
			return fmt.Errorf("read the commands' pids count: %w", err)
		}
		f := strings.TrimSpace(string(b[:max(n, 0)]))
		if f == "max" {
			return nil
		}
		if v[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return fmt.Errorf("read the commands' pids count %q: %w", f, err)
		}
	}
	if v[0] >= v[1] {
		return fmt.Errorf("the process limit is reached (%d of %d processes): %w", v[0], v[1], unix.EAGAIN)
	}
	return nil
}
