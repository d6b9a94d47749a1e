// Package egress decides, and carries, a sandbox's outbound connections: host patterns
// allowed and denied by the policy (network.allow, network.deny, --allow-host), the
// address classes denied unless a rule names them (IP literals, loopback, link-local,
// private ranges, cloud metadata), and the host-side proxy its owner runs (HTTP CONNECT
// and absolute-URI requests, SOCKS5 CONNECT, a DNS stub, capture of loopback ports 80
// and 443), served on listening sockets made inside the sandbox's network namespace.
//
// One decision per connection, on the host side: the name is checked, resolved by the
// host, and every resolved address checked again before the proxy dials the one it
// checked (no second lookup).
package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPorts are the ports of a rule that names none.
var defaultPorts = [...]uint16{443, 80}

// Rule is one host pattern of network.allow or network.deny: an exact name
// ("pypi.org"), a wildcard for every name below a domain ("*.githubusercontent.com",
// not the domain itself), an IP address ("10.0.0.5", "fd00::1") or prefix
// ("10.0.0.0/8"), each with optional ports (":8443", ":*" for any; default 443 and 80).
// The text of an IPv6 rule with a port is bracketed: "[fd00::1]:8443".
type Rule struct {
	Text     string       // as written, to name the rule in decisions
	Name     string       // lower case, no trailing dot; "" for an address rule
	Wildcard bool         // Name matches its subdomains only
	Prefix   netip.Prefix // an address rule (a single address is a /32 or /128)
	Ports    []uint16     // nil with AnyPort
	AnyPort  bool
}

// ParseRule parses one host pattern. Errors name the pattern and what is wrong with it.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	if err := urlError(s); err != nil {
		return r, err
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return r, fmt.Errorf("host pattern %q: unclosed [", s)
		}
		host, port = s[1:end], s[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return r, fmt.Errorf("host pattern %q: want [ADDRESS]:PORT", s)
		}
		port = strings.TrimPrefix(port, ":")
	} else if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
	}
	switch {
	case port == "*":
		r.AnyPort = true
	case port != "":
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return r, fmt.Errorf("host pattern %q: port %q: want 1-65535 or *", s, port)
		}
		r.Ports = []uint16{uint16(n)}
	default:
		r.Ports = defaultPorts[:]
	}
	if p, err := netip.ParsePrefix(host); err == nil {
		r.Prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return r, fmt.Errorf("host pattern %q: an address with a zone", s)
		}
		a = a.Unmap()
		r.Prefix = netip.PrefixFrom(a, a.BitLen())
		return r, nil
	}
	name := lowerASCII(strings.TrimSuffix(host, "."))
	if name == "localhost" {
		// the host's loopback by its name (RFC 6761): the rule is 127.0.0.1's, as a
		// request for localhost is decided (Policy.Host), never the host's lookup of it
		r.Prefix = netip.PrefixFrom(localhostAddr, 32)
		return r, nil
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.Wildcard, name = true, rest
	}
	if !validName(name) || !strings.Contains(name, ".") && r.Wildcard {
		return r, fmt.Errorf("host pattern %q: want a host name (letters, digits, '-', dot-separated), *.DOMAIN, an IP address or prefix, each with an optional :PORT", s)
	}
	r.Name = name
	return r, nil
}

// localhostAddr is what "localhost" is, in a rule and in a request: 127.0.0.1, the
// address the sandbox's own /etc/hosts and DNS stub give it, so that a client's
// connection to localhost:PORT (captured on the sandbox's 127.0.0.1) and the rule that
// allows it are one address.
var localhostAddr = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// LoopbackNote is the note for allow patterns that name a loopback address without a
// port ("127.0.0.1", "localhost"), "" for none: such a rule allows ports 80 and 443,
// the only ports of a loopback address captured without being named, so a client that
// skips the proxy for 127.0.0.1 (NO_PROXY) and connects to another port finds nothing
// listening in the sandbox, which no refusal can report.
func LoopbackNote(allow []string) string {
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil || r.Name != "" || r.AnyPort || !r.Prefix.Addr().IsLoopback() || len(r.Ports) != len(defaultPorts) {
			continue
		}
		return fmt.Sprintf("--allow-host %s names no port: it allows ports 80 and 443 of the host's loopback only; "+
			"for another, name it (--allow-host %s:PORT), which is also captured on the sandbox's own 127.0.0.1:PORT, "+
			"where a client that skips the proxy (NO_PROXY) connects", s, strings.TrimSuffix(s, "/32"))
	}
	return ""
}

// ParseRules parses each pattern of list; field names the list in errors
// ("network.allow").
func ParseRules(field string, list []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(list))
	for i, s := range list {
		r, err := ParseRule(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// CapturePorts are the ports, other than 80 and 443 (always captured), that allow
// patterns for names name explicitly ("api.example:8443"), in order, each once; a
// pattern that does not parse, an address rule (its clients connect to the address,
// not to a DNS answer) and ":*" give none. A client that ignores the proxy variables
// connects to the DNS stub's answer for the name on that port: the sandbox's init
// listens there too.
func CapturePorts(allow []string) []uint16 {
	var out []uint16
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil || r.Name == "" || r.AnyPort {
			continue
		}
		for _, p := range r.Ports {
			if p != 80 && p != 443 && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// validName says whether s is a host name of LDH labels (RFC 1123), 1-253 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// normalName is host as rules compare it: lower case, no trailing dot; ok=false when it
// is not a valid host name.
func normalName(host string) (string, bool) {
	n := lowerASCII(strings.TrimSuffix(host, "."))
	return n, validName(n)
}

func (r *Rule) matchPort(port uint16) bool {
	if r.AnyPort {
		return true
	}
	for _, p := range r.Ports {
		if p == port {
			return true
		}
	}
	return false
}

// matchName says whether the rule names the host name (normalized).
func (r *Rule) matchName(name string) bool {
	if r.Name == "" {
		return false
	}
	if r.Wildcard {
		return strings.HasSuffix(name, "."+r.Name)
	}
	return name == r.Name
}

// matchAddr says whether the rule is an address rule containing a.
func (r *Rule) matchAddr(a netip.Addr) bool {
	return r.Name == "" && r.Prefix.IsValid() && r.Prefix.Contains(a.Unmap())
}
