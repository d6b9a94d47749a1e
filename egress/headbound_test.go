package egress

// From an attack review (24): the proxy's reads of a request head are bounded in
// bytes whatever the peer sends.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// A head line without a newline is refused once the head passes maxHeader: at most
// maxHeader and a buffer are read of the 1 MiB sent (it read the whole line before);
// a long line within the bound (a big Cookie) is still read.
func TestReadHeadBounded(t *testing.T) {
	src := &countReader{r: io.MultiReader(strings.NewReader("GET / HTTP/1.1\r\nX-A: "), io.LimitReader(repeat('a'), 1<<20))}
	_, _, err := readHead(bufio.NewReaderSize(src, 4096))
	if !errors.Is(err, errHeadTooLong) {
		t.Errorf("1 MiB header line: err %v, want %v", err, errHeadTooLong)
	}
	if src.n > maxHeader+2*4096 {
		t.Errorf("1 MiB header line: read %d bytes before refusing, want at most %d", src.n, maxHeader+2*4096)
	}
	cookie := "Cookie: " + strings.Repeat("c", 40<<10)
	line, fields, err := readHead(bufio.NewReaderSize(strings.NewReader("GET / HTTP/1.1\r\nHost: a\r\n"+cookie+"\r\n\r\n"), 4096))
	if err != nil || line != "GET / HTTP/1.1" || len(fields) != 2 || fields[1] != cookie {
		t.Errorf("40 KiB Cookie line: %q, %d fields, %v", line, len(fields), err)
	}
	_, _, err = readHead(bufio.NewReaderSize(strings.NewReader("GET / HTTP/1.1\r\n"+strings.Repeat("X-A: b\r\n", maxHeader/8)+"\r\n"), 4096))
	if !errors.Is(err, errHeadTooLong) {
		t.Errorf("many short lines past maxHeader: err %v, want %v", err, errHeadTooLong)
	}
}

type repeat byte

func (r repeat) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte(r)
	}
	return len(b), nil
}

// The HTTP proxy, port 80's capture and a captured port answer a head past maxHeader
// with 431 (the client reads it, then the connection closes), without carrying it.
func TestProxyHeadTooLong(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	lo, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("listen on 127.0.0.2: %v", err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{env.upPort: lo}})
	for what, addr := range map[string]string{"http proxy": env.http, "capture :80": env.capHTTP, "captured port": lo.Addr().String()} {
		c := dial(t, addr)
		go func() {
			io.WriteString(c, "GET http://up.test/ HTTP/1.1\r\nHost: up.test\r\nX-A: ")
			io.Copy(c, io.LimitReader(repeat('a'), 100<<10))
			c.(*net.TCPConn).CloseWrite()
		}()
		got, _ := io.ReadAll(c)
		c.Close()
		if !strings.HasPrefix(string(got), "HTTP/1.1 431 ") || !strings.Contains(string(got), "longer than 65536 bytes") {
			t.Errorf("%s: a 100 KiB header line: %q, want a 431", what, got)
		}
	}
	for _, e := range env.eventsNow() {
		if e.Net == "allow" {
			t.Errorf("a refused head was carried: %+v", e)
		}
	}
}
