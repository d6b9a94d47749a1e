package egress

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
)

// An allowed name the host cannot resolve is a connection that failed (502, a note
// with the lookup error and where to check the host's DNS, an "allow" status line with
// the error), not a denial by the policy that tells the user to name an address (trial
// finding 6); nothing is dialled. Each way in: CONNECT, plain HTTP, SOCKS5.
func TestProxyUnresolvedAllowedName(t *testing.T) {
	env := newTestEnv(t, []string{"gone.test:*"}, nil)
	check := func(how, text string) {
		t.Helper()
		for _, want := range []string{"gone.test:443 is allowed (rule network.allow gone.test:*), but the host could not resolve gone.test: no such host gone.test",
			"gosbx doctor --allow-host gone.test:443"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q lacks %q", how, text, want)
			}
		}
		for _, bad := range []string{"blocked by gosbx policy", "name the address"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s: %q says %q", how, text, bad)
			}
		}
	}

	c := dial(t, env.http)
	fmt.Fprintf(c, "CONNECT gone.test:443 HTTP/1.1\r\nHost: gone.test:443\r\n\r\n")
	got, _ := io.ReadAll(bufio.NewReader(c))
	c.Close()
	if !strings.HasPrefix(string(got), "HTTP/1.1 502") {
		t.Errorf("CONNECT to an unresolvable allowed name: %q; want 502", got)
	}
	check("CONNECT", string(got))

	c = dial(t, env.http)
	fmt.Fprintf(c, "GET http://gone.test:443/ HTTP/1.1\r\n\r\n")
	got, _ = io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(got), "HTTP/1.1 502") {
		t.Errorf("GET to an unresolvable allowed name: %q; want 502", got)
	}
	check("GET", string(got))

	if r := socksConnect(t, env.socks, socksAtypDomain, []byte("gone.test"), 443); r != socksHostUnreach {
		t.Errorf("SOCKS5 to an unresolvable allowed name: reply %d, want host unreachable (%d)", r, socksHostUnreach)
	}

	env.p.Close()
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.denied) != 3 {
		t.Errorf("stderr notes %q; want 3", env.denied)
	}
	for _, m := range env.denied {
		if !strings.HasPrefix(m, "note: ") {
			t.Errorf("stderr line %q: want a note", m)
		}
		check("note", m)
	}
	for _, e := range env.events {
		if e.Net != "allow" || e.Addr != "" || !strings.Contains(e.Error, "no such host") {
			t.Errorf("status line %+v: want allow, no address, the lookup error", e)
		}
	}
	if len(env.events) != 3 {
		t.Errorf("%d status lines, want 3: %+v", len(env.events), env.events)
	}
}
