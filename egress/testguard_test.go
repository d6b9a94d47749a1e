package egress

import (
	"fmt"
	"net/netip"
	"os"
	"testing"
)

// TestMain keeps the unit tests on this machine: the proxy dials loopback only, so a
// regression in a decision under test (an allowed name resolving to 169.254.169.254)
// fails the test instead of reaching that address.
func TestMain(m *testing.M) {
	dialGuard = func(a netip.Addr) error {
		if a.Unmap().IsLoopback() {
			return nil
		}
		return fmt.Errorf("unit test: dial of %v refused, only loopback is dialled", a)
	}
	os.Exit(m.Run())
}
