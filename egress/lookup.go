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

// TestNet says whether this build maps names for tests (never, in this build).
const TestNet = false
