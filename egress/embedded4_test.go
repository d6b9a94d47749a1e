package egress

import (
	"net/netip"
	"testing"
)

// An IPv6 address that carries an IPv4 one (NAT64 64:ff9b::/96 and 64:ff9b:1::/48,
// IPv4-compatible ::/96, 6to4 2002::/16) reaches that IPv4 address through a
// translator: a policy that allows IPv6 space broadly must still refuse what it
// refuses by IPv4, a deny rule's address and the IPv4 classes (metadata, private,
// loopback), both as a literal and as a resolved address.
func TestEmbeddedIPv4Denied(t *testing.T) {
	p, err := NewPolicy([]string{"[::/0]:*", "pub.example:*"}, []string{"10.0.0.0/8:*", "203.0.114.7:*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ addr, rule string }{
		{"64:ff9b::a00:5", "network.deny 10.0.0.0/8:*"},      // NAT64 of 10.0.0.5
		{"64:ff9b::cb00:7207", "network.deny 203.0.114.7:*"}, // NAT64 of a denied public address
		{"64:ff9b:1::a00:5", "network.deny 10.0.0.0/8:*"},    // local-use NAT64 /48 (RFC 8215), /96 form
		{"::a00:5", "network.deny 10.0.0.0/8:*"},             // IPv4-compatible
		{"::ffff:0:a00:5", "network.deny 10.0.0.0/8:*"},      // IPv4-translated (SIIT)
		{"2002:a00:5::1", "network.deny 10.0.0.0/8:*"},       // 6to4
		{"64:ff9b::a9fe:a9fe", "metadata"},                   // 169.254.169.254: no deny rule, its class
		{"64:ff9b::7f00:1", "loopback"},
		{"2002:c0a8:101::1", "private"}, // 192.168.1.1
	} {
		a := netip.MustParseAddr(tc.addr)
		if d := p.Host(tc.addr, 443); d.Allow || d.Rule != tc.rule {
			t.Errorf("Host(%s) = allow %v rule %q, want denied by %q", tc.addr, d.Allow, d.Rule, tc.rule)
		}
		d := p.Resolved(p.Host("pub.example", 443), []netip.Addr{a})
		if d.Allow || d.Rule != tc.rule {
			t.Errorf("pub.example resolved to %s: allow %v rule %q, want denied by %q", tc.addr, d.Allow, d.Rule, tc.rule)
		}
	}
	// the IPv6 form of a public address no rule denies stays allowed by ::/0
	if d := p.Host("64:ff9b::808:808", 443); !d.Allow {
		t.Errorf("Host(64:ff9b::808:808) denied by %q", d.Rule)
	}
	// a rule naming the embedded IPv4 address allows its translated form
	q, _ := NewPolicy([]string{"[::/0]:*", "10.0.0.5:443"}, nil)
	if d := q.Host("64:ff9b::a00:5", 443); !d.Allow {
		t.Errorf("with --allow-host 10.0.0.5:443, Host(64:ff9b::a00:5) denied by %q", d.Rule)
	}
}
