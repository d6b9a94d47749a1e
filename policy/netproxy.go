package policy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/nsinit/config"
)

// egressConfig is the config's egress for network mode proxy, nil otherwise.
func egressConfig(n Network) *config.Egress {
	if n.Mode != NetProxy {
		return nil
	}
	return &config.Egress{Allow: n.Allow, Deny: n.Deny, CapturePorts: capturePorts(n)}
}

// capturePorts are the ports the allow rules for names give (egress.CapturePorts),
// then those of allow rules for loopback addresses ("127.0.0.1:18080"), but for the
// proxy's own, the host ports and the published ports (whose listeners are the
// sandbox's), at most config.MaxCapturePorts: a client that ignores the proxy
// variables and connects to a name's DNS answer on such a port is captured too, and a
// client that obeys them skips the proxy for 127.0.0.1 (NO_PROXY) and connects to the
// sandbox's own loopback: captured, its HTTP Host or TLS server name names the host's
// address the rule allows, and it reaches the host's port (without the capture it
// found nothing listening, and no gosbx line said why).
func capturePorts(n Network) []uint16 {
	var out []uint16
	for _, p := range append(egress.CapturePorts(n.Allow), loopbackPorts(n.Allow)...) {
		if len(out) == config.MaxCapturePorts {
			break
		}
		if slices.Contains([]uint16{config.EgressDNSPort, config.EgressHTTPPort, config.EgressSOCKSPort}, p) ||
			slices.Contains(n.HostPorts, p) || publishes(n.Publish, p) {
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// loopbackPorts are the ports, other than 80 and 443 (always captured), that allow
// rules for loopback addresses name explicitly, in order.
func loopbackPorts(allow []string) []uint16 {
	var out []uint16
	for _, s := range allow {
		r, err := egress.ParseRule(s)
		if err != nil || r.Name != "" || r.AnyPort || !r.Prefix.Addr().IsLoopback() {
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

func publishes(list []string, port uint16) bool {
	pubs, err := ParsePublish(list)
	if err != nil {
		return false
	}
	for _, p := range pubs {
		if p.Port == port {
			return true
		}
	}
	return false
}

// The proxies inside (config.EgressHTTPPort, config.EgressSOCKSPort; a test keeps
// them equal): constants, so that no start of gosbx pays for building them.
const (
	httpProxy  = "http://127.0.0.1:3128"
	socksProxy = "socks5h://127.0.0.1:1080"
	noProxy    = "localhost,127.0.0.1,::1"
)

// proxyEnv is the environment of network mode proxy, before the policy's and the
// flags' own variables: the proxy variables in both cases (curl reads only lower-case
// http_proxy; Go, Python, pip, git (libcurl) and Node 24's NODE_USE_ENV_PROXY read
// them), ALL_PROXY as SOCKS5 with names resolved by the proxy (socks5h), and npm's own
// settings (npm_config_*, which npm reads before the proxy variables). Go's module
// proxy, pip's index and git over http(s) need nothing more: they honour HTTPS_PROXY.
var proxyEnv = []string{
	"HTTP_PROXY=" + httpProxy, "http_proxy=" + httpProxy,
	"HTTPS_PROXY=" + httpProxy, "https_proxy=" + httpProxy,
	"ALL_PROXY=" + socksProxy, "all_proxy=" + socksProxy,
	"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
	"NODE_USE_ENV_PROXY=1",
	"npm_config_proxy=" + httpProxy, "npm_config_https_proxy=" + httpProxy,
}

// ParsePublish parses port forwards "[HOSTIP:]HOSTPORT:PORT" (an IPv6 HOSTIP in
// brackets); the host side is 127.0.0.1 unless HOSTIP is given.
func ParsePublish(list []string) ([]config.Publish, error) {
	var out []config.Publish
	for _, s := range list {
		hostIP, rest := "127.0.0.1", s
		if i := strings.LastIndex(s, ":"); i >= 0 {
			if j := strings.LastIndex(s[:i], ":"); j >= 0 {
				hostIP, rest = strings.Trim(s[:j], "[]"), s[j+1:]
			}
		}
		hp, p, ok := strings.Cut(rest, ":")
		a, err := netip.ParseAddr(hostIP)
		hport, err1 := strconv.ParseUint(hp, 10, 16)
		port, err2 := strconv.ParseUint(p, 10, 16)
		if !ok || err != nil || a.Zone() != "" || err1 != nil || err2 != nil || hport == 0 || port == 0 {
			return nil, fmt.Errorf("%q: want [HOSTIP:]HOSTPORT:PORT, ports 1-65535", s)
		}
		out = append(out, config.Publish{HostIP: a.String(), HostPort: uint16(hport), Port: uint16(port)})
	}
	return out, nil
}
