package egress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// helloRetryRecord is a TLS 1.3 HelloRetryRequest as a server sends it: a ServerHello
// record whose random is helloRetryRandom (RFC 8446 4.1.3), TLS_AES_128_GCM_SHA256.
func helloRetryRecord() []byte {
	body := append([]byte{3, 3}, helloRetryRandom[:]...)
	body = append(body, 0, 0x13, 0x01, 0, 0, 0) // session id, cipher suite, compression, no extensions
	msg := append([]byte{2, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{22, 3, 3, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

// hrrServer answers every ClientHello with a HelloRetryRequest and then reports the
// server name of the second ClientHello it reads ("second:NAME"), passing any
// change_cipher_spec record before it; it returns its port.
func hrrServer(t *testing.T) uint16 {
	t.Helper()
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
				c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				if _, _, err := readClientHello(br); err != nil {
					return
				}
				c.Write(helloRetryRecord())
				if b, err := br.Peek(1); err == nil && b[0] == 20 {
					br.Discard(6)
				}
				_, name, err := readClientHello(br)
				if err != nil {
					fmt.Fprintf(c, "second-error:%v", err)
					return
				}
				fmt.Fprintf(c, "second:%s", name)
			}()
		}
	}()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// After a HelloRetryRequest the client's second ClientHello is checked against the
// tunnel's name as its first was (the session note's "HRR" gap): another name, one
// split across records, one after a change_cipher_spec record, one with no name, or
// something else than a ClientHello closes the tunnel (rule sni) before the server
// reads it; the tunnel's own name is carried. The same holds for a captured TLS
// connection, whose name came from its first ClientHello.
func TestProxyHelloRetrySNI(t *testing.T) {
	port := hrrServer(t)
	env := newTestEnv(t, []string{"up.test:*", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	capL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{port: capL}})
	up, evil, none := clientHello(t, "up.test"), clientHello(t, "evil.test"), clientHello(t, "")
	ccs := []byte{20, 3, 3, 0, 1, 1}
	tunnel := func(capture bool) (net.Conn, *bufio.Reader) {
		if capture {
			c := dial(t, capL.Addr().String())
			return c, bufio.NewReader(c)
		}
		c := dial(t, env.http)
		fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", port)
		br := bufio.NewReader(c)
		if st, _ := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
			t.Fatalf("CONNECT: %q", st)
		}
		for {
			if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
				break
			}
		}
		return c, br
	}
	denials := 0
	for _, capture := range []bool{false, true} {
		for _, tc := range []struct {
			what   string
			second []byte
			want   string // what the server says, "" when the tunnel is closed first
		}{
			{"the tunnel's name", up, "second:up.test"},
			{"the tunnel's name after change_cipher_spec", append(ccs, up...), "second:up.test"},
			{"another name", evil, ""},
			{"another name after change_cipher_spec", append(ccs, evil...), ""},
			{"another name, split", splitRecords(evil, 40), ""},
			{"no server name", none, ""},
			{"an application data record", []byte{23, 3, 3, 0, 1, 0}, ""},
		} {
			c, br := tunnel(capture)
			c.Write(up)
			hrr := make([]byte, len(helloRetryRecord()))
			if _, err := io.ReadFull(br, hrr); err != nil || !bytes.Equal(hrr, helloRetryRecord()) {
				t.Fatalf("%s (capture %v): the HelloRetryRequest: %x %v", tc.what, capture, hrr, err)
			}
			c.Write(tc.second)
			got, _ := io.ReadAll(br)
			c.Close()
			if string(got) != tc.want {
				t.Errorf("%s (capture %v): the server said %q, want %q", tc.what, capture, got, tc.want)
			}
			if tc.want == "" {
				denials++
			}
		}
	}
	env.p.Close()
	msgs := env.sniDenials()
	if len(msgs) != denials {
		t.Errorf("%d sni denials, want %d: %q", len(msgs), denials, msgs)
	}
	for _, m := range msgs {
		if !strings.Contains(m, "HelloRetryRequest") {
			t.Errorf("denial does not name the retry: %q", m)
		}
	}
}

// From an attack review: a second ClientHello sent in the same write as the first (and,
// through the proxy, as the CONNECT head) is held until the server's first message was
// read, and checked as one sent after the HelloRetryRequest: another name closes the
// tunnel (rule sni) before the server reads it.
func TestProxyHelloRetryPipelined(t *testing.T) {
	port := hrrServer(t)
	env := newTestEnv(t, []string{"up.test:*", fmt.Sprintf("127.0.0.1:%d", port)}, nil)
	capL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	env.p.Serve(Listeners{Capture: map[uint16]net.Listener{port: capL}})
	up, evil := clientHello(t, "up.test"), clientHello(t, "evil.test")
	denials := 0
	for _, capture := range []bool{false, true} {
		for _, tc := range []struct {
			what   string
			second []byte
			want   string
		}{
			{"the tunnel's name", up, "second:up.test"},
			{"another name", evil, ""},
		} {
			var c net.Conn
			var buf []byte
			if capture {
				c = dial(t, capL.Addr().String())
			} else {
				c = dial(t, env.http)
				buf = fmt.Appendf(nil, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", port)
			}
			buf = append(append(buf, up...), tc.second...)
			c.Write(buf) // one write: the head, CH1 and CH2
			br := bufio.NewReader(c)
			if !capture {
				if st, _ := br.ReadString('\n'); !strings.Contains(st, " 200 ") {
					t.Fatalf("CONNECT: %q", st)
				}
				for {
					if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
						break
					}
				}
			}
			hrr := make([]byte, len(helloRetryRecord()))
			if _, err := io.ReadFull(br, hrr); err != nil || !bytes.Equal(hrr, helloRetryRecord()) {
				t.Fatalf("%s (capture %v): the HelloRetryRequest: %x %v", tc.what, capture, hrr, err)
			}
			got, _ := io.ReadAll(br)
			c.Close()
			if string(got) != tc.want {
				t.Errorf("%s (capture %v), pipelined: the server said %q, want %q", tc.what, capture, got, tc.want)
			}
			if tc.want == "" {
				denials++
			}
		}
	}
	env.p.Close()
	if msgs := env.sniDenials(); len(msgs) != denials {
		t.Errorf("%d sni denials, want %d: %q", len(msgs), denials, msgs)
	}
}
