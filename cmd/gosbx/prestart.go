package main

import (
	"os"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// cloneGuess is the part of the config policy.Build will give o that the init's clone
// needs (nsinit.Prestart: namespaces, id mappings, a root caller's id range), as the
// flags alone say it, before any policy file is read or built; nil when the flags
// already ask for a clone an init cloned ahead cannot have (egress or --net proxy,
// port forwards, host ports, --cpus, --cgroup-parent, and on a cgroup v2 host --memory,
// --memory-swap or --pids: the init of a v2 group is cloned into it, CLONE_INTO_CGROUP).
// A policy that says otherwise
// (network: host, its own uid or range, resources) only costs the init started for
// nothing: Start compares and clones anew (nsinit.Cmd.Prestarted).
// cgroupMode is the host's cgroup mode (a variable so that tests can fake a v2 host).
var cgroupMode = cgroup.Mode

func cloneGuess(o policy.Options, h policy.Host) *config.Config {
	r := o.Resources
	if o.Net == policy.NetProxy || len(o.AllowHosts) > 0 || len(o.Publish) > 0 || len(o.HostPorts) > 0 ||
		r.CPUs > 0 || r.CgroupParent != "" {
		return nil
	}
	if (r.Memory != "" || r.MemorySwap != "" || r.Pids != 0) && cgroupMode() == cgroup.V2 {
		return nil
	}
	ns := []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace},
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace}}
	if o.Net != policy.NetHost {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	// policy.Build's ids and a root caller's range, as it will give them
	uid, gid, rng := policy.CommandIDs(h, o.UID, o.GID, o.IDRange)
	var rootID *config.RootID
	if rng != nil {
		rootID = &config.RootID{Range: *rng}
	}
	return &config.Config{
		Linux: &config.Linux{
			UIDMappings: []specs.LinuxIDMapping{{ContainerID: uid, HostID: uint32(h.UID), Size: 1}},
			GIDMappings: []specs.LinuxIDMapping{{ContainerID: gid, HostID: uint32(h.GID), Size: 1}},
			Namespaces:  ns,
		},
		RootID: rootID,
	}
}

// prestart clones the init for o's launch ahead of the policy step (nsinit.Prestart),
// with the command's stdio; nil when the flags rule it out or it could not be made:
// Start then clones its own, and reports what stops it.
func prestart(o policy.Options, h policy.Host) *nsinit.Prestarted {
	guess := cloneGuess(o, h)
	if guess == nil {
		return nil
	}
	p, err := nsinit.Prestart(guess, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		return nil
	}
	return p
}
