package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// testProxy serves a Proxy on loopback listeners of this process (in a sandbox they
// are the init's), with names mapped to 127.0.0.1, and an upstream echo server that
// answers "HELLO" then echoes; it returns the proxy's addresses and the events.
type testEnv struct {
	p                            *Proxy
	http, socks, capTLS, capHTTP string
	dns                          string
	upPort                       uint16
	mu                           sync.Mutex
	events                       []Event
	denied                       []string
}

func newTestEnv(t *testing.T, allow, deny []string) *testEnv {
	t.Helper()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				line, _ := br.ReadString('\n')
				if strings.HasPrefix(line, "GET ") {
					var head strings.Builder
					head.WriteString(line)
					for {
						l, err := br.ReadString('\n')
						head.WriteString(l)
						if err != nil || l == "\r\n" {
							break
						}
					}
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", head.Len(), head.String())
					return
				}
				c.Write([]byte("echo:" + line))
				io.Copy(c, br)
			}()
		}
	}()
	env := &testEnv{upPort: uint16(up.Addr().(*net.TCPAddr).Port)}
	allow = append(allow, fmt.Sprintf("127.0.0.1:%d", env.upPort))
	pol, err := NewPolicy(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	env.p = &Proxy{Policy: pol, Hostname: "sandbox",
		Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
			switch host {
			case "up.test", "other.test":
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			case "meta.test":
				return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		Events: func(e Event) { env.mu.Lock(); env.events = append(env.events, e); env.mu.Unlock() },
		Denied: func(m string) { env.mu.Lock(); env.denied = append(env.denied, m); env.mu.Unlock() },
	}
	listen := func() net.Listener {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ls := Listeners{HTTP: listen(), SOCKS: listen(), CaptureTLS: listen(), CaptureHTTP: listen()}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ls.DNS = pc
	env.http, env.socks, env.capTLS, env.capHTTP, env.dns = ls.HTTP.Addr().String(), ls.SOCKS.Addr().String(),
		ls.CaptureTLS.Addr().String(), ls.CaptureHTTP.Addr().String(), pc.LocalAddr().String()
	env.p.Serve(ls)
	t.Cleanup(env.p.Close)
	return env
}

func (e *testEnv) eventsNow() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.events...)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func TestProxyConnect(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*", "meta.test:*"}, nil)
	for _, tc := range []struct {
		target string
		status string
		rule   string
	}{
		{fmt.Sprintf("up.test:%d", env.upPort), "200", ""},
		{fmt.Sprintf("other.test:%d", env.upPort), "403", "network.allow"},
		{fmt.Sprintf("meta.test:%d", env.upPort), "403", "metadata"},
		{"127.0.0.1:22", "403", "loopback"},
		{"[::1]:443", "403", "loopback"},
		{"8.8.8.8:443", "403", "ip-literal"},
	} {
		c := dial(t, env.http)
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nping\n", tc.target, tc.target)
		br := bufio.NewReader(c)
		status, err := br.ReadString('\n')
		if err != nil || !strings.Contains(status, " "+tc.status+" ") {
			t.Errorf("CONNECT %s: %q %v, want %s", tc.target, status, err, tc.status)
			c.Close()
			continue
		}
		if tc.status == "403" {
			rest, _ := io.ReadAll(io.LimitReader(br, 4096))
			if !strings.Contains(string(rest), "X-Gosbx-Rule: "+tc.rule) || !strings.Contains(string(rest), "blocked by gosbx policy") {
				t.Errorf("CONNECT %s: 403 without the rule %q: %q", tc.target, tc.rule, rest)
			}
		}
		c.Close()
	}
	// Bytes both ways after the upgrade (a WebSocket's frames are the same to it): the
	// bytes sent with the CONNECT and after it echoed.
	c := dial(t, env.http)
	fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\nframe-1\n", env.upPort)
	br := bufio.NewReader(c)
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "\r\n" {
			break
		}
	}
	c.Write([]byte("frame-2\n"))
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(br)
	if string(got) != "echo:frame-1\nframe-2\n" {
		t.Errorf("through CONNECT: %q", got)
	}
	c.Close()
	env.p.Close()
	var allow, deny int
	counted := false
	for _, e := range env.eventsNow() {
		switch e.Net {
		case "allow":
			allow++
			counted = counted || e.BytesIn == int64(len("echo:frame-1\nframe-2\n")) && e.BytesOut == int64(len("frame-1\nframe-2\n"))
		case "deny":
			deny++
		}
	}
	if allow != 2 || deny != 5 || !counted {
		t.Errorf("events: %d allow, %d deny: %+v", allow, deny, env.eventsNow())
	}
}

func TestProxyPlainHTTP(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	c := dial(t, env.http)
	fmt.Fprintf(c, "GET http://up.test:%d/x?y HTTP/1.1\r\nHost: evil.test\r\nProxy-Connection: keep-alive\r\nX-A: b\r\n\r\n", env.upPort)
	got, _ := io.ReadAll(c)
	c.Close()
	s := string(got)
	if !strings.HasPrefix(s, "HTTP/1.1 200") || !strings.Contains(s, "GET /x?y HTTP/1.1\r\n") ||
		!strings.Contains(s, fmt.Sprintf("Host: up.test:%d\r\n", env.upPort)) || strings.Contains(s, "evil.test") ||
		strings.Contains(s, "Proxy-Connection") || !strings.Contains(s, "X-A: b") || !strings.Contains(s, "Connection: close") {
		t.Errorf("plain HTTP through the proxy: %q", s)
	}
	c = dial(t, env.http)
	fmt.Fprintf(c, "GET http://evil.test/ HTTP/1.1\r\n\r\n")
	got, _ = io.ReadAll(c)
	if !strings.HasPrefix(string(got), "HTTP/1.1 403") || !strings.Contains(string(got), "blocked by gosbx policy: host evil.test:80 not in network.allow") {
		t.Errorf("denied plain HTTP: %q", got)
	}
}

func socksConnect(t *testing.T, addr string, atyp byte, host []byte, port uint16) byte {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	c.Write([]byte{5, 1, 0})
	var m [2]byte
	if _, err := io.ReadFull(c, m[:]); err != nil || m != [2]byte{5, 0} {
		t.Fatalf("greeting: %v %v", m, err)
	}
	req := []byte{5, 1, 0, atyp}
	if atyp == socksAtypDomain {
		req = append(req, byte(len(host)))
	}
	req = append(append(req, host...), byte(port>>8), byte(port))
	c.Write(req)
	var r [10]byte
	if _, err := io.ReadFull(c, r[:]); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if r[1] == 0 {
		c.Write([]byte("hi\n"))
		c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		if string(got) != "echo:hi\n" {
			t.Errorf("through SOCKS5: %q", got)
		}
	}
	return r[1]
}

func TestProxySOCKS(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	if r := socksConnect(t, env.socks, socksAtypDomain, []byte("up.test"), env.upPort); r != 0 {
		t.Errorf("allowed name: reply %d", r)
	}
	if r := socksConnect(t, env.socks, socksAtypDomain, []byte("evil.test"), 443); r != socksNotAllowed {
		t.Errorf("denied name: reply %d", r)
	}
	if r := socksConnect(t, env.socks, socksAtypIPv4, []byte{169, 254, 169, 254}, 80); r != socksNotAllowed {
		t.Errorf("metadata address: reply %d", r)
	}
	if r := socksConnect(t, env.socks, socksAtypIPv6, netip.MustParseAddr("::1").AsSlice(), 80); r != socksNotAllowed {
		t.Errorf("IPv6 loopback: reply %d", r)
	}
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.denied) != 3 || !strings.Contains(env.denied[0], "evil.test:443 not in network.allow") {
		t.Errorf("denial messages: %q", env.denied)
	}
}

func dnsQuery(t *testing.T, addr, name string, qtype uint16) (rcode int, answers []netip.Addr) {
	t.Helper()
	q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(name, ".") {
		q = append(append(q, byte(len(l))), l...)
	}
	q = append(q, 0, byte(qtype>>8), byte(qtype), 0, 1)
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write(q)
	b := make([]byte, 512)
	n, err := c.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	b = b[:n]
	if b[0] != 0x12 || b[1] != 0x34 || b[2]&0x80 == 0 {
		t.Fatalf("not a response to the query: %x", b)
	}
	an := int(binary.BigEndian.Uint16(b[6:]))
	off := len(q)
	for i := 0; i < an; i++ {
		rd := b[off+10 : off+12]
		l := int(binary.BigEndian.Uint16(rd))
		a, _ := netip.AddrFromSlice(b[off+12 : off+12+l])
		answers = append(answers, a)
		off += 12 + l
	}
	return int(b[3] & 0xf), answers
}

func TestProxyDNS(t *testing.T) {
	env := newTestEnv(t, []string{"up.test", "*.pkg.test"}, []string{"bad.pkg.test:*"})
	rc, a := dnsQuery(t, env.dns, "up.test", 1)
	if rc != 0 || len(a) != 1 || !a[0].IsLoopback() {
		t.Errorf("A up.test: rcode %d %v", rc, a)
	}
	rc2, a2 := dnsQuery(t, env.dns, "UP.test", 1)
	if rc2 != 0 || len(a2) != 1 || a2[0] != a[0] {
		t.Errorf("A UP.test: rcode %d %v, want %v again", rc2, a2, a)
	}
	if rc, a := dnsQuery(t, env.dns, "x.pkg.test", 1); rc != 0 || len(a) != 1 || a[0] == a2[0] {
		t.Errorf("A x.pkg.test: rcode %d %v", rc, a)
	}
	if rc, a := dnsQuery(t, env.dns, "up.test", 28); rc != 0 || len(a) != 0 {
		t.Errorf("AAAA up.test: rcode %d %v, want no data", rc, a)
	}
	for _, n := range []string{"sandbox", "SANDBOX", "localhost"} {
		if rc, a := dnsQuery(t, env.dns, n, 1); rc != 0 || len(a) != 1 || a[0] != netip.MustParseAddr("127.0.0.1") {
			t.Errorf("A %s: rcode %d %v, want 127.0.0.1", n, rc, a)
		}
	}
	for _, n := range []string{"evil.test", "bad.pkg.test", "pkg.test"} {
		if rc, a := dnsQuery(t, env.dns, n, 1); rc != dnsRcodeRefused || len(a) != 0 {
			t.Errorf("A %s: rcode %d %v, want REFUSED", n, rc, a)
		}
	}
}

func TestProxyCaptureTLS(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*", "127.0.0.1:443"}, nil)
	// The proxy reads the ClientHello's server name and decides on it (port 443, the
	// capture listener's): allowed, it dials 127.0.0.1:443, where nothing listens here,
	// so the allowed path ends in an event with the dial's error.
	for _, tc := range []struct {
		name string
		deny string
	}{{"up.test", ""}, {"evil.test", "network.allow"}} {
		c := dial(t, env.capTLS)
		cl := tls.Client(c, &tls.Config{ServerName: tc.name, InsecureSkipVerify: true})
		cl.SetDeadline(time.Now().Add(5 * time.Second))
		err := cl.Handshake()
		c.Close()
		if err == nil {
			t.Errorf("%s: handshake with the echo server succeeded", tc.name)
		}
	}
	env.p.Close()
	ev := env.eventsNow()
	var sawAllow, sawDeny bool
	for _, e := range ev {
		sawAllow = sawAllow || e.Net == "allow" && e.Host == "up.test" && e.Proto == "capture-tls" && e.Error != ""
		sawDeny = sawDeny || e.Net == "deny" && e.Host == "evil.test" && e.Rule == "network.allow"
	}
	if !sawAllow || !sawDeny {
		t.Errorf("events: %+v", ev)
	}
}

func TestProxyCaptureHTTP(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	// the capture listener is port 80's: the decision is on port 80, which the rule's
	// :* allows; upstream is dialled on port 80 of 127.0.0.1, where nothing listens in
	// this test, so the allowed path ends in a dial error event
	c := dial(t, env.capHTTP)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	got, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(got), "HTTP/1.1 403") {
		t.Errorf("captured HTTP to a denied host: %q", got)
	}
}

// A TLS session through a tunnel to an allowed name must name that name: a ClientHello
// for another server (domain fronting through the allowed name's CDN address) closes
// the tunnel with a denial, whether it came with the CONNECT or after the 200.
func TestProxyTunnelSNI(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	hello := func(name string) []byte {
		// a ClientHello as crypto/tls writes it, captured from a pipe
		a, b := net.Pipe()
		go func() {
			tls.Client(a, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
		}()
		b.SetReadDeadline(time.Now().Add(5 * time.Second))
		rec, got, err := readClientHello(b)
		a.Close()
		b.Close()
		if err != nil || got != name {
			t.Fatalf("ClientHello for %s: %q %v", name, got, err)
		}
		return rec
	}
	for _, tc := range []struct {
		name     string
		withHead bool
		sent     bool
	}{{"up.test", false, true}, {"evil.test", false, false}, {"evil.test", true, false}, {"UP.test", true, true}} {
		c := dial(t, env.http)
		head := fmt.Sprintf("CONNECT up.test:%d HTTP/1.1\r\n\r\n", env.upPort)
		if tc.withHead {
			c.Write(append([]byte(head), hello(strings.ToLower(tc.name))...))
		} else {
			c.Write([]byte(head))
		}
		br := bufio.NewReader(c)
		if st, _ := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
			t.Fatalf("CONNECT: %q", st)
		}
		for {
			if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
				break
			}
		}
		if !tc.withHead {
			c.Write(hello(strings.ToLower(tc.name)))
		}
		c.Write([]byte("\n")) // the echo server answers a line
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, 5)
		n, _ := io.ReadFull(br, got)
		if echoed := string(got[:n]) == "echo:"; echoed != tc.sent {
			t.Errorf("SNI %s (with the CONNECT: %v): echoed %v (%q)", tc.name, tc.withHead, echoed, got)
		}
		c.Close()
	}
	env.p.Close()
	deny := 0
	for _, e := range env.eventsNow() {
		if e.Net == "deny" && e.Rule == "sni" && e.Host == "up.test" {
			deny++
		}
	}
	if deny != 2 {
		t.Errorf("%d sni denials: %+v", deny, env.eventsNow())
	}
}

// The host's answer for a name is looked up once for many connections, and checked for
// each.
func TestProxyLookupCache(t *testing.T) {
	calls := 0
	pol, _ := NewPolicy([]string{"a.test", "m.test"}, nil)
	p := &Proxy{Policy: pol, Lookup: func(_ context.Context, host string) ([]netip.Addr, error) {
		calls++
		if host == "m.test" {
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
		}
		return nil, fmt.Errorf("no such host")
	}}
	for i := 0; i < 3; i++ {
		if d := p.decide("m.test", 443); d.Allow || d.Rule != "metadata" {
			t.Errorf("m.test: %+v", d)
		}
		if d := p.decide("a.test", 443); !d.Allow || d.Unresolved == nil || d.Addrs != nil {
			t.Errorf("a.test: %+v; want allowed, unresolved, no address", d)
		}
	}
	if calls != 2 {
		t.Errorf("%d lookups for 6 decisions on 2 names, want 2", calls)
	}
}
