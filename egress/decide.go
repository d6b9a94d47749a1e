package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Policy is the allow and deny lists of a sandbox's egress. A connection is allowed
// when an allow rule names its host (and port), no deny rule does, and every address
// the host resolves to is public or named by an allow rule. Deny wins.
type Policy struct {
	Allow, Deny []Rule
}

// NewPolicy parses the allow and deny lists (ParseRules): what --allow-host and
// network.allow / network.deny give.
func NewPolicy(allow, deny []string) (*Policy, error) {
	a, err := ParseRules("network.allow", allow)
	if err != nil {
		return nil, err
	}
	d, err := ParseRules("network.deny", deny)
	if err != nil {
		return nil, err
	}
	return &Policy{Allow: a, Deny: d}, nil
}

// Decision is the outcome for one connection: allowed or not, and the rule that
// decided, e.g. "network.allow pypi.org", "network.deny *.evil.example",
// "network.allow" (no allow rule names it), "ip-literal", "loopback", "private",
// "link-local", "metadata".
type Decision struct {
	Allow bool
	Host  string // as asked for (a name or an address literal)
	Port  uint16
	Rule  string
	// Why says what about the request the rule applied to, for the message:
	// "host evil.example:443", "address 10.0.0.5 of host db.example".
	Why string
	// Addrs, when allowed, are the addresses checked, to dial (in the resolver's order).
	Addrs []netip.Addr
	// Unresolved, for a name the policy allows, is the host's lookup error (or "no
	// address"): the decision stays Allow, with no Addrs, so it is never dialled, and
	// the connection is reported as one that failed (a 502 and a note naming the
	// lookup error), not as a denial by the policy, whose fix would not help.
	Unresolved error
}

// Message is the text a denied client sees (HTTP 403 body, gosbx's stderr): what was
// blocked, by which rule, and the fix.
func (d Decision) Message() string {
	if d.Allow {
		return ""
	}
	hp := hostPort(d.Host, d.Port)
	switch d.Rule {
	case "network.allow":
		return fmt.Sprintf("blocked by gosbx policy: host %s not in network.allow; to allow it, pass --allow-host %s or add it to network.allow", hp, hp)
	case "invalid-host":
		return fmt.Sprintf("blocked by gosbx policy: %s is not a host name", d.Host) // quoted (peerText)
	case "capture":
		if d.Host == "(none)" && d.Port != 0 {
			return captureUnnamedMessage(d)
		}
		return fmt.Sprintf("blocked by gosbx policy: %s is denied by rule capture; a client that ignores the proxy variables is carried when it connects to the address gosbx's DNS gave an allowed name, or says the name (TLS server name, HTTP Host); else use the proxy (HTTPS_PROXY=%s, ALL_PROXY=%s, set inside)", d.Why, "http://127.0.0.1:3128", "socks5h://127.0.0.1:1080")
	case "no-address": // no address to name: the host's DNS is what to check
		return fmt.Sprintf("blocked by gosbx policy: %s is denied by rule no-address; check the host's DNS (gosbx doctor --allow-host %s)", d.Why, hp)
	case "sni":
		return fmt.Sprintf("blocked by gosbx policy: %s is denied by rule sni; a TLS tunnel to a name must send that name as its server name (SNI): connect to the server's own name (--allow-host NAME or network.allow if it is not allowed), not through another name's address", d.Why)
	}
	if d.Why == "" {
		d.Why = "host " + hp
	}
	// the exact flag: the address (a literal's, or the one the name resolved to) and port
	addr, lit, of := "ADDRESS", "address literal ", "address "
	if len(d.Why) > len(lit) && d.Why[:len(lit)] == lit {
		addr, _, _ = strings.Cut(d.Why[len(lit):], " ")
	} else if len(d.Why) > len(of) && d.Why[:len(of)] == of && d.Port != 0 {
		a := d.Why[len(of):]
		for i := 0; i < len(a); i++ {
			if a[i] == ' ' {
				a = a[:i]
				break
			}
		}
		addr = hostPort(a, d.Port)
	}
	fix := "name the address in network.allow (or --allow-host " + addr + ") to reach it"
	if d.Rule == "loopback" && d.Port != 0 {
		fix += "; a port of this host is also reached at the sandbox's own 127.0.0.1:" + strconv.Itoa(int(d.Port)) + " with --host-port " + strconv.Itoa(int(d.Port))
	}
	if len(d.Rule) > len("network.deny") && d.Rule[:len("network.deny")] == "network.deny" {
		fix = "remove the rule from network.deny to reach it"
	}
	return fmt.Sprintf("blocked by gosbx policy: %s is denied by rule %s; %s", d.Why, d.Rule, fix)
}

// captureUnnamedMessage is the refusal of a connection to a captured loopback port that
// names no server (TLS to an address literal sends no server name; another protocol
// names none). Its fixes are the ones that work for the client that made it: that
// client skipped the proxy, most often because NO_PROXY (set inside: localhost,
// 127.0.0.1, ::1) names the address, so "use the proxy" alone is not actionable (trial
// 2026-12-02 T1): the name localhost (TLS then sends it; a rule for 127.0.0.1:PORT
// allows it), --host-port PORT (any protocol, no proxy decision), or the proxy with
// NO_PROXY emptied for the client.
func captureUnnamedMessage(d Decision) string {
	port := strconv.Itoa(int(d.Port))
	return "blocked by gosbx policy: " + d.Why + " is denied by rule capture; a connection that skips the proxy must name its server " +
		"(TLS server name, HTTP Host), and TLS to an address literal (https://127.0.0.1:" + port + "/) names none: " +
		"for a server of this host on port " + port + " (allowed by --allow-host 127.0.0.1:" + port + " or localhost:" + port + "), " +
		"connect by the name localhost (https://localhost:" + port + "/), or pass --host-port " + port +
		" (any protocol, without the proxy's decision), or send the client through the proxy: NO_PROXY=localhost,127.0.0.1,::1 " +
		"(set inside) makes it skip the proxy for these addresses (curl --noproxy '' …, or NO_PROXY= for the command)"
}

// peerText is what a peer sent that is not a valid host name, as messages and status
// lines may show it: Go-quoted, ASCII only (strconv.QuoteToASCII: no newline, no
// terminal escape, no bidirectional control), at most maxPeerText bytes of it. Raw peer
// bytes never reach a caller's terminal or a status line.
func peerText(s string) string {
	if len(s) > maxPeerText {
		return strconv.QuoteToASCII(s[:maxPeerText]) + "..."
	}
	return strconv.QuoteToASCII(s)
}

const maxPeerText = 255

// peerName is a name a peer sent (a TLS server name, an HTTP Host) as messages show
// it: the normalised name when it is a valid host name, else peerText.
func peerName(s string) string {
	if n, ok := normalName(s); ok {
		return n
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.String()
	}
	return peerText(s)
}

func hostPort(host string, port uint16) string {
	if port == 0 { // a DNS question
		return host
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() && !a.Is4In6() {
		return "[" + host + "]:" + strconv.Itoa(int(port))
	}
	return host + ":" + strconv.Itoa(int(port))
}

// Host decides on a host (a name or an address literal) and port before any lookup.
// An allowed name still needs Resolved on its addresses; an allowed address literal is
// done (its Addrs set).
func (p *Policy) Host(host string, port uint16) Decision {
	d := Decision{Host: host, Port: port}
	if n, _ := normalName(host); n == "localhost" {
		// decided as the address it names (localhostAddr), which the proxy dials:
		// a rule for 127.0.0.1 or for localhost allows it, and the refusal's fix names
		// the one flag that does
		d = p.Host(localhostAddr.String(), port)
		d.Host = n
		if !d.Allow && d.Why != "" {
			d.Why += " (localhost)"
		}
		return d
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			d.Rule, d.Host = "invalid-host", peerText(host)
			return d
		}
		a = a.Unmap()
		if rule, via := p.deniedAddr(a, port); rule != "" {
			d.Rule, d.Why = rule, "address literal "+hostPort(via.String(), port)
			if via != a {
				d.Why += " (reached through " + a.String() + ")"
			} else if strings.HasPrefix(rule, "network.deny ") {
				d.Why = ""
			}
			return d
		}
		for i := range p.Allow {
			if r := &p.Allow[i]; r.matchAddr(a) && r.matchPort(port) {
				d.Allow, d.Rule, d.Addrs = true, "network.allow "+r.Text, []netip.Addr{a}
				return d
			}
		}
		// An address no rule names: denied as a literal, whatever its class, so that a
		// client cannot step around the names the policy allows.
		d.Rule = "ip-literal"
		if c := addrClass(a); c != "" {
			d.Rule = c
		}
		d.Why = "address literal " + hostPort(a.String(), port)
		return d
	}
	name, ok := normalName(host)
	if !ok {
		d.Rule, d.Host = "invalid-host", peerText(host)
		return d
	}
	d.Host = name
	for i := range p.Deny {
		if r := &p.Deny[i]; r.matchName(name) && r.matchPort(port) {
			d.Rule = "network.deny " + r.Text
			return d
		}
	}
	for i := range p.Allow {
		if r := &p.Allow[i]; r.matchName(name) && r.matchPort(port) {
			d.Allow, d.Rule = true, "network.allow "+r.Text
			return d
		}
	}
	d.Rule = "network.allow"
	return d
}

// Resolved checks the addresses an allowed name resolved to (d from Host): every one
// must be public or named by an allow rule, and none named by a deny rule, else the
// whole name is denied (a name that resolves to a public and a private address is a
// rebinding attempt as likely as a mistake). An empty list is denied ("no-address").
func (p *Policy) Resolved(d Decision, addrs []netip.Addr) Decision {
	if !d.Allow || d.Addrs != nil {
		return d
	}
	if len(addrs) == 0 {
		d.Allow, d.Rule, d.Why = false, "no-address", "host "+hostPort(d.Host, d.Port)+" (it resolves to no address)"
		return d
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		a = a.Unmap()
		if rule, via := p.deniedAddr(a, d.Port); rule != "" {
			d.Allow, d.Rule, d.Why = false, rule, "address "+via.String()+" of host "+hostPort(d.Host, d.Port)
			if via != a {
				d.Why = "address " + via.String() + " (reached through " + a.String() + ") of host " + hostPort(d.Host, d.Port)
			}
			return d
		}
		if c := addrClass(a); c != "" && !p.namesAddr(a, d.Port) {
			d.Allow, d.Rule, d.Why = false, c, "address "+a.String()+" of host "+hostPort(d.Host, d.Port)
			return d
		}
		out = append(out, a)
	}
	d.Addrs = out
	return d
}

// deniedAddr is the rule that refuses address a on port before any allow rule is
// consulted, "" for none: a deny rule naming a, or the address a dial of a reaches
// (dialsTo: the IPv4 address an IPv6 one carries, loopback for 0.0.0.0 and ::), or that
// address's class (addrClass) when no allow rule names it itself; via is the address
// the rule refused (a, or the one reached), for the message and its fix. A translated
// form must not reach what the IPv4 form may not: an allow rule for IPv6 space
// ("[::/0]:*") names 64:ff9b::a9fe:a9fe, which a NAT64 gateway carries to
// 169.254.169.254.
func (p *Policy) deniedAddr(a netip.Addr, port uint16) (rule string, via netip.Addr) {
	e, carries := dialsTo(a)
	for i := range p.Deny {
		if r := &p.Deny[i]; r.matchPort(port) && r.matchAddr(a) {
			return "network.deny " + r.Text, a
		}
	}
	for i := range p.Deny {
		if r := &p.Deny[i]; carries && r.matchPort(port) && r.matchAddr(e) {
			return "network.deny " + r.Text, e
		}
	}
	// the reached address's class matters once a rule names a: otherwise a's own class
	// (reserved, unspecified) refuses it, and names it in the message
	if carries && (addrClass(a) == "" || p.namesAddr(a, port)) {
		if c := addrClass(e); c != "" && !p.namesAddr(e, port) {
			return c, e
		}
	}
	return "", a
}

// dialsTo is the address a dial of a reaches other than a itself: the host's loopback
// for the unspecified address (connect(2) to 0.0.0.0 or :: reaches the host's own
// sockets: a rule 0.0.0.0/0 with network.deny 127.0.0.0/8 reached 127.0.0.1 so), or
// the IPv4 address a carries (embedded4).
func dialsTo(a netip.Addr) (netip.Addr, bool) {
	switch {
	case a == netip.IPv4Unspecified():
		return localhostAddr, true
	case a == netip.IPv6Unspecified():
		return netip.IPv6Loopback(), true
	}
	return embedded4(a)
}

// embedded4 is the IPv4 address an IPv6 address carries to a translator or a tunnel
// that may deliver it there: NAT64 (64:ff9b::/96, RFC 6052; the local-use
// 64:ff9b:1::/48 of RFC 8215 read in its /96 form), IPv4-compatible (::/96, but :: and
// ::1), IPv4-translated (::ffff:0:0/96, RFC 2765), 6to4 (2002::/16, RFC 3056) and Teredo's client (2001::/32, RFC 4380, the
// last 32 bits inverted). ok=false for any other address, IPv4 included.
func embedded4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() || a.Is4In6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b && b[4] == 0 && (b[5] == 0 || b[5] == 1):
		return last, true
	case b == [16]byte{} || b == [16]byte{15: 1}:
		return netip.Addr{}, false
	case [12]byte(b[:12]) == [12]byte{}, [12]byte(b[:12]) == [12]byte{8: 0xff, 9: 0xff}:
		return last, true
	case b[0] == 0x20 && b[1] == 0x02:
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	case b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0:
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), true
	}
	return netip.Addr{}, false
}

func (p *Policy) namesAddr(a netip.Addr, port uint16) bool {
	for i := range p.Allow {
		if r := &p.Allow[i]; r.matchAddr(a) && r.matchPort(port) {
			return true
		}
	}
	return false
}

// AllowsName says whether some allow rule, on any port, names host and no deny rule
// with any port does: the DNS stub's question (a lookup has no port).
func (p *Policy) AllowsName(host string) bool {
	name, ok := normalName(host)
	if !ok {
		return false
	}
	for i := range p.Deny {
		if r := &p.Deny[i]; r.matchName(name) && r.AnyPort {
			return false
		}
	}
	for i := range p.Allow {
		if p.Allow[i].matchName(name) {
			return true
		}
	}
	return false
}

// addrClass names the class of an address denied unless a rule names it: "metadata"
// (cloud instance metadata: 169.254.169.254, 169.254.170.2, 100.100.100.200,
// fd00:ec2::254), "loopback", "link-local", "private" (RFC 1918, RFC 6598 shared
// space, unique-local fc00::/7), "unspecified", "multicast", "reserved" (0/8, 240/4,
// broadcast, the documentation and benchmarking ranges, NAT64 and 6to4 embeddings of an
// IPv4 address, deprecated site-local fec0::/10); "" for a public unicast address.
// Built per call, not at package init: the proxy is not on --net none's start path.
func addrClass(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		b := a.As4()
		switch {
		case a == netip.AddrFrom4([4]byte{169, 254, 169, 254}), a == netip.AddrFrom4([4]byte{169, 254, 170, 2}),
			a == netip.AddrFrom4([4]byte{100, 100, 100, 200}):
			return "metadata"
		case a.IsLoopback():
			return "loopback"
		case a.IsLinkLocalUnicast():
			return "link-local"
		case a.IsPrivate(), b[0] == 100 && b[1]&0xc0 == 64:
			return "private"
		case a.IsUnspecified():
			return "unspecified"
		case a.IsMulticast():
			return "multicast"
		case b[0] == 0, b[0] >= 240, b[0] == 192 && b[1] == 0 && (b[2] == 0 || b[2] == 2),
			b[0] == 198 && (b[1] == 18 || b[1] == 19 || b[1] == 51 && b[2] == 100), b[0] == 203 && b[1] == 0 && b[2] == 113:
			return "reserved"
		}
		return ""
	}
	b := a.As16()
	switch {
	case a == netip.AddrFrom16([16]byte{0xfd, 0, 0x0e, 0xc2, 14: 0x02, 15: 0x54}):
		return "metadata"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsMulticast():
		return "multicast"
	case b[0] == 0 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b, // 64:ff9b::/96 and /48 (NAT64)
		b[0] == 0x20 && b[1] == 0x02,                                 // 2002::/16 (6to4)
		b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8, // documentation
		b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0,       // Teredo
		b[0] == 0xfe && b[1]&0xc0 == 0xc0,                            // site-local
		b[0] == 0 && b[1] == 0:                                       // ::/16, IPv4-compatible and other reserved
		return "reserved"
	}
	return ""
}
