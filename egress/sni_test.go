package egress

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// clientHello is a ClientHello as crypto/tls writes it for name ("" sends no
// server_name), captured from a pipe: one TLS record.
func clientHello(t *testing.T, name string) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		tls.Client(a, &tls.Config{ServerName: name, InsecureSkipVerify: true}).Handshake()
	}()
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	rec, got, err := readClientHello(b)
	a.Close()
	b.Close()
	if err != nil || got != name {
		t.Fatalf("ClientHello for %q: %q %v", name, got, err)
	}
	return rec
}

// splitRecords cuts a one-record handshake into records whose fragments end at cuts
// (offsets into the record's body): legal TLS (RFC 8446 5.1).
func splitRecords(rec []byte, cuts ...int) []byte {
	body := rec[5:]
	var out []byte
	prev := 0
	for _, c := range append(cuts, len(body)) {
		frag := body[prev:c]
		out = append(out, 22, rec[1], rec[2], byte(len(frag)>>8), byte(len(frag)))
		out = append(out, frag...)
		prev = c
	}
	return out
}

// throughConnect opens a CONNECT tunnel to up.test's echo server, sends payload and a
// line, and says whether the echo server answered (the tunnel carried it).
func throughConnect(t *testing.T, env *testEnv, payload []byte) bool {
	t.Helper()
	c := dial(t, env.http)
	defer c.Close()
	fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", env.upPort)
	br := bufio.NewReader(c)
	if st, _ := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
		t.Fatalf("CONNECT: %q", st)
	}
	for {
		if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
			break
		}
	}
	c.Write(payload)
	c.Write([]byte("\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 5)
	n, _ := io.ReadFull(br, got)
	return string(got[:n]) == "echo:"
}

func (e *testEnv) sniDenials() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, m := range e.denied {
		if strings.Contains(m, "rule sni") {
			out = append(out, m)
		}
	}
	return out
}

// A ClientHello split across TLS records is reassembled and checked (the attack
// review's F2: a split one passed unchecked), one without a server name or one that
// cannot be read is refused, and bytes that are not TLS pass.
func TestProxyTunnelSNISplit(t *testing.T) {
	env := newTestEnv(t, []string{"up.test:*"}, nil)
	evil, up, none := clientHello(t, "evil.test"), clientHello(t, "up.test"), clientHello(t, "")
	for _, tc := range []struct {
		what    string
		payload []byte
		sent    bool
	}{
		{"split, another name", splitRecords(evil, 40), false},
		{"split in three, another name", splitRecords(evil, 2, 100), false},
		{"split, the tunnel's name", splitRecords(up, 40), true},
		{"split in three, the tunnel's name", splitRecords(up, 2, 100), true},
		{"no server name", none, false},
		{"no server name, split", splitRecords(none, 40), false},
		{"a handshake record that is no ClientHello", []byte{22, 3, 1, 0, 4, 2, 0, 0, 0}, false},
		{"a handshake record, then an alert", append(splitRecords(up, 40)[:45], 21, 3, 3, 0, 2, 2, 40), false},
		{"an empty handshake record", []byte{22, 3, 1, 0, 0}, false},
		{"the tunnel's name in 17 records", splitRecords(up, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16), false},
		{"not TLS (ssh)", []byte("SSH-2.0-OpenSSH_9.6"), true},
	} {
		if got := throughConnect(t, env, tc.payload); got != tc.sent {
			t.Errorf("%s: carried %v, want %v", tc.what, got, tc.sent)
		}
	}
	// SOCKS5 tunnels are checked the same way
	c := dial(t, env.socks)
	c.Write([]byte{5, 1, 0})
	var r [10]byte
	io.ReadFull(c, r[:2])
	c.Write(append([]byte{5, 1, 0, socksAtypDomain, 7}, append([]byte("up.test"), byte(env.upPort>>8), byte(env.upPort))...))
	if _, err := io.ReadFull(c, r[:]); err != nil || r[1] != socksOK {
		t.Fatalf("SOCKS5 CONNECT: %v %v", r, err)
	}
	c.Write(append(splitRecords(evil, 40), '\n'))
	if got, _ := io.ReadAll(c); len(got) != 0 {
		t.Errorf("SOCKS5, split ClientHello for another name: carried, %d bytes back", len(got))
	}
	c.Close()
	env.p.Close()
	msgs := env.sniDenials()
	if len(msgs) != 9 {
		t.Errorf("%d sni denials, want 9: %q", len(msgs), msgs)
	}
	for _, m := range msgs {
		if strings.Contains(m, "name the address") || !strings.Contains(m, "server name") {
			t.Errorf("sni denial's fix: %q", m)
		}
	}
}

// A real TLS client (crypto/tls, through net/http's CONNECT) reaches a TLS server
// through the tunnel.
func TestProxyTunnelTLSClient(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over TLS to %s", r.TLS.ServerName)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	env := newTestEnv(t, []string{"up.test:*", "127.0.0.1:" + port}, nil)
	proxy, _ := url.Parse("http://" + env.http)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := cl.Get("https://up.test:" + port + "/")
	if err != nil {
		t.Fatalf("GET through the tunnel: %v (denied: %q)", err, env.sniDenials())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello over TLS to up.test" {
		t.Errorf("through the tunnel: %q", body)
	}
}
