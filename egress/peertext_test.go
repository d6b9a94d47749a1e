package egress

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// junkHello is a ClientHello whose server name is junk, bytes no valid name holds.
func junkHello(t *testing.T, junk string) []byte {
	t.Helper()
	tmpl := strings.Repeat("q", len(junk))
	rec := clientHello(t, tmpl)
	if bytes.Count(rec, []byte(tmpl)) != 1 {
		t.Fatalf("the name's bytes are not once in the ClientHello")
	}
	return bytes.Replace(rec, []byte(tmpl), []byte(junk), 1)
}

// printableASCII fails for a byte of s that is a control byte or not ASCII.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// From an attack review: the bytes a peer sends as a name (a TLS server name, an HTTP
// Host) never reach a message or a status line raw: a name with a newline and a
// terminal escape is denied, and every denial's message and every event's host is
// printable ASCII, the name quoted. Through CONNECT, a captured port to a stub's
// address and to another loopback address, ports 443 and 80 to a stub's address, and
// an HTTP Host to another loopback address.
func TestPeerBytesQuoted(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	given := env.p.dnsAddr("up.test")
	listen := func(addr string) net.Listener {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("listen on %s: %v", addr, err)
		}
		return l
	}
	lg, lt, lh := listen(fmt.Sprintf("%s:%d", given, env.upPort)), listen(given.String()+":0"), listen(given.String()+":0")
	lo := listen("127.0.0.2:0")
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lg}, CaptureTLS: lt, CaptureHTTP: lh})
	other := &Proxy{Policy: env.p.Policy, Lookup: env.p.Lookup, Events: env.p.Events, Denied: env.p.Denied}
	other.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lo}})
	t.Cleanup(other.Close)
	junk := "x\ngosbx: FORGED LINE \x1b[31m RED \xe2\x80\xae"
	hello := junkHello(t, junk)
	send := func(what, addr string, payload []byte) []byte {
		c := dial(t, addr)
		defer c.Close()
		c.Write(payload)
		got, _ := io.ReadAll(c)
		if bytes.Contains(got, []byte("echo:")) {
			t.Errorf("%s: carried: %q", what, got)
		}
		return got
	}
	send("CONNECT", env.http, append(fmt.Appendf(nil, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", env.upPort), hello...))
	send("captured port, stub's address", lg.Addr().String(), hello)
	send("port 443, stub's address", lt.Addr().String(), hello)
	send("captured port, other address", lo.Addr().String(), hello)
	// an HTTP field value with control bytes is a 400 before any decision (review 26);
	// one with bytes past ASCII (obs-text) is a name, denied and quoted
	for _, host := range []string{"up.test\x1b[31m\x07", "up.test\xe2\x80\xae RED"} {
		hostJunk := []byte("GET / HTTP/1.1\r\nHost: " + host + "\r\n\r\n")
		for _, tc := range []struct{ what, addr string }{{"port 80, stub's address", lh.Addr().String()}, {"HTTP Host, other address", lo.Addr().String()}} {
			got := send(tc.what, tc.addr, hostJunk)
			if host[7] == '\x1b' && !bytes.HasPrefix(got, []byte("HTTP/1.1 400 ")) {
				t.Errorf("%s, Host %q: %q, want a 400", tc.what, host, got)
			}
		}
	}
	env.p.Close()
	other.Close()
	env.mu.Lock()
	defer env.mu.Unlock()
	if len(env.denied) != 6 {
		t.Errorf("%d denials, want 6: %q", len(env.denied), env.denied)
	}
	for _, m := range env.denied {
		if !printableASCII(m) || !strings.Contains(m, `\n`) && !strings.Contains(m, `\u202e`) {
			t.Errorf("denial message with raw bytes, or without the name quoted: %q", m)
		}
	}
	for _, e := range env.events {
		if !printableASCII(e.Host) || !printableASCII(e.Message) {
			t.Errorf("event with raw peer bytes: %+v", e)
		}
	}
}
