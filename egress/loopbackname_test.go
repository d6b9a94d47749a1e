package egress

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// localhost is the host's loopback by name, in a rule and in a request alike: the trial's
// `curl localhost:18080` under --allow-host 127.0.0.1:18080 was told to pass
// --allow-host localhost:18080, which then failed on the name's loopback address. Now
// either flag allows it, the refusal names the one flag that works, and nothing beyond
// the named port (nor ::1) is allowed.
func TestLocalhostIsTheLoopbackAddress(t *testing.T) {
	for _, allow := range []string{"127.0.0.1:18080", "localhost:18080", "LOCALHOST.:18080"} {
		p, err := NewPolicy([]string{allow}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, host := range []string{"localhost", "127.0.0.1", "Localhost."} {
			d := p.Host(host, 18080)
			if !d.Allow || len(d.Addrs) != 1 || d.Addrs[0] != netip.MustParseAddr("127.0.0.1") {
				t.Errorf("--allow-host %s, %s:18080: %+v; want allowed, dialled at 127.0.0.1", allow, host, d)
			}
			if d := p.Host(host, 5432); d.Allow {
				t.Errorf("--allow-host %s allows %s:5432", allow, host)
			}
		}
		if d := p.Host("::1", 18080); d.Allow {
			t.Errorf("--allow-host %s allows [::1]:18080", allow)
		}
	}
	// no rule: the refusal's flag, followed literally, allows the request
	p, _ := NewPolicy(nil, nil)
	d := p.Host("localhost", 18080)
	m := d.Message()
	if d.Allow || !strings.Contains(m, "(or --allow-host 127.0.0.1:18080)") || !strings.Contains(m, "(localhost)") {
		t.Fatalf("localhost:18080 with no rule: %+v\n%s", d, m)
	}
	q, _ := NewPolicy([]string{"127.0.0.1:18080"}, nil)
	if !q.Host("localhost", 18080).Allow {
		t.Errorf("the hint's flag does not allow localhost:18080")
	}
	// a deny rule for the address denies the name
	r, _ := NewPolicy([]string{"localhost:*"}, []string{"127.0.0.1:22"})
	if d := r.Host("localhost", 22); d.Allow || !strings.HasPrefix(d.Rule, "network.deny") {
		t.Errorf("localhost:22 under a deny of 127.0.0.1:22: %+v", d)
	}
}

// A loopback address pattern without a port allows ports 80 and 443 only, and another
// port of it fails in the sandbox where no refusal can be reported: the launch's note
// says so with the flag that works.
func TestLoopbackNote(t *testing.T) {
	for _, c := range []struct {
		allow []string
		want  string
	}{
		{[]string{"pypi.org", "127.0.0.1"}, "--allow-host 127.0.0.1 names no port: it allows ports 80 and 443 of the host's loopback only; for another, name it (--allow-host 127.0.0.1:PORT)"},
		{[]string{"localhost"}, "(--allow-host localhost:PORT)"},
		{[]string{"::1"}, "(--allow-host ::1:PORT)"},
		{[]string{"127.0.0.1:80", "127.0.0.1:*", "10.0.0.5", "pypi.org", "localhost:5432"}, ""},
	} {
		got := LoopbackNote(c.allow)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("LoopbackNote(%q) = %q, want %q", c.allow, got, c.want)
		}
	}
}

// An allowed host that does not answer: the proxy answers 502 with the host, port,
// rule and cause, and the same note goes to the caller's stderr (Denied) and the
// event (for a session's request); the trial saw only curl's "Empty reply from server".
func TestDialFailureSaysWhy(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*", "127.0.0.1:*"}, nil) // its address too
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	for _, req := range []string{
		fmt.Sprintf("GET http://up.test:%d/ HTTP/1.1\r\n\r\n", closed),
		fmt.Sprintf("CONNECT up.test:%d HTTP/1.1\r\n\r\n", closed),
	} {
		c := dial(t, env.http)
		io.WriteString(c, req)
		got, _ := io.ReadAll(c)
		c.Close()
		want := fmt.Sprintf("gosbx proxy: up.test:%d is allowed (rule network.allow up.test:*), but the connection to it failed: dial tcp 127.0.0.1:%d: connect: connection refused: nothing listens on that port of the host", closed, closed)
		if !strings.HasPrefix(string(got), "HTTP/1.1 502") || !strings.Contains(string(got), want) {
			t.Errorf("%q: got %q, want a 502 with %q", req, got, want)
		}
	}
	env.mu.Lock()
	denied, events := append([]string(nil), env.denied...), append([]Event(nil), env.events...)
	env.mu.Unlock()
	if len(denied) != 2 || !strings.HasPrefix(denied[0], "note: up.test:") || !strings.Contains(denied[0], "connection refused") {
		t.Errorf("stderr notes: %q", denied)
	}
	n := 0
	for _, e := range events {
		if e.Net == "allow" && e.Error != "" && strings.HasPrefix(e.Message, "note: ") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("events with the note: %d, want 2: %+v", n, events)
	}
}
