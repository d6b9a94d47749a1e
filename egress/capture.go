package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Transparent capture: a client that ignores the proxy variables asks the DNS stub,
// which answers an allowed name with a loopback address of its own (dnsAddr) where the
// sandbox's init listens on ports 80 and 443. The proxy reads the server name the
// client sends (TLS ClientHello's server_name, RFC 6066; HTTP's Host), requires it to
// be the name the address was given for when the client came through that address,
// and decides on it as for a proxied connection.

// serveCaptureTLS carries a TLS connection to port 443 of the name in its ClientHello.
func (p *Proxy) serveCaptureTLS(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(p.headWait()))
	hello, name, err := readClientHello(c)
	if err != nil {
		return
	}
	p.headDone(c)
	c.SetReadDeadline(time.Time{})
	p.capture(c, "capture-tls", name, 443, hello, nil, nil)
}

// serveCaptureHTTP carries a plain HTTP request to port 80 of its Host header's name,
// sent with Connection: close (as the proxy's absolute-URI requests): one request per
// connection, its body as framed (bodyFraming) and nothing the client sends after it
// (relay), so that a later request on it cannot name another host served at the same
// address, whether or not the server honours Connection: close.
func (p *Proxy) serveCaptureHTTP(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(p.headWait()))
	br := bufio.NewReaderSize(c, 4096)
	line, fields, err := readHead(br)
	if err != nil {
		refuseHead(c, err)
		return
	}
	p.headDone(c)
	c.SetReadDeadline(time.Time{})
	p.captureHTTP(c, br, line, fields, 80)
}

// captureHTTP carries the request whose head is line and fields (the rest in br) to
// port of its Host header's name. The upstream server must route it by that name: a
// request with more than one Host field, or whose target is in absolute form naming
// another host (RFC 9112 3.2.2: the server then ignores Host), or in another form than
// origin form, absolute form and "*", is refused (rule capture); an absolute-form
// target goes upstream in origin form.
func (p *Proxy) captureHTTP(c net.Conn, br *bufio.Reader, line string, fields []string, port uint16) {
	if why := checkFields(fields); why != "" {
		httpError(c, 400, "Bad Request", "gosbx proxy: "+why, "")
		return
	}
	name, hosts := "", 0
	var b strings.Builder
	for _, f := range fields {
		k, v, _ := strings.Cut(f, ":")
		switch lowerASCII(strings.TrimSpace(k)) {
		case "host":
			hosts++
			name = strings.TrimSpace(v)
			if h, _, ok := splitPort(name, port); ok {
				name = h
			}
		case "connection", "keep-alive", "proxy-connection":
			continue
		}
		b.WriteString(f + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	target, why := originTarget(line, name, port)
	if hosts > 1 {
		why = "an HTTP request with " + strconv.Itoa(hosts) + " Host fields"
	}
	if why != "" {
		d := Decision{Host: peerName(name), Port: port, Rule: "capture", Why: why + " to loopback port " + itoa(port)}
		httpError(c, 403, "Forbidden", p.deny(c, "capture-http", d), d.Rule)
		return
	}
	body, why := bodyFraming(fields)
	if why != "" {
		httpError(c, 400, "Bad Request", "gosbx proxy: "+why, "")
		return
	}
	p.capture(c, "capture-http", name, port, []byte(target+"\r\n"+b.String()), buffered(br), &body)
}

// originTarget is the request line with its target in origin form (RFC 9112 3.2.1),
// or why it cannot be carried to host: an absolute-form target whose authority names
// another host, or a target in authority form or of another scheme than http.
func originTarget(line, host string, port uint16) (string, string) {
	method, target, version, ok := splitRequestLine(line)
	if !ok {
		return "", "a malformed HTTP request line"
	}
	if strings.HasPrefix(target, "/") || target == "*" && method == "OPTIONS" {
		return line, ""
	}
	scheme, rest, ok := strings.Cut(target, "://")
	if !ok || !equalFoldASCII(scheme, "http") {
		return "", "an HTTP request whose target is not in origin form (/path) nor an http:// URI"
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	h, _, ok := splitPort(authority, port)
	if !ok || !equalFoldASCII(strings.TrimSuffix(h, "."), strings.TrimSuffix(host, ".")) {
		return "", "an HTTP request whose target names a host (" + peerName(h) + ") other than its Host field"
	}
	return method + " /" + path + " " + version, ""
}

// serveCapturePort carries a connection to a captured port other than 80 and 443
// (Listeners.Capture). To an address the DNS stub gave a name, it is a tunnel to that
// name and port, decided and carried as CONNECT name:port is: a ClientHello it starts
// with must name that name (relay's check), and any other protocol passes, one where
// the server speaks first included (the stub gives addresses to allowed names only, and
// the client asked for this one). To another loopback address (127.0.0.1, 127.0.0.2)
// the connection must say which name it wants, by a TLS ClientHello's server name or
// an HTTP request's Host, decided then as on ports 443 and 80; anything else is
// refused with rule "capture".
func (p *Proxy) serveCapturePort(c net.Conn, port uint16) {
	if given, ok := p.givenName(c); ok {
		p.headDone(c)
		d := p.decide(given, port)
		if !d.Allow {
			p.deny(c, "capture", d)
			return
		}
		up, err := p.dial(d)
		if err != nil {
			p.dialFailed(c, "capture", d, err) // a tunnel: no answer the client's protocol would read
			return
		}
		p.relay("capture", d, c, up, nil, nil, sniCheck, nil)
		return
	}
	c.SetReadDeadline(time.Now().Add(p.headWait()))
	br := bufio.NewReaderSize(c, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == 22 {
		hello, name, err := readClientHello(br)
		if err != nil {
			p.deny(c, "capture-tls", Decision{Host: "(none)", Port: port, Rule: "capture",
				Why: "a TLS handshake to loopback port " + itoa(port) + " whose ClientHello gosbx cannot read (" + err.Error() + ")"})
			return
		}
		p.headDone(c)
		c.SetReadDeadline(time.Time{})
		p.capture(c, "capture-tls", name, port, hello, buffered(br), nil)
		return
	}
	// an HTTP method is a token of letters: anything else is refused at once
	line, ok := "", first[0] >= 'A' && first[0] <= 'Z' || first[0] >= 'a' && first[0] <= 'z'
	if ok {
		line, ok = readRequestLine(br)
	}
	var fields []string
	if ok {
		_, fields, err = readFields(br, line)
	}
	if !ok || err != nil {
		refuseHead(c, err)
		p.deny(c, "capture", Decision{Host: "(none)", Port: port, Rule: "capture",
			Why: "a connection to loopback port " + itoa(port) + " that is neither TLS with a server name nor HTTP with a Host header, to an address the DNS stub did not give"})
		return
	}
	p.headDone(c)
	c.SetReadDeadline(time.Time{})
	p.captureHTTP(c, br, line, fields, port)
}

// givenName is the name the DNS stub gave the local address of c for, if it did.
func (p *Proxy) givenName(c net.Conn) (string, bool) {
	local, ok := c.LocalAddr().(*net.TCPAddr)
	if !ok {
		return "", false
	}
	a, _ := netip.AddrFromSlice(local.IP)
	return p.dnsName(a.Unmap())
}

// capture decides on a captured connection that named name and carries it: first is
// its head (a ClientHello, an HTTP head) and held what the client sent after it;
// body an HTTP request's framing (relay).
func (p *Proxy) capture(c net.Conn, proto, name string, port uint16, first, held []byte, body *framing) {
	d := p.captureDecision(c, name, port)
	if !d.Allow {
		msg := p.deny(c, proto, d)
		if proto == "capture-http" {
			httpError(c, 403, "Forbidden", msg, d.Rule)
		}
		return
	}
	up, err := p.dial(d)
	if err != nil {
		text := p.dialFailed(c, proto, d, err)
		if proto == "capture-http" {
			httpError(c, 502, "Bad Gateway", "gosbx proxy: "+text, "")
		}
		return
	}
	mode := sniNone
	if proto == "capture-tls" {
		mode = sniChecked // first is the ClientHello that named d.Host
	}
	p.relay(proto, d, c, up, first, held, mode, body)
}

// captureDecision decides on a captured connection: it must name its server, the name
// must be the one the DNS stub gave the address it came to (when it came through
// one), and then the policy decides as for a proxied connection.
func (p *Proxy) captureDecision(c net.Conn, name string, port uint16) Decision {
	if name == "" {
		return Decision{Host: "(none)", Port: port, Rule: "capture", Why: "a connection to loopback port " + itoa(port) + " without a server name"}
	}
	if given, ok := p.givenName(c); ok && !equalFoldASCII(strings.TrimSuffix(name, "."), given) {
		shown := peerName(name)
		return Decision{Host: shown, Port: port, Rule: "capture",
			Why: "server name " + shown + " sent to the address the DNS stub gave " + given}
	}
	return p.decide(name, port)
}

// Bounds of a ClientHello the proxy reads: a handshake message may span records
// (RFC 8446 5.1), so the records are reassembled, up to maxHelloLen bytes of the
// message's body in at most maxHelloRecords records of at most maxRecordLen bytes each
// (TLSPlaintext.length), within the head timeout. Real clients send one record of
// 0.3-2 KiB (a post-quantum key share included).
const (
	maxHelloLen     = 16 << 10
	maxHelloRecords = 16
	maxRecordLen    = 16384
)

// readClientHello reads TLS handshake records from r until they hold a whole
// ClientHello (RFC 8446 4.1.2), and returns the bytes read (on error too, to pass on or
// drop) and its server_name (host_name) extension's name, "" when it has none. Errors:
// a record that is not a handshake record, an empty or oversized record, a first
// message that is not a ClientHello, beyond the bounds above, a malformed ClientHello,
// or r's (a deadline, EOF).
func readClientHello(r io.Reader) (head []byte, name string, err error) {
	var msg []byte
	for records := 0; ; records++ {
		if records == maxHelloRecords {
			return head, "", fmt.Errorf("ClientHello spans more than %d records", maxHelloRecords)
		}
		var hdr [5]byte
		got, err := io.ReadFull(r, hdr[:])
		head = append(head, hdr[:got]...)
		if err != nil {
			return head, "", fmt.Errorf("TLS record header: %w", err)
		}
		if hdr[0] != 22 {
			return head, "", fmt.Errorf("TLS record of type %d before the ClientHello's end, want a handshake record (22)", hdr[0])
		}
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		if n == 0 || n > maxRecordLen {
			return head, "", fmt.Errorf("TLS handshake record of %d bytes, want 1-%d", n, maxRecordLen)
		}
		start := len(head)
		head = append(head, make([]byte, n)...)
		got, err = io.ReadFull(r, head[start:])
		head = head[:start+got]
		if err != nil {
			return head, "", fmt.Errorf("TLS record: %w", err)
		}
		msg = append(msg, head[start:]...)
		if len(msg) < 4 {
			continue
		}
		if msg[0] != 1 {
			return head, "", fmt.Errorf("TLS handshake message of type %d, want a ClientHello (1)", msg[0])
		}
		l := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
		if l > maxHelloLen {
			return head, "", fmt.Errorf("ClientHello of %d bytes, more than %d", l, maxHelloLen)
		}
		if len(msg) >= 4+l {
			name, err := serverName(msg[:4+l])
			return head, name, err
		}
	}
}

// serverName parses a handshake message holding a ClientHello (RFC 8446 4.1.2) for its
// server_name extension; "" when it has none.
func serverName(b []byte) (name string, err error) {
	bad := errors.New("malformed ClientHello")
	if len(b) < 4 || b[0] != 1 {
		return "", bad
	}
	b = b[4:]
	skip := func(n int) bool {
		if len(b) < n {
			return false
		}
		b = b[n:]
		return true
	}
	vec := func(lenBytes int) ([]byte, bool) {
		if len(b) < lenBytes {
			return nil, false
		}
		n := 0
		for i := 0; i < lenBytes; i++ {
			n = n<<8 | int(b[i])
		}
		if len(b) < lenBytes+n {
			return nil, false
		}
		v := b[lenBytes : lenBytes+n]
		b = b[lenBytes+n:]
		return v, true
	}
	if !skip(2 + 32) { // legacy_version, random
		return "", bad
	}
	for _, l := range []int{1, 2, 1} { // session id, cipher suites, compression methods
		if _, ok := vec(l); !ok {
			return "", bad
		}
	}
	if len(b) == 0 {
		return "", nil
	}
	exts, ok := vec(2)
	if !ok {
		return "", bad
	}
	seen := false
	for len(exts) >= 4 {
		typ := binary.BigEndian.Uint16(exts)
		n := int(binary.BigEndian.Uint16(exts[2:]))
		if len(exts) < 4+n {
			return "", bad
		}
		data := exts[4 : 4+n]
		exts = exts[4+n:]
		if typ != 0 {
			continue
		}
		// one server_name extension with one host_name (RFC 6066 3, RFC 8446 4.2):
		// a server could read another than the one checked
		if seen || len(data) < 2 || int(binary.BigEndian.Uint16(data)) != len(data)-2 {
			return "", bad
		}
		seen = true
		list := data[2:]
		for len(list) > 0 {
			if len(list) < 3 {
				return "", bad
			}
			kind, l := list[0], int(binary.BigEndian.Uint16(list[1:]))
			if len(list) < 3+l {
				return "", bad
			}
			if kind == 0 {
				if name != "" || l == 0 {
					return "", bad
				}
				name = string(list[3 : 3+l])
			}
			list = list[3+l:]
		}
	}
	if len(exts) != 0 {
		return "", bad
	}
	return name, nil
}

func itoa(n uint16) string {
	var b [5]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
