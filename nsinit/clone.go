package nsinit

import (
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// initCaps are the capabilities the init stage keeps across its re-execution (as
// ambient capabilities, see capabilities(7)), for a caller whose uid inside is not 0.
// They hold only in the new user namespace and are all dropped before the command.
var initCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN,
	unix.CAP_SYS_CHROOT, unix.CAP_SYS_ADMIN, unix.CAP_SYS_RESOURCE, unix.CAP_MKNOD,
	unix.CAP_NET_BIND_SERVICE, // the egress's DNS stub and capture ports (egress.go)
}

// nsFlag is the clone flag of a namespace type, 0 for one gosbx does not create.
func nsFlag(t specs.LinuxNamespaceType) uintptr {
	switch t {
	case specs.UserNamespace:
		return unix.CLONE_NEWUSER
	case specs.MountNamespace:
		return unix.CLONE_NEWNS
	case specs.PIDNamespace:
		return unix.CLONE_NEWPID
	case specs.NetworkNamespace:
		return unix.CLONE_NEWNET
	case specs.IPCNamespace:
		return unix.CLONE_NEWIPC
	case specs.UTSNamespace:
		return unix.CLONE_NEWUTS
	case specs.CgroupNamespace:
		return unix.CLONE_NEWCGROUP
	}
	return 0
}

// cloneConfig derives the clone flags and id maps from spec.Linux, which
// config.Validate has checked.
func cloneConfig(spec *config.Config) (uintptr, []syscall.SysProcIDMap, []syscall.SysProcIDMap) {
	var flags uintptr
	for _, ns := range spec.Linux.Namespaces {
		flags |= nsFlag(ns.Type)
	}
	conv := func(ms []specs.LinuxIDMapping) []syscall.SysProcIDMap {
		out := make([]syscall.SysProcIDMap, len(ms))
		for i, m := range ms {
			out[i] = syscall.SysProcIDMap{ContainerID: int(m.ContainerID), HostID: int(m.HostID), Size: int(m.Size)}
		}
		return out
	}
	return flags, conv(spec.Linux.UIDMappings), conv(spec.Linux.GIDMappings)
}
