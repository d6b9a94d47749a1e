//go:build gosbxtestnet

package egress

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
)

// TestNet says whether this build maps names for tests: only a binary built with
// -tags gosbxtestnet (the egress integration tests build one) reads $GOSBX_TEST_HOSTS,
// "name=address,…", and resolves those names to those addresses before the host's
// resolver. The decision on the addresses is unchanged: a test maps a name to
// 127.0.0.1 and names that address in an allow rule, or sees it denied.
const TestNet = true

func hostLookup() func(context.Context, string) ([]netip.Addr, error) {
	m := map[string][]netip.Addr{}
	for _, kv := range strings.Split(os.Getenv("GOSBX_TEST_HOSTS"), ",") {
		k, v, ok := strings.Cut(kv, "=")
		if a, err := netip.ParseAddr(v); ok && err == nil {
			m[strings.ToLower(k)] = append(m[strings.ToLower(k)], a)
		}
	}
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		if a, ok := m[host]; ok {
			return a, nil
		}
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
}
