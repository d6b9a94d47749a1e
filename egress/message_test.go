package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// A denial of an address class names the exact flag, address and port (a trial followed
// "--allow-host ADDRESS" with the address alone, got the default ports 80 and 443, and
// stayed blocked); a loopback one also names --host-port.
func TestMessageNamesTheFlag(t *testing.T) {
	p, err := NewPolicy([]string{"pkg.test:18080"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lit := p.Host("127.0.0.1", 18080)
	if m := lit.Message(); !strings.Contains(m, "--allow-host 127.0.0.1:18080)") || !strings.Contains(m, "--host-port 18080") {
		t.Errorf("literal: %q", m)
	}
	six := p.Host("::1", 8080)
	if m := six.Message(); !strings.Contains(m, "--allow-host [::1]:8080)") {
		t.Errorf("literal ::1: %q", m)
	}
	named := p.Resolved(p.Host("pkg.test", 18080), []netip.Addr{netip.MustParseAddr("10.1.2.3")})
	if m := named.Message(); !strings.Contains(m, "--allow-host 10.1.2.3:18080)") || strings.Contains(m, "--host-port") {
		t.Errorf("a name's private address: %q", m)
	}
}
