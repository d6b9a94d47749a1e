package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		name    string
		wild    bool
		prefix  string
		ports   []uint16
		any     bool
	}{
		{in: "pypi.org", name: "pypi.org", ports: []uint16{443, 80}},
		{in: "PyPI.org.", name: "pypi.org", ports: []uint16{443, 80}},
		{in: "*.githubusercontent.com", name: "githubusercontent.com", wild: true, ports: []uint16{443, 80}},
		{in: "example.com:8443", name: "example.com", ports: []uint16{8443}},
		{in: "example.com:*", name: "example.com", any: true},
		{in: "10.0.0.5", prefix: "10.0.0.5/32", ports: []uint16{443, 80}},
		{in: "10.1.2.3/8", prefix: "10.0.0.0/8", ports: []uint16{443, 80}},
		{in: "[fd00::1]:8443", prefix: "fd00::1/128", ports: []uint16{8443}},
		{in: "fd00::1", prefix: "fd00::1/128", ports: []uint16{443, 80}},
		{in: "localhost", prefix: "127.0.0.1/32", ports: []uint16{443, 80}}, // the host's loopback by name
		{in: "*", err: "want a host name"},
		{in: "*.com.", name: "com", wild: true, err: "want a host name"},
		{in: "a..b", err: "want a host name"},
		{in: "ex ample.com", err: "want a host name"},
		{in: "example.com:0", err: "port"},
		{in: "example.com:70000", err: "port"},
		{in: "example.com:http", err: "port"},
		{in: "[fd00::1", err: "unclosed"},
		{in: "fe80::1%eth0", err: "zone"},
		{in: "-bad.example", err: "want a host name"},
	} {
		r, err := ParseRule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseRule(%q) = %+v, %v; want error with %q", tc.in, r, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.in, err)
			continue
		}
		if r.Name != tc.name || r.Wildcard != tc.wild || r.AnyPort != tc.any || len(r.Ports) != len(tc.ports) {
			t.Errorf("ParseRule(%q) = %+v", tc.in, r)
		}
		for i := range tc.ports {
			if r.Ports[i] != tc.ports[i] {
				t.Errorf("ParseRule(%q).Ports = %v, want %v", tc.in, r.Ports, tc.ports)
			}
		}
		if tc.prefix != "" && r.Prefix.String() != tc.prefix {
			t.Errorf("ParseRule(%q).Prefix = %v, want %s", tc.in, r.Prefix, tc.prefix)
		}
	}
}

func TestDecide(t *testing.T) {
	p, err := NewPolicy(
		[]string{"pypi.org", "*.githubusercontent.com", "api.example:8443", "internal.example", "10.9.0.0/16", "wild.example:*", "evil.example"},
		[]string{"evil.example", "*.bad.githubusercontent.com", "1.2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	addrs := func(s ...string) []netip.Addr {
		out := []netip.Addr{}
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	for _, tc := range []struct {
		host     string
		port     uint16
		resolved []netip.Addr // nil: the decision before lookup is the answer
		allow    bool
		rule     string
	}{
		{"pypi.org", 443, addrs("151.101.0.223"), true, "network.allow pypi.org"},
		{"PYPI.ORG.", 80, addrs("151.101.0.223"), true, "network.allow pypi.org"},
		{"pypi.org", 22, nil, false, "network.allow"},
		{"files.pypi.org", 443, nil, false, "network.allow"},
		{"raw.githubusercontent.com", 443, addrs("185.199.108.133"), true, "network.allow *.githubusercontent.com"},
		{"githubusercontent.com", 443, nil, false, "network.allow"},
		{"x.bad.githubusercontent.com", 443, nil, false, "network.deny *.bad.githubusercontent.com"},
		{"api.example", 8443, addrs("93.184.216.34"), true, "network.allow api.example:8443"},
		{"api.example", 443, nil, false, "network.allow"},
		{"wild.example", 5432, addrs("93.184.216.34"), true, "network.allow wild.example:*"},
		{"evil.example", 443, nil, false, "network.deny evil.example"},
		{"nothere.example", 443, nil, false, "network.allow"},
		// resolved addresses checked: a public name resolving inside is denied
		{"pypi.org", 443, addrs("169.254.169.254"), false, "metadata"},
		{"pypi.org", 443, addrs("151.101.0.223", "127.0.0.1"), false, "loopback"},
		{"pypi.org", 443, addrs("::ffff:10.0.0.1"), false, "private"},
		{"pypi.org", 443, addrs("192.168.1.1"), false, "private"},
		{"pypi.org", 443, addrs("100.64.0.1"), false, "private"},
		{"pypi.org", 443, addrs("fe80::1"), false, "link-local"},
		{"pypi.org", 443, addrs("fd00:ec2::254"), false, "metadata"},
		{"pypi.org", 443, addrs("::1"), false, "loopback"},
		{"pypi.org", 443, addrs("fc00::5"), false, "private"},
		{"pypi.org", 443, addrs("0.0.0.0"), false, "unspecified"},
		{"pypi.org", 443, addrs("64:ff9b::a00:1"), false, "reserved"},
		{"pypi.org", 443, addrs("1.2.3.4"), false, "network.deny 1.2.3.4"},
		{"pypi.org", 443, addrs(), false, "no-address"},
		{"pypi.org", 443, addrs("2a04:4e42::223"), true, "network.allow pypi.org"},
		// a private address named by a rule is allowed
		{"internal.example", 443, addrs("10.9.1.2"), true, "network.allow internal.example"},
		{"internal.example", 443, addrs("10.8.1.2"), false, "private"},
		// address literals: denied unless a rule names them
		{"93.184.216.34", 443, nil, false, "ip-literal"},
		{"127.0.0.1", 80, nil, false, "loopback"},
		{"169.254.169.254", 80, nil, false, "metadata"},
		{"::1", 443, nil, false, "loopback"},
		{"2606:2800:220:1::", 443, nil, false, "ip-literal"},
		{"10.9.3.4", 443, nil, true, "network.allow 10.9.0.0/16"},
		{"::ffff:10.9.3.4", 443, nil, true, "network.allow 10.9.0.0/16"},
		{"10.9.3.4", 22, nil, false, "private"},
		{"1.2.3.4", 443, nil, false, "network.deny 1.2.3.4"},
		{"fe80::1%lo", 443, nil, false, "invalid-host"},
		{"bad host", 443, nil, false, "invalid-host"},
	} {
		d := p.Host(tc.host, tc.port)
		if tc.resolved != nil && d.Allow && d.Addrs == nil {
			d = p.Resolved(d, tc.resolved)
		}
		if d.Allow != tc.allow || d.Rule != tc.rule {
			t.Errorf("%s:%d %v: allow=%v rule=%q; want allow=%v rule=%q", tc.host, tc.port, tc.resolved, d.Allow, d.Rule, tc.allow, tc.rule)
		}
		if d.Allow && len(d.Addrs) == 0 {
			t.Errorf("%s:%d allowed with no address to dial", tc.host, tc.port)
		}
		if !d.Allow && !strings.Contains(d.Message(), "blocked by gosbx policy") {
			t.Errorf("%s:%d: message %q", tc.host, tc.port, d.Message())
		}
	}
}

func TestMessage(t *testing.T) {
	p, _ := NewPolicy([]string{"pypi.org"}, []string{"*.evil.example"})
	for _, tc := range []struct {
		host string
		want string
	}{
		{"evil.example", "blocked by gosbx policy: host evil.example:443 not in network.allow; to allow it, pass --allow-host evil.example:443"},
		{"a.evil.example", "blocked by gosbx policy: host a.evil.example:443 is denied by rule network.deny *.evil.example; remove the rule"},
		{"10.0.0.1", "blocked by gosbx policy: address literal 10.0.0.1:443 is denied by rule private; name the address in network.allow"},
	} {
		if got := p.Host(tc.host, 443).Message(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want prefix %q", tc.host, got, tc.want)
		}
	}
	d := p.Resolved(p.Host("pypi.org", 443), []netip.Addr{netip.MustParseAddr("169.254.169.254")})
	if got := d.Message(); !strings.Contains(got, "address 169.254.169.254 of host pypi.org:443 is denied by rule metadata") {
		t.Errorf("resolved: %q", got)
	}
}

func TestAllowsName(t *testing.T) {
	p, _ := NewPolicy([]string{"pypi.org:8443", "*.example.com"}, []string{"bad.example.com:*", "half.example.com:80"})
	for host, want := range map[string]bool{
		"pypi.org": true, "a.example.com": true, "example.com": false, "bad.example.com": false,
		"half.example.com": true, "other.org": false, "": false, "1.2.3.4": false,
	} {
		if got := p.AllowsName(host); got != want {
			t.Errorf("AllowsName(%q) = %v, want %v", host, got, want)
		}
	}
}
