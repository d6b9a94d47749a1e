package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func (e *testEnv) held() (used int, waiting int) {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return e.p.used, e.p.waiting.Len()
}

// openIdle opens n connections to addr that send nothing.
func openIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d to %s: %v", i, addr, err)
		}
		cs = append(cs, c)
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// After a flood of idle connections on every listener (the attack review's F4: 3,500
// of them held the 1,024 slots for 30 s each and another command's request timed out),
// an allowed request is served at once, and the proxy holds no more than MaxConns.
func TestProxyFloodIdle(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	openIdle(t, env.socks, 700)
	openIdle(t, env.capTLS, 700)
	openIdle(t, env.http, 1500)
	for _, addr := range []string{env.http, env.socks} {
		start := time.Now()
		ok := false
		if addr == env.http {
			c := dial(t, env.http)
			c.SetDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprintf(c, "GET http://up.test:%d/ HTTP/1.1\r\n\r\n", env.upPort)
			got, _ := io.ReadAll(c)
			c.Close()
			ok = strings.HasPrefix(string(got), "HTTP/1.1 200")
		} else {
			ok = socksConnect(t, env.socks, socksAtypDomain, []byte("up.test"), env.upPort) == socksOK
		}
		t.Logf("an allowed request on %s after the flood: %v", addr, time.Since(start))
		if !ok || time.Since(start) > 3*time.Second {
			t.Errorf("an allowed request on %s after the flood: ok %v after %v", addr, ok, time.Since(start))
		}
	}
	if used, _ := env.held(); used > MaxConns {
		t.Errorf("%d connections held, more than %d", used, MaxConns)
	}
}

// Connections past their head are never closed for room: a listener holds
// listenerMax of them, and one more waits until one ends.
func TestProxyMaxConnsEstablished(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	tunnel := func() (net.Conn, *bufio.Reader, error) {
		c, err := net.DialTimeout("tcp", env.http, 5*time.Second)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", env.upPort)
		return c, bufio.NewReader(c), nil
	}
	var tunnels []net.Conn
	t.Cleanup(func() {
		for _, c := range tunnels {
			c.Close()
		}
	})
	for i := 0; i < listenerMax; i++ {
		c, br, err := tunnel()
		if err != nil {
			t.Fatal(err)
		}
		tunnels = append(tunnels, c)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if st, err := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
			t.Fatalf("tunnel %d: %q %v", i, st, err)
		}
	}
	if used, waiting := env.held(); used != listenerMax || waiting != 0 {
		t.Fatalf("%d held, %d waiting, want %d, 0", used, waiting, listenerMax)
	}
	extra, br, err := tunnel()
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if st, err := br.ReadString('\n'); err == nil {
		t.Fatalf("served beyond the listener's budget: %q", st)
	}
	for i, c := range tunnels { // none closed for room
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.Write([]byte("x\n"))
		var b [5]byte
		if _, err := io.ReadFull(c, b[:]); err != nil || string(b[:]) != "echo:" {
			t.Fatalf("tunnel %d after the extra connection: %q %v", i, b, err)
		}
	}
	// the other listeners keep their share
	if r := socksConnect(t, env.socks, socksAtypDomain, []byte("up.test"), env.upPort); r != socksOK {
		t.Errorf("SOCKS5 while HTTP's budget is used up: reply %d", r)
	}
	tunnels[0].Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if st, err := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
		t.Fatalf("not served once a slot freed: %q %v", st, err)
	}
}
