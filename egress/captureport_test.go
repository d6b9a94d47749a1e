package egress

import (
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
)

// The ports allow patterns for names give, each once; not 80, 443, ":*" or an address
// pattern's.
func TestCapturePorts(t *testing.T) {
	got := CapturePorts([]string{"a.example:8443", "b.example", "*.c.example:9000", "10.0.0.5:7000", "d.example:*", "e.example:8443", "f.example:80", "[", "g.example:22"})
	if want := []uint16{8443, 9000, 22}; !slices.Equal(got, want) {
		t.Errorf("CapturePorts = %v, want %v", got, want)
	}
}

// A captured port other than 80 and 443: to the address the DNS stub gave a name, any
// protocol is a tunnel to that name and port (a ClientHello for another name refused);
// to another loopback address only TLS with a server name or HTTP with a Host is
// carried, decided on that name, and anything else is refused with rule capture.
func TestProxyCapturePort(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	given := env.p.dnsAddr("up.test") // 127.77.0.1: local on this host too
	lg, err := net.Listen("tcp", fmt.Sprintf("%s:%d", given, env.upPort))
	if err != nil {
		t.Skipf("listen on %s: %v", given, err)
	}
	lo, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen on 127.0.0.2: %v", err)
	}
	// the no-name listener is served as the upstream's port too: its decisions are on it
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lg}})
	other := &Proxy{Policy: env.p.Policy, Lookup: env.p.Lookup, Events: env.p.Events, Denied: env.p.Denied}
	other.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lo}})
	t.Cleanup(other.Close)
	exchange := func(addr string, payload []byte) string {
		c := dial(t, addr)
		defer c.Close()
		c.Write(payload)
		c.(*net.TCPConn).CloseWrite() // the echo server echoes until the end
		got, _ := io.ReadAll(c)
		return string(got)
	}
	if got := exchange(lg.Addr().String(), []byte("ping\n")); got != "echo:ping\n" {
		t.Errorf("raw bytes to the given address: %q", got)
	}
	if got := exchange(lg.Addr().String(), append(clientHello(t, "other.test"), '\n')); got != "" {
		t.Errorf("a ClientHello for another name to up.test's address: carried, %q", got)
	}
	if got := exchange(lo.Addr().String(), []byte("\x00ping\n")); got != "" {
		t.Errorf("raw bytes to a loopback address the stub did not give: carried, %q", got)
	}
	if got := exchange(lo.Addr().String(), []byte("ping\nmore\n")); got != "" {
		t.Errorf("a line that is no request line: carried, %q", got)
	}
	if got := exchange(lo.Addr().String(), []byte("GET /x HTTP/1.1\r\nHost: up.test\r\n\r\n")); !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, "Host: up.test") {
		t.Errorf("HTTP with Host up.test: %q", got)
	}
	if got := exchange(lo.Addr().String(), []byte("GET /x HTTP/1.1\r\nHost: evil.test\r\n\r\n")); !strings.HasPrefix(got, "HTTP/1.1 403") {
		t.Errorf("HTTP with Host evil.test: %q", got)
	}
	env.p.Close()
	other.Close()
	var capture, sni int
	env.mu.Lock()
	for _, m := range env.denied {
		capture += strings.Count(m, "denied by rule capture")
		sni += strings.Count(m, "server name other.test")
	}
	env.mu.Unlock()
	if capture != 2 || sni != 1 {
		t.Errorf("denials: %d by rule capture (want 2), %d by sni (want 1): %q", capture, sni, env.denied)
	}
}

// From an attack review: a captured plain HTTP request is carried only when the server
// can route it by the name decided on: more than one Host field, or an absolute-form
// target naming another host (which the server would route by, RFC 9112 3.2.2), is
// refused (403, rule capture) before anything goes upstream; an absolute-form target
// naming the Host goes upstream in origin form.
func TestCaptureHTTPOneHost(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	lo, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen on 127.0.0.2: %v", err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lo}})
	exchange := func(req string) string {
		c := dial(t, lo.Addr().String())
		defer c.Close()
		c.Write([]byte(req))
		got, _ := io.ReadAll(c)
		return string(got)
	}
	for _, req := range []string{
		"GET /secret HTTP/1.1\r\nHost: evil.test\r\nHost: up.test\r\n\r\n",
		"GET /secret HTTP/1.1\r\nHost: up.test\r\nHost: up.test\r\n\r\n",
		"GET http://evil.test/secret HTTP/1.1\r\nHost: up.test\r\n\r\n",
		"GET http://x@evil.test:80/secret HTTP/1.1\r\nHost: up.test\r\n\r\n",
		"GET https://evil.test/secret HTTP/1.1\r\nHost: up.test\r\n\r\n",
		"GET evil.test:80 HTTP/1.1\r\nHost: up.test\r\n\r\n",
	} {
		if got := exchange(req); !strings.HasPrefix(got, "HTTP/1.1 403") || !strings.Contains(got, "X-Gosbx-Rule: capture") {
			t.Errorf("%q: %q, want 403 by rule capture", req, got)
		}
	}
	got := exchange("GET http://UP.test/x?y HTTP/1.1\r\nHost: up.test\r\n\r\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, "GET /x?y HTTP/1.1\r\nHost: up.test\r\n") {
		t.Errorf("absolute form naming the Host: %q, want carried in origin form", got)
	}
}
