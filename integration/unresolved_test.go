package integration

import (
	"strings"
	"testing"
)

// Trial finding 6: an allowed host the host cannot resolve was reported as "blocked by
// gosbx policy ... denied by rule no-address; name the address in network.allow".
// Now it is a connection that failed: a 502 and a note naming the lookup error and
// gosbx doctor, no advice to name an address. The name is under .invalid (RFC 6761:
// never resolves), asked of the host's resolver only; nothing is dialled.
func TestUnresolvableAllowedHost(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		const name = "gosbx-trial-unresolvable.invalid"
		r := s.run("--net", "proxy", "--allow-host", name, "--", "curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", "http://"+name+"/")
		for _, want := range []string{"gosbx: note: " + name + ":80 is allowed (rule network.allow " + name + "), but the host could not resolve " + name + ": ",
			"gosbx doctor --allow-host " + name + ":80"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("want %q on stderr\n%v", want, r)
			}
		}
		if r.stdout != "502" || strings.Contains(r.stderr, "blocked by gosbx policy") || strings.Contains(r.stderr, "name the address") {
			t.Errorf("an allowed name the host cannot resolve: want a 502, no policy denial\n%v", r)
		}
	})
}
