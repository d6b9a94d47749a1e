package policy

import "github.com/gosbx/gosbx/seccomp"

// NetworkSeccomp is the seccomp configuration a sandbox with network mode mode applies
// for sc (nil: the default profile): unless mode is NetHost, the rules that refuse the
// socket families a network namespace does not confine (seccomp.NoHostNetworkRules)
// come first, so no policy rule reopens AF_VSOCK; only network.mode host does. In every
// mode the refusal of NETLINK_USERSOCK sockets (seccomp.NoUserNetlinkRules: queues no
// memory cgroup charges) comes first of all.
func NetworkSeccomp(sc *seccomp.Config, mode string) *seccomp.Config {
	if sc == nil {
		sc = &seccomp.Config{}
	}
	with := *sc
	with.Rules = seccomp.NoUserNetlinkRules()
	if mode != NetHost {
		with.Rules = append(with.Rules, seccomp.NoHostNetworkRules()...)
	}
	with.Rules = append(with.Rules, sc.Rules...)
	return &with
}
