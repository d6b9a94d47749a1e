package egress

// From an attack review (26): header lines a server could parse otherwise than the
// proxy (obs-fold, whitespace before ':', a bare CR, a name that is not a token) are
// refused with 400 before anything goes upstream, on the proxy and on captured ports;
// a chunked body goes upstream as the proxy parsed it.

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
)

// countingUpstream is a server that counts the connections it accepts and answers
// each with what it read, as recorder does.
func countingUpstream(t *testing.T) (*atomic.Int32, uint16) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				got, _ := io.ReadAll(c)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(got), got)
			}()
		}
	}()
	return &n, uint16(l.Addr().(*net.TCPAddr).Port)
}

func TestProxyRefusesAmbiguousFields(t *testing.T) {
	accepted, port := countingUpstream(t)
	env := newTestEnv(t, []string{"up.test:*", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	lo, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen on 127.0.0.2: %v", err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{port: lo}})
	const smuggled = "GET /secret HTTP/1.1\r\nHost: evil.example\r\nX-Exfil: data\r\n\r\n"
	abs := fmt.Sprintf("http://up.test:%d", port)
	heads := []string{
		"X-A: a\r\n Content-Length: 59\r\n",  // obs-fold by SP (the review's repro)
		"X-A: a\r\n\tContent-Length: 59\r\n", // obs-fold by HTAB
		"\t.evil.example\r\n",                // continues the proxy's own Host line
		" Content-Length: 59\r\n",            // a first line led by SP
		"Content-Length : 59\r\n",            // whitespace before ':'
		"Content-Length\t: 59\r\n",
		"X-A: a\rContent-Length: 59\r\n", // a bare CR inside the head
		"X-A: a\r\r\n",
		"X-A\r\n",       // no ':'
		": v\r\n",       // an empty name
		"X\x00A: v\r\n", // a control byte in the name
		"X(A): v\r\n",   // a separator in the name
		"X-A: a\x00b\r\n",
		"X-A: a\x7fb\r\n",
	}
	type target struct{ what, addr, start string }
	targets := []target{
		{"proxy", env.http, "POST " + abs + "/ok HTTP/1.1\r\n"},
		{"capture :80", env.capHTTP, "POST /ok HTTP/1.1\r\nHost: up.test\r\n"},
		{"captured port", lo.Addr().String(), "POST /ok HTTP/1.1\r\nHost: up.test\r\n"},
	}
	for _, tg := range targets {
		for _, h := range heads {
			got := exchangeText(t, tg.addr, tg.start+h+"\r\n"+smuggled)
			if !strings.HasPrefix(got, "HTTP/1.1 400 ") {
				t.Errorf("%s, %q: %q, want a 400", tg.what, h, clipText(got))
			}
		}
		// a folded Host: on a captured port the proxy's name would be one a folding
		// server does not see
		h := "GET /a HTTP/1.1\r\nX: a\r\n Host: up.test\r\n\r\n"
		if tg.what == "proxy" {
			h = "GET " + abs + "/a HTTP/1.1\r\nX: a\r\n Host: up.test\r\n\r\n"
		}
		if got := exchangeText(t, tg.addr, h); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
			t.Errorf("%s, %q: %q, want a 400", tg.what, h, clipText(got))
		}
	}
	for _, line := range []string{
		"GET " + abs + "/a\tb HTTP/1.1", "GET " + abs + "/a HTTP/1.1\r", "G(T " + abs + "/a HTTP/1.1",
		"GET " + abs + "/a HTTP/1.2", "GET " + abs + "/a\x00 HTTP/1.1",
	} {
		if got := exchangeText(t, env.http, line+"\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
			t.Errorf("request line %q: %q, want a 400", line, clipText(got))
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the upstream accepted %d connections, want none", n)
	}
	// the shapes the proxy keeps: a value with HTAB and obs-text, a bare LF as a
	// line's end (sent upstream as CRLF)
	got := exchangeText(t, env.http, "GET "+abs+"/a HTTP/1.1\nX-A: a\tb\xe9\n\n")
	if !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.Contains(got, "\r\nX-A: a\tb\xe9\r\nConnection: close\r\n\r\n") {
		t.Errorf("a valid head with LF line ends: the server got %q", clipText(got))
	}
}

// A chunked body goes upstream re-serialised: canonical chunk lines, CRLF after each
// chunk's data, no extensions, no trailer fields. A chunk line or trailer the proxy
// cannot parse ends what goes upstream there.
func TestProxyChunkedReserialised(t *testing.T) {
	_, port := recorder(t)
	env := newTestEnv(t, []string{"up.test:*", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	const smuggled = "GET /t HTTP/1.1\r\nHost: evil.example\r\n\r\n"
	head := fmt.Sprintf("POST http://up.test:%d/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", port)
	for _, tc := range []struct{ what, body, want string }{
		{"extension, trailer", "5;x=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", "5\r\nhello\r\n0\r\n\r\n"},
		{"bare LF", "1\r\nX\n2f\n" + strings.Repeat("y", 0x2f) + "\r\n0\n\n", "1\r\nX\r\n2f\r\n" + strings.Repeat("y", 0x2f) + "\r\n0\r\n\r\n"},
		{"upper hex, leading zeros", "00A\r\n0123456789\r\n0\r\n\r\n", "a\r\n0123456789\r\n0\r\n\r\n"},
		{"BWS before an extension", "3 ;a=b\r\nabc\r\n0\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n"},
		// refused: what went upstream stops at the last chunk the proxy parsed
		{"space after the size", "3\r\nabc\r\n1 \r\nX\r\n0\r\n\r\n", "3\r\nabc\r\n"},
		{"space before the size", " 3\r\nabc\r\n0\r\n\r\n", ""},
		{"a bare CR in a chunk line", "3;a\rb\r\nabc\r\n0\r\n\r\n", ""},
		{"no CRLF after the data", "3\r\nabcd\r\n0\r\n\r\n", "3\r\nabc"},
		{"a request as a trailer", "0\r\n" + smuggled, ""},
		{"a folded trailer", "0\r\nX: a\r\n b\r\n\r\n", ""},
		{"a size past 15 hex digits", "0000000000000001\r\nX\r\n0\r\n\r\n", ""},
	} {
		got := exchangeText(t, env.http, head+tc.body+smuggled)
		_, sent, _ := strings.Cut(got, "Connection: close\r\n\r\n")
		if sent != tc.want {
			t.Errorf("%s: the server got body %q, want %q", tc.what, clipText(sent), tc.want)
		}
	}
}

// exchangeText sends req to addr, closes the sending side and returns the answer.
func exchangeText(t *testing.T, addr, req string) string {
	c := dial(t, addr)
	defer c.Close()
	io.WriteString(c, req)
	c.(*net.TCPConn).CloseWrite()
	got, _ := io.ReadAll(c)
	return string(got)
}
