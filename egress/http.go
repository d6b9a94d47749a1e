package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// maxHeader bounds a request's head (request line and header fields) read by the proxy.
const maxHeader = 64 << 10

// headTimeout bounds the wait for a request's head (or a SOCKS5 request, a
// ClientHello): a client that connects and says nothing holds nothing for long.
const headTimeout = 30 * time.Second

// readHead reads an HTTP request's head: the request line and the header lines, as
// they came (CRLF or LF), up to the empty line.
func readHead(br *bufio.Reader) (line string, fields []string, err error) {
	return readFields(br, "")
}

// readRequestLine reads the first line of what should be an HTTP request, at most
// br's size (bufio.ErrBufferFull beyond), and says whether it is a request line: a
// capture port learns at once that a client speaks something else.
func readRequestLine(br *bufio.Reader) (string, bool) {
	for {
		b, err := br.ReadSlice('\n')
		if err != nil {
			return "", false
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if s == "" {
			continue // RFC 9112 2.2
		}
		_, _, _, ok := splitRequestLine(s)
		return s, ok
	}
}

// errHeadTooLong is readFields' error for a head of more than maxHeader bytes (a
// type, not errors.New: no allocation at the package's init).
var errHeadTooLong error = headTooLong{}

type headTooLong struct{}

func (headTooLong) Error() string {
	return "request head longer than " + strconv.Itoa(maxHeader) + " bytes"
}

// readFields reads the header lines after line (the request line, read already, or
// "" to read it first) up to the empty line. Errors: errHeadTooLong once the head
// passes maxHeader bytes, or br's (a deadline, EOF). A line is read from br's buffer
// a buffer at a time, counted as it comes: what a peer sends without a newline costs
// at most maxHeader plus br's size.
func readFields(br *bufio.Reader, line string) (string, []string, error) {
	total := len(line)
	var fields []string
	for {
		s, err := readLine(br, maxHeader-total)
		total += len(s)
		if err != nil {
			return "", nil, err
		}
		// the line's end is LF or CRLF (RFC 9112 2.2); a CR before it stays in the
		// line (checkFields refuses it): fields go upstream with CRLF each
		s = strings.TrimSuffix(strings.TrimSuffix(s, "\n"), "\r")
		if line == "" {
			if s == "" {
				continue // RFC 9112 2.2: empty lines before the request line are ignored
			}
			line = s
			continue
		}
		if s == "" {
			return line, fields, nil
		}
		fields = append(fields, s)
	}
}

// readLine reads one line from br, '\n' included, of at most max bytes:
// errHeadTooLong beyond, without reading further.
func readLine(br *bufio.Reader, max int) (string, error) {
	var line []byte
	for {
		b, err := br.ReadSlice('\n')
		if len(line)+len(b) > max {
			return "", errHeadTooLong
		}
		line = append(line, b...)
		if err == nil {
			return string(line), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return "", err
		}
	}
}

// serveHTTP is the HTTP proxy: CONNECT host:port (any bytes after it carried as they
// are: TLS, a WebSocket upgrade), or a request in absolute form (http://host/path),
// sent to the host in origin form with Connection: close. A denial is a 403 whose body
// and X-Gosbx-Rule header name the rule and the fix.
func (p *Proxy) serveHTTP(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(p.headWait()))
	br := bufio.NewReaderSize(c, 4096)
	line, fields, err := readHead(br)
	if err != nil {
		refuseHead(c, err)
		return
	}
	p.headDone(c)
	c.SetReadDeadline(time.Time{})
	method, target, version, ok := splitRequestLine(line)
	if !ok {
		httpError(c, 400, "Bad Request", "gosbx proxy: malformed request line", "")
		return
	}
	if why := checkFields(fields); why != "" {
		httpError(c, 400, "Bad Request", "gosbx proxy: "+why, "")
		return
	}
	if method == "CONNECT" {
		host, port, ok := splitPort(target, 0)
		if !ok {
			httpError(c, 400, "Bad Request", "gosbx proxy: CONNECT wants host:port", "")
			return
		}
		d := p.decide(host, port)
		if !d.Allow {
			httpError(c, 403, "Forbidden", p.deny(c, "http-connect", d), d.Rule)
			return
		}
		up, err := p.dial(d)
		if err != nil {
			httpError(c, 502, "Bad Gateway", "gosbx proxy: "+p.dialFailed(c, "http-connect", d, err), "")
			return
		}
		if _, err := c.Write([]byte(version + " 200 Connection established\r\n\r\n")); err != nil {
			up.Close()
			return
		}
		p.relay("http-connect", d, c, up, buffered(br), nil, sniCheck, nil)
		return
	}
	rest, ok := strings.CutPrefix(target, "http://")
	if !ok {
		httpError(c, 400, "Bad Request", "gosbx proxy: want CONNECT host:port or an absolute http:// URI (https:// goes through CONNECT)", "")
		return
	}
	authority, path, _ := strings.Cut(rest, "/")
	if i := strings.IndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:] // userinfo is not part of the host
	}
	host, port, ok := splitPort(authority, 80)
	if !ok {
		httpError(c, 400, "Bad Request", "gosbx proxy: bad host in "+target, "")
		return
	}
	body, why := bodyFraming(fields)
	if why != "" {
		httpError(c, 400, "Bad Request", "gosbx proxy: "+why, "")
		return
	}
	d := p.decide(host, port)
	if !d.Allow {
		httpError(c, 403, "Forbidden", p.deny(c, "http", d), d.Rule)
		return
	}
	up, err := p.dial(d)
	if err != nil {
		httpError(c, 502, "Bad Gateway", "gosbx proxy: "+p.dialFailed(c, "http", d, err), "")
		return
	}
	// One request per upstream connection: the head rewritten (origin form, the URI's
	// host as Host, no proxy fields, Connection: close), then its body as framed, and
	// nothing after it (relay): a later request could name another host.
	var b strings.Builder
	b.WriteString(method + " /" + path + " " + version + "\r\nHost: " + authority + "\r\n")
	for _, f := range fields {
		name, _, _ := strings.Cut(f, ":")
		switch lowerASCII(strings.TrimSpace(name)) {
		case "host", "connection", "proxy-connection", "proxy-authorization", "keep-alive":
			continue
		}
		b.WriteString(f + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	p.relay("http", d, c, up, []byte(b.String()), buffered(br), sniNone, &body)
}

// splitRequestLine splits an HTTP/1 request line (RFC 9112 3): a method that is a
// token, a target of visible characters, HTTP/1.0 or HTTP/1.1, one SP between them.
func splitRequestLine(line string) (method, target, version string, ok bool) {
	parts := strings.Split(line, " ")
	if len(parts) != 3 || parts[2] != "HTTP/1.1" && parts[2] != "HTTP/1.0" || !isToken(parts[0]) || parts[1] == "" {
		return "", "", "", false
	}
	for i := 0; i < len(parts[1]); i++ {
		if b := parts[1][i]; b <= ' ' || b == 0x7f {
			return "", "", "", false
		}
	}
	return parts[0], parts[1], parts[2], true
}

// buffered returns what br holds beyond what was parsed.
func buffered(br *bufio.Reader) []byte {
	n := br.Buffered()
	if n == 0 {
		return nil
	}
	b, _ := br.Peek(n)
	return append([]byte(nil), b...)
}

// refuseHead answers a request whose head was too long (err errHeadTooLong) with 431
// (RFC 6585 5); other errors (a deadline, EOF) get no answer. After the answer the
// client's bytes are read and dropped, at most refuseDrain of them within
// refuseDrainWait, so that the client can read it before the connection's close
// resets it (a close with unread bytes sends RST, RFC 1122 4.2.2.13).
func refuseHead(c net.Conn, err error) {
	if !errors.Is(err, errHeadTooLong) {
		return
	}
	httpError(c, 431, "Request Header Fields Too Large", "gosbx proxy: "+err.Error(), "")
	closeWrite(c)
	c.SetReadDeadline(time.Now().Add(refuseDrainWait))
	io.CopyN(io.Discard, c, refuseDrain)
}

// Bounds of refuseHead's drain.
const (
	refuseDrain     = 256 << 10
	refuseDrainWait = time.Second
)

func httpError(c net.Conn, code int, status, msg, rule string) {
	h := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n", code, status, len(msg)+1)
	if rule != "" {
		h += "X-Gosbx-Rule: " + rule + "\r\n"
	}
	c.Write([]byte(h + "\r\n" + msg + "\n"))
}
