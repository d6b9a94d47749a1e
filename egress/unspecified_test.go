package egress

import (
	"net/netip"
	"strings"
	"testing"
)

// connect(2) to the unspecified address (0.0.0.0, ::) reaches the host's own loopback:
// a policy that allows a range containing it and refuses loopback by a deny rule or by
// class must refuse it too, as a literal and as a resolved address (a blocklist's DNS
// answers 0.0.0.0).
func TestUnspecifiedIsLoopback(t *testing.T) {
	p, err := NewPolicy([]string{"0.0.0.0/0:*", "[::/0]:*", "pub.example:*"}, []string{"127.0.0.0/8:*", "[::1]:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ addr, rule string }{
		{"0.0.0.0", "network.deny 127.0.0.0/8:*"},
		{"::ffff:0.0.0.0", "network.deny 127.0.0.0/8:*"},
		{"::", "network.deny [::1]:*"},
	} {
		if d := p.Host(tc.addr, 18081); d.Allow || d.Rule != tc.rule {
			t.Errorf("Host(%s) = allow %v rule %q, want denied by %q", tc.addr, d.Allow, d.Rule, tc.rule)
		}
		d := p.Resolved(p.Host("pub.example", 18081), []netip.Addr{netip.MustParseAddr(tc.addr)})
		if d.Allow || d.Rule != tc.rule {
			t.Errorf("pub.example resolved to %s: allow %v rule %q, want denied by %q", tc.addr, d.Allow, d.Rule, tc.rule)
		}
	}
	// a rule naming 0.0.0.0 alone: the refusal names the address reached, and the fix
	// the flag that allows it
	o, _ := NewPolicy([]string{"0.0.0.0:18081"}, nil)
	if d := o.Host("0.0.0.0", 18081); d.Allow || d.Rule != "loopback" || !strings.Contains(d.Message(), "--allow-host 127.0.0.1:18081") {
		t.Errorf("allow 0.0.0.0:18081: Host(0.0.0.0) = allow %v rule %q: %s", d.Allow, d.Rule, d.Message())
	}
	// no deny rule, and 0.0.0.0/0 names 127.0.0.1: the same as asking for 127.0.0.1
	q, _ := NewPolicy([]string{"0.0.0.0/0:*"}, nil)
	if d := q.Host("0.0.0.0", 80); !d.Allow {
		t.Errorf("allow 0.0.0.0/0: Host(0.0.0.0) denied by %q", d.Rule)
	}
}
