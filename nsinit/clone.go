package nsinit

import (
	"errors"
	"fmt"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// initCaps are the capabilities the init stage keeps across its re-execution (as
// ambient capabilities, see capabilities(7)), for a caller whose uid inside is not 0.
// They hold only in the new user namespace and are all dropped before the command.
var initCaps = []uintptr{
	unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN,
	unix.CAP_SYS_CHROOT, unix.CAP_SYS_ADMIN, unix.CAP_SYS_RESOURCE, unix.CAP_MKNOD,
}

var nsFlags = map[specs.LinuxNamespaceType]uintptr{
	specs.UserNamespace: unix.CLONE_NEWUSER, specs.MountNamespace: unix.CLONE_NEWNS,
	specs.PIDNamespace: unix.CLONE_NEWPID, specs.NetworkNamespace: unix.CLONE_NEWNET,
	specs.IPCNamespace: unix.CLONE_NEWIPC, specs.UTSNamespace: unix.CLONE_NEWUTS,
	specs.CgroupNamespace: unix.CLONE_NEWCGROUP,
}

// cloneConfig derives the clone flags and id maps from spec.Linux. A pool's template
// (pooled) needs no process: each command brings its own.
func cloneConfig(spec *specs.Spec, pooled bool) (uintptr, []syscall.SysProcIDMap, []syscall.SysProcIDMap, error) {
	if spec == nil {
		return 0, nil, nil, errors.New("no spec")
	}
	if !pooled && (spec.Process == nil || len(spec.Process.Args) == 0) {
		return 0, nil, nil, errors.New("spec has no process args")
	}
	if spec.Linux == nil {
		return 0, nil, nil, errors.New("spec has no linux section")
	}
	var flags uintptr
	for _, ns := range spec.Linux.Namespaces {
		f, ok := nsFlags[ns.Type]
		if !ok {
			return 0, nil, nil, fmt.Errorf("unsupported namespace %q", ns.Type)
		}
		if ns.Path != "" {
			return 0, nil, nil, fmt.Errorf("joining namespace %s (%s) is not supported", ns.Type, ns.Path)
		}
		flags |= f
	}
	if flags&unix.CLONE_NEWUSER == 0 || flags&unix.CLONE_NEWNS == 0 || flags&unix.CLONE_NEWPID == 0 {
		return 0, nil, nil, errors.New("the user, mount and pid namespaces are required")
	}
	conv := func(ms []specs.LinuxIDMapping) []syscall.SysProcIDMap {
		out := make([]syscall.SysProcIDMap, len(ms))
		for i, m := range ms {
			out[i] = syscall.SysProcIDMap{ContainerID: int(m.ContainerID), HostID: int(m.HostID), Size: int(m.Size)}
		}
		return out
	}
	if len(spec.Linux.UIDMappings) == 0 || len(spec.Linux.GIDMappings) == 0 {
		return 0, nil, nil, errors.New("spec has no uid/gid mappings")
	}
	return flags, conv(spec.Linux.UIDMappings), conv(spec.Linux.GIDMappings), nil
}
