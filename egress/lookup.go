//go:build !gosbxtestnet

package egress

import (
	"context"
	"net"
	"net/netip"
)

// hostLookup is the host's resolver (both address families: each is checked).
func hostLookup() func(context.Context, string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
}

// dialGuard is the last check before a dial: none in this build, where the decision is
// the check (a test may set it: the egress tests' safety net, testguard_test.go).
var dialGuard = func(netip.Addr) error { return nil }

// TestNet says whether this build maps names for tests (never, in this build).
const TestNet = false
