package doctor

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gosbx/gosbx/egress"
)

// CheckEgress checks, from the host side only, that each allow pattern of --net proxy
// (--allow-host, network.allow) names a host the proxy would let through and can reach:
// the name resolved by the host, every address checked as the proxy checks it, a TCP
// connection to each of the pattern's ports (default 443 and 80) made and closed. A
// wildcard, an any-port pattern or an address prefix has no single host to try: skipped.
// A denial or an unreachable host is a warning: the default policy does not need it.
func CheckEgress(patterns []string) []Check {
	var out []Check
	pol, err := egress.NewPolicy(patterns, nil)
	if err != nil {
		return []Check{{Name: "egress", Status: Fail, Detail: err.Error(), Fix: "fix the pattern (gosbx exec --help: --allow-host)"}}
	}
	p := &egress.Proxy{Policy: pol, DialTimeout: 3 * time.Second}
	for _, r := range pol.Allow {
		name := "egress " + r.Text
		host := r.Name
		if r.Name == "" && r.Prefix.IsSingleIP() {
			host = r.Prefix.Addr().String()
		}
		if r.Wildcard || r.AnyPort || host == "" {
			out = append(out, Check{Name: name, Status: Skip, Detail: "a wildcard, any port or an address range: no single host to try"})
			continue
		}
		c := Check{Name: name, Status: OK}
		var reached []string
		for _, port := range r.Ports {
			d, err := p.Probe(host, port)
			switch {
			case d.Unresolved != nil:
				c.Status, c.Detail = Warn, fmt.Sprintf("the host cannot resolve %s: %v", host, d.Unresolved)
				c.Fix = "the proxy resolves names with this host's resolver: check its DNS (/etc/resolv.conf) or network; until then the sandbox's connections to it fail (502, with a note)"
			case !d.Allow:
				c.Status, c.Detail = Warn, d.Message()
				c.Fix = "the proxy would refuse it as it resolves now: name the address in network.allow if it is meant, or check the host's resolver"
			case err != nil:
				c.Status, c.Detail = Warn, fmt.Sprintf("%s:%d resolves to %v, but cannot be reached from the host: %v", host, port, d.Addrs, err)
				c.Fix = "the sandbox reaches it through this host: check the host's network, firewall or proxy settings"
			default:
				reached = append(reached, strconv.Itoa(int(port)))
				continue
			}
			break
		}
		if c.Status == OK {
			c.Detail = "resolves and answers on " + portsText(reached) + " from the host"
		}
		out = append(out, c)
	}
	return out
}

// portsText names ports for people: "port 443", "ports 443 and 80".
func portsText(ports []string) string {
	if len(ports) == 1 {
		return "port " + ports[0]
	}
	return "ports " + strings.Join(ports[:len(ports)-1], ", ") + " and " + ports[len(ports)-1]
}
