package policy

import "github.com/gosbx/gosbx/seccomp"

// NetworkSeccomp is the seccomp configuration a sandbox with network mode mode applies
// for sc (nil: the default profile): unless mode is NetHost, the rules that refuse the
// socket families a network namespace does not confine (seccomp.NoHostNetworkRules)
// come first, so no policy rule reopens AF_VSOCK; only network.mode host does.
func NetworkSeccomp(sc *seccomp.Config, mode string) *seccomp.Config {
	if sc == nil {
		sc = &seccomp.Config{}
	}
	if mode == NetHost {
		return sc
	}
	with := *sc
	with.Rules = append(seccomp.NoHostNetworkRules(), sc.Rules...)
	return &with
}
