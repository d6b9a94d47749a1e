package egress

// From an attack review (24): a plain HTTP request the proxy rewrote (absolute form,
// captured) is the only one the server gets on its connection, whatever the client
// sends after it and whether or not the server honours Connection: close.

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
)

// recorder is an upstream server that reads a connection to its end and then answers
// with what it read, in a 200's body.
func recorder(t *testing.T) (net.Listener, uint16) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				got, _ := io.ReadAll(c)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(got), got)
			}()
		}
	}()
	return l, uint16(l.Addr().(*net.TCPAddr).Port)
}

func TestProxyOneRequestPerConnection(t *testing.T) {
	_, port := recorder(t)
	env := newTestEnv(t, []string{"up.test:*", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	lo, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen on 127.0.0.2: %v", err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{port: lo}})
	const smuggled = "GET /second HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	exchange := func(addr, req string) string {
		c := dial(t, addr)
		defer c.Close()
		io.WriteString(c, req)
		c.(*net.TCPConn).CloseWrite()
		got, _ := io.ReadAll(c)
		return string(got)
	}
	abs := fmt.Sprintf("http://up.test:%d", port)
	big := strings.Repeat("b", 1<<20) // mostly past what the proxy read with the head
	for _, tc := range []struct{ what, addr, req, body string }{
		{"proxy, no body", env.http, "GET " + abs + "/a HTTP/1.1\r\nHost: up.test\r\n\r\n", "\r\n\r\n"},
		{"proxy, Content-Length", env.http, "POST " + abs + "/a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "\r\n\r\nhello"},
		{"proxy, chunked", env.http, "POST " + abs + "/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n0\r\nX-T: 1\r\n\r\n", "\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
		{"proxy, 1 MiB Content-Length", env.http, "POST " + abs + "/a HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + big, "\r\n\r\n" + big},
		{"captured, no body", lo.Addr().String(), "GET /a HTTP/1.1\r\nHost: up.test\r\n\r\n", "\r\n\r\n"},
		{"captured, Content-Length", lo.Addr().String(), "PUT /a HTTP/1.1\r\nHost: up.test\r\nContent-Length: 3\r\n\r\nabc", "\r\n\r\nabc"},
	} {
		got := exchange(tc.addr, tc.req+smuggled)
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.HasSuffix(got, tc.body) || strings.Contains(got, "second") {
			t.Errorf("%s: the server got %q, want the first request only, ending in %q", tc.what, clipText(got), clipText(tc.body))
		}
	}
	for _, req := range []string{
		"POST " + abs + "/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
		"POST " + abs + "/a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
		"POST " + abs + "/a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
	} {
		if got := exchange(env.http, req); !strings.HasPrefix(got, "HTTP/1.1 400 ") {
			t.Errorf("%q: %q, want a 400", req, got)
		}
	}
}

func clipText(s string) string {
	if len(s) > 300 {
		return s[:150] + "…" + s[len(s)-150:]
	}
	return s
}
