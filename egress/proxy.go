package egress

import (
	"bufio"
	"bytes"
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Event is one status-fd line of the proxy: {"net":"deny","host":…,"port":…,"rule":…}
// when a connection is refused, {"net":"allow",…,"bytes-in":…,"bytes-out":…} when an
// allowed one closes (in: to the sandbox, out: from it).
type Event struct {
	Net      string `json:"net"`   // "allow" or "deny"
	Proto    string `json:"proto"` // "http-connect", "http", "socks5", "capture-tls", "capture-http", "dns"; nsinit's "host-port", "publish"
	Host     string `json:"host"`
	Port     uint16 `json:"port"`
	Rule     string `json:"rule"`
	Addr     string `json:"addr,omitempty"` // with allow: the address dialled
	BytesIn  int64  `json:"bytes-in,omitempty"`
	BytesOut int64  `json:"bytes-out,omitempty"`
	Error    string `json:"error,omitempty"` // an allowed connection that could not be made
	// Origin is what Proxy.Origin said of the connection (0: not asked, or unknown):
	// for the owner to route the line to the request that made it, not part of it.
	Origin int `json:"-"`
	// Message is a denial's message (Decision.Message), or the note of an allowed
	// connection that could not be made ("note: ..."), not part of the line; "" when
	// withheld past the messages' bound (Proxy.Withheld).
	Message string `json:"-"`
	// Ends says the line is the last of a connection whose Origin was asked with
	// deny false (an allowed connection's, or its tunnel's denial by rule sni).
	Ends bool `json:"-"`
}

// Proxy is the host-side half of a sandbox's egress, run by the sandbox's owner. It
// serves listening sockets made inside the sandbox's network namespace (Listeners),
// so every connection of the sandbox reaches it without a path on disk, and makes one
// decision per connection (Policy.Host, the host's lookup, Policy.Resolved) before it
// dials the address it checked. TLS is carried untouched. A Proxy is an owner-held
// value: whoever holds a sandbox from outside (gosbx exec's process, a session
// supervisor) serves it for the sandbox's life and closes it after.
type Proxy struct {
	Policy *Policy
	// Lookup resolves a name on the host (nil: the host's resolver, both families).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Events receives the status lines; called from the proxy's goroutines, one at a
	// time.
	Events func(Event)
	// Denied receives each denial's message (Decision.Message), for the caller's
	// stderr: an agent reads it there when its client prints only "403"; and the note
	// of an allowed connection whose dial failed ("note: HOST:PORT is allowed ..., but
	// the connection to it failed: CAUSE"), which a client shows as a 502 or nothing.
	// Past the messages' bound they are withheld (Withheld).
	Denied func(msg string)
	// Withheld, if set, receives the number of messages (Denied's, Event.Message's)
	// withheld since its last call, past their bound (messagelimit.go: the first 50,
	// then 5 a second), at most once a second and at Close; WithheldText words it.
	Withheld func(n int)
	// Origin, if set, says which process of the sandbox made the connection c (an
	// accepted one; nil for a DNS question over UDP), for Event.Origin: a session's
	// owner routes the line to the request that made it. Called once per connection, at
	// its decision, from the connection's goroutine; deny says the decision was a denial.
	Origin func(c net.Conn, deny bool) int
	// DialTimeout bounds one dial (default 10 s).
	DialTimeout time.Duration
	// Hostname is the sandbox's host name, which the DNS stub answers with 127.0.0.1
	// (programs look their own name up), "" for none.
	Hostname string

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	lns    []io.Closer
	wg     sync.WaitGroup
	evmu   sync.Mutex
	msgs   messageLimit

	// the DNS stub's names and the loopback addresses it gave them (dns.go)
	names dnsNames
	// lookups caches the host's answers (lookupCached)
	lookups map[string]lookupResult
	// the connections served at once (MaxConns, slots.go): how many, and those still
	// waiting for their head, oldest first (waitEl: each one's element)
	used      int
	slotFreed sync.Cond // on mu
	waiting   list.List
	waitEl    map[net.Conn]*list.Element
}

// Listeners are the sockets made inside the sandbox's network namespace (by its init,
// on loopback) that the proxy serves: any of them may be nil.
type Listeners struct {
	HTTP, SOCKS net.Listener   // the HTTP proxy (CONNECT and absolute-URI) and SOCKS5
	CaptureHTTP net.Listener   // port 80: plain HTTP, by its Host header
	CaptureTLS  net.Listener   // port 443: TLS, by its ClientHello's server name
	DNS         net.PacketConn // the DNS stub, UDP
	DNSStream   net.Listener   // the DNS stub, TCP
	// Capture are the other ports captured (CapturePorts), by port: TLS by its
	// ClientHello's server name, HTTP by its Host header, any protocol to an address
	// the DNS stub gave (serveCapturePort)
	Capture map[uint16]net.Listener
}

// Serve serves ls until Close; it returns at once.
func (p *Proxy) Serve(ls Listeners) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.slotFreed.L = &p.mu
	for _, s := range []struct {
		l  net.Listener
		fn func(net.Conn)
	}{{ls.HTTP, p.serveHTTP}, {ls.SOCKS, p.serveSOCKS}, {ls.CaptureHTTP, p.serveCaptureHTTP},
		{ls.CaptureTLS, p.serveCaptureTLS}, {ls.DNSStream, p.serveDNSStream}} {
		if s.l == nil {
			continue
		}
		p.lns = append(p.lns, s.l)
		p.wg.Add(1)
		go p.accept(s.l, s.fn)
	}
	for port, l := range ls.Capture {
		p.lns = append(p.lns, l)
		p.wg.Add(1)
		go p.accept(l, func(c net.Conn) { p.serveCapturePort(c, port) })
	}
	if ls.DNS != nil {
		p.lns = append(p.lns, ls.DNS)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serveDNS(ls.DNS)
		}()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// Close stops the proxy: its listeners and every connection closed, and waits until
// each connection's last event is sent.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	if p.slotFreed.L != nil {
		p.slotFreed.Broadcast()
	}
	for _, l := range p.lns {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	p.flushWithheld()
}

func (p *Proxy) emit(e Event) {
	if p.Events == nil {
		return
	}
	p.evmu.Lock()
	defer p.evmu.Unlock()
	p.Events(e)
}

// decide is the decision on host:port: the name's, then, for a name, the host's lookup
// and the resolved addresses'.
func (p *Proxy) decide(host string, port uint16) Decision {
	d := p.Policy.Host(host, port)
	if !d.Allow || d.Addrs != nil {
		return d
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	defer cancel()
	addrs, err := p.lookupCached(ctx, d.Host)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("lookup %s: no address", d.Host)
	}
	if err != nil {
		d.Unresolved = err // allowed, never dialled (dial): a failure to reach, not a denial
		return d
	}
	return p.Policy.Resolved(d, addrs)
}

// The host's answers are kept for lookupTTL (a failure for lookupFailTTL), at most
// maxLookups names: a package manager's hundred connections to one index cost one
// lookup, not a hundred (Go's resolver gives no TTL). Every decision still checks the
// addresses, cached or not.
const (
	lookupTTL     = 30 * time.Second
	lookupFailTTL = 5 * time.Second
	maxLookups    = 4096
)

type lookupResult struct {
	addrs []netip.Addr
	err   error
	until time.Time
}

func (p *Proxy) lookupCached(ctx context.Context, host string) ([]netip.Addr, error) {
	now := time.Now()
	p.mu.Lock()
	r, ok := p.lookups[host]
	p.mu.Unlock()
	if ok && now.Before(r.until) {
		return r.addrs, r.err
	}
	lookup := p.Lookup
	if lookup == nil {
		lookup = hostLookup()
	}
	addrs, err := lookup(ctx, host)
	r = lookupResult{addrs, err, now.Add(lookupTTL)}
	if err != nil {
		r.until = now.Add(lookupFailTTL)
	}
	p.mu.Lock()
	if p.lookups == nil || len(p.lookups) >= maxLookups {
		p.lookups = map[string]lookupResult{}
	}
	p.lookups[host] = r
	p.mu.Unlock()
	return addrs, err
}

func (p *Proxy) dialTimeout() time.Duration {
	if p.DialTimeout > 0 {
		return p.DialTimeout
	}
	return 10 * time.Second
}

// origin is Origin's answer for c, 0 without it.
func (p *Proxy) origin(c net.Conn, deny bool) int {
	if p.Origin == nil {
		return 0
	}
	return p.Origin(c, deny)
}

// deny reports a denial of the connection c (nil: a DNS question) (event, message) and
// returns its message.
func (p *Proxy) deny(c net.Conn, proto string, d Decision) string {
	return p.denyFrom(p.origin(c, true), false, proto, d)
}

// denyFrom is deny for a connection whose origin is known (ends: asked with deny false).
func (p *Proxy) denyFrom(origin int, ends bool, proto string, d Decision) string {
	msg := d.Message()
	shown := msg
	if !p.allowMessage() {
		shown = ""
	}
	p.emit(Event{Net: "deny", Proto: proto, Host: d.Host, Port: d.Port, Rule: d.Rule, Origin: origin, Message: shown, Ends: ends})
	if p.Denied != nil && shown != "" {
		p.Denied(msg)
	}
	return msg
}

// dialFailed reports an allowed connection whose dial failed: its status line (with
// the error), and a note on Denied's stderr (Event.Message, for a session's request),
// and returns the text for the client: the host and port, the rule that allowed them,
// the cause and what to check.
func (p *Proxy) dialFailed(c net.Conn, proto string, d Decision, err error) string {
	text := dialFailure(d, err)
	msg := "note: " + text
	if !p.allowMessage() {
		msg = ""
	}
	p.emit(Event{Net: "allow", Proto: proto, Host: d.Host, Port: d.Port, Rule: d.Rule, Error: err.Error(), Origin: p.origin(c, false), Message: msg, Ends: true})
	if p.Denied != nil && msg != "" {
		p.Denied(msg)
	}
	return text
}

// dialFailure says why an allowed host could not be reached: "127.0.0.1:80 is
// allowed (rule network.allow 127.0.0.1), but the connection to it failed: dial tcp
// 127.0.0.1:80: connect: connection refused: nothing listens on that port of the host".
// A name the host could not resolve says so, and where to check the host's DNS.
func dialFailure(d Decision, err error) string {
	hp := hostPort(d.Host, d.Port)
	if d.Unresolved != nil {
		return fmt.Sprintf("%s is allowed (rule %s), but the host could not resolve %s: %v (the host's DNS or network: check it with gosbx doctor --allow-host %s)",
			hp, d.Rule, d.Host, d.Unresolved, hp)
	}
	why := ""
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		why = ": nothing listens on that port of the host (start the server, or allow the port it listens on: --allow-host HOST:PORT)"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		why = ": no answer in time (is the host up, and is this its port?)"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		why = ": the host has no route to it"
	}
	return fmt.Sprintf("%s is allowed (rule %s), but the connection to it failed: %v%s", hp, d.Rule, err, why)
}

// dial connects to the first of d's checked addresses that answers. A decision with
// none (the host could not resolve the name: Decision.Unresolved) dials nothing.
func (p *Proxy) dial(d Decision) (net.Conn, error) {
	if d.Unresolved != nil {
		return nil, d.Unresolved
	}
	if len(d.Addrs) == 0 {
		return nil, fmt.Errorf("dial %s: no checked address", hostPort(d.Host, d.Port))
	}
	var err error
	for _, a := range d.Addrs {
		if err = dialGuard(a); err != nil {
			continue
		}
		var c net.Conn
		c, err = net.DialTimeout("tcp", netip.AddrPortFrom(a, d.Port).String(), p.dialTimeout())
		if err == nil {
			return c, nil
		}
	}
	return nil, err
}

// How relay checks a tunnel's TLS server name.
type sniMode int

const (
	sniNone    sniMode = iota // plain HTTP, carried as it is
	sniCheck                  // a tunnel to a name: a ClientHello it starts with must name it
	sniChecked                // first is a ClientHello already found to name d.Host (capture)
)

// relay carries bytes both ways between the sandbox's connection and the upstream one
// until both directions end (half-closes passed on), then reports the allowed
// connection with its byte counts. first is what was read from the sandbox's side
// already and belongs upstream. With sniCheck (a tunnel to a name: CONNECT, SOCKS5, a
// captured port), when the client's first byte starts a TLS handshake record, the
// ClientHello (across records, bounded: readClientHello) must name that name as its
// server name, or the tunnel is closed and denied (rule "sni"): an allowed name's
// address (a CDN's) must not carry a TLS session to another name it serves (domain
// fronting by SNI; fronting by the Host header inside TLS cannot be seen without
// decrypting). A ClientHello without a server name, or one that cannot be read, is
// denied too (fail closed). Other first bytes (ssh, a WebSocket over plain HTTP) pass
// unchecked. Once a ClientHello was checked (sniCheck, sniChecked), a TLS 1.3
// HelloRetryRequest from the server makes the client's second ClientHello subject to
// the same check (checkRetry): it is a new ClientHello, which could name another server.
// held is what the client sent after first, read already: after a checked ClientHello
// it (and every later client byte) waits until the server's first handshake message
// was classified, so that a second ClientHello sent with the first is checked too;
// otherwise it follows first. body, when set, is the framing of the request whose
// head is first (a plain HTTP request the proxy rewrote, sniNone): only its body
// follows, and what the client sends after it is dropped, so that a later request on
// the connection, whose head the proxy did not check, never reaches the server.
func (p *Proxy) relay(proto string, d Decision, in, up net.Conn, first, held []byte, mode sniMode, body *framing) {
	var out, back int64
	denied := false
	origin := p.origin(in, false) // now: the client may be gone when it closes
	defer func() {
		if !denied {
			p.emit(Event{Net: "allow", Proto: proto, Host: d.Host, Port: d.Port, Rule: d.Rule, Addr: up.RemoteAddr().String(), BytesIn: back, BytesOut: out, Origin: origin, Ends: true})
		}
	}()
	if !p.track(up) { // closing: the sandbox is gone
		up.Close()
		return
	}
	defer p.untrack(up)
	if _, err := netip.ParseAddr(d.Host); err == nil && mode == sniCheck {
		mode = sniNone // an address rule's tunnel: no name to compare
	}
	refuse := func(why string) {
		denied = true
		p.denyFrom(origin, true, proto, Decision{Host: d.Host, Port: d.Port, Rule: "sni", Why: why + " in the tunnel to " + hostPort(d.Host, d.Port)})
		up.Close()
		in.Close()
	}
	// verdict carries the client's side's finding (its first bytes are a ClientHello
	// checked) to the server's side before the ClientHello goes upstream; retry the
	// server's side's (its first handshake message is a HelloRetryRequest) back
	verdict, retry := make(chan bool, 1), make(chan bool, 1)
	tls := mode == sniChecked
	done := make(chan int64, 1)
	go func() {
		// server to client flows meanwhile: a protocol where the server speaks first
		// is not held up by the check
		var n int64
		if body != nil {
			w, _ := up.Write(first)
			var m int64
			if body.chunked {
				br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(held), in), 4096)
				m, _ = copyBody(up, br, *body)
				io.Copy(io.Discard, br) // until the client's end
			} else {
				// a length: from the connection itself past what was held, which lets
				// the kernel splice it (net.TCPConn.ReadFrom of an io.LimitedReader)
				k := min(int64(len(held)), body.length)
				h, _ := up.Write(held[:k])
				m = int64(h)
				if h == int(k) {
					c, _ := io.CopyN(up, in, body.length-k)
					m += c
				}
				io.Copy(io.Discard, in) // until the client's end
			}
			closeWrite(up)
			done <- int64(w) + m
			return
		}
		if mode == sniCheck {
			fr := bytes.NewReader(first)
			head, why, isTLS := p.checkHello(in, io.MultiReader(fr, in), d.Host)
			verdict <- isTLS && why == ""
			if why != "" {
				refuse(why)
				done <- 0
				return
			}
			rest, _ := io.ReadAll(fr)
			first, held, tls = head, append(rest, held...), isTLS
		}
		if !tls {
			first, held = append(first, held...), nil
		}
		if len(first) > 0 {
			w, _ := up.Write(first)
			n = int64(w)
		}
		if tls {
			// the server answers a ClientHello at once; one that says nothing within the
			// head timeout does not hold the client's side (and its check) for good
			t := time.NewTimer(p.headWait())
			var hrr, answered bool
			select {
			case hrr = <-retry:
				answered = true
			case <-t.C:
			}
			t.Stop()
			if !answered {
				refuse("a TLS server that did not answer the ClientHello")
				done <- n
				return
			}
			hr := bytes.NewReader(held)
			if hrr {
				m, why := p.checkRetry(in, io.MultiReader(hr, in), up, d.Host)
				n += m
				if why != "" {
					refuse(why)
					done <- n
					return
				}
			}
			if hr.Len() > 0 {
				m, _ := hr.WriteTo(up)
				n += m
			}
		}
		m, _ := io.Copy(up, in)
		closeWrite(up)
		done <- n + m
	}()
	if mode == sniChecked {
		// the server's first handshake message, read whole (bounded), then passed on
		head, hrr := readServerHello(up)
		w, _ := in.Write(head)
		back += int64(w)
		retry <- hrr
	} else if mode == sniCheck {
		// The server's first bytes. A TLS server answers the ClientHello, which goes
		// upstream only after verdict was sent: bytes that come before it (a protocol
		// where the server speaks first) are not a TLS server's, and pass on as they are.
		buf := make([]byte, 16<<10)
		k, _ := up.Read(buf)
		isTLS := false
		select {
		case isTLS = <-verdict:
		default:
		}
		hrr := false
		if k > 0 && isTLS {
			br := bytes.NewReader(buf[:k])
			var head []byte
			head, hrr = readServerHello(io.MultiReader(br, up))
			rest, _ := io.ReadAll(br)
			buf, k = append(head, rest...), len(head)+len(rest)
		}
		w, _ := in.Write(buf[:k])
		back += int64(w)
		retry <- hrr
	}
	m, _ := io.Copy(in, up)
	back += m
	closeWrite(in)
	out += <-done
}

// checkRetry reads the client's answer to a HelloRetryRequest from r (in's bytes, after
// what was held; in's read deadline applies) (ChangeCipherSpec
// records of the middlebox compatibility mode, RFC 8446 D.4, passed on, at most
// maxHelloRecords; then its second ClientHello, within the head timeout) and passes it
// to up when the ClientHello names host; why says what is denied otherwise.
func (p *Proxy) checkRetry(in net.Conn, r io.Reader, up net.Conn, host string) (n int64, why string) {
	in.SetReadDeadline(time.Now().Add(p.headWait()))
	defer in.SetReadDeadline(time.Time{})
	for i := 0; i < maxHelloRecords; i++ {
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return n, "a TLS handshake whose second ClientHello (after a HelloRetryRequest) gosbx cannot read (" + err.Error() + ")"
		}
		if hdr[0] != 20 { // not change_cipher_spec: the ClientHello's first record
			head, name, err := readClientHello(io.MultiReader(bytes.NewReader(hdr[:]), r))
			switch {
			case err != nil:
				return n, "a TLS handshake whose second ClientHello (after a HelloRetryRequest) gosbx cannot read (" + err.Error() + ")"
			case name == "":
				return n, "a second TLS ClientHello (after a HelloRetryRequest) without a server name"
			case !equalFoldASCII(strings.TrimSuffix(name, "."), host):
				return n, "a TLS server name " + peerName(name) + " in the second ClientHello (after a HelloRetryRequest)"
			}
			w, _ := up.Write(head)
			return n + int64(w), ""
		}
		l := int(binary.BigEndian.Uint16(hdr[3:]))
		if l > maxRecordLen {
			return n, "a TLS record of " + strconv.Itoa(l) + " bytes after a HelloRetryRequest"
		}
		rec := make([]byte, 5+l)
		copy(rec, hdr[:])
		if _, err := io.ReadFull(r, rec[5:]); err != nil {
			return n, "a TLS handshake whose second ClientHello (after a HelloRetryRequest) gosbx cannot read (" + err.Error() + ")"
		}
		w, _ := up.Write(rec)
		n += int64(w)
	}
	return n, "more than " + strconv.Itoa(maxHelloRecords) + " TLS records before the second ClientHello"
}

// helloRetryRandom is the ServerHello.random of a HelloRetryRequest (RFC 8446 4.1.3):
// SHA-256 of "HelloRetryRequest".
var helloRetryRandom = [32]byte{0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
	0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C}

// readServerHello reads the server's first TLS handshake records from r until they
// hold its first handshake message, bounded as readClientHello, and returns the bytes
// read (to pass on) and whether that message is a HelloRetryRequest. Anything else (an
// alert, a protocol that is not TLS, an error) ends the reading there: hrr is false,
// and no second ClientHello follows that the server would read.
func readServerHello(r io.Reader) (head []byte, hrr bool) {
	var msg []byte
	for records := 0; records < maxHelloRecords; records++ {
		var hdr [5]byte
		got, err := io.ReadFull(r, hdr[:])
		head = append(head, hdr[:got]...)
		if err != nil || hdr[0] != 22 {
			return head, false
		}
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		if n == 0 || n > maxRecordLen {
			return head, false
		}
		start := len(head)
		head = append(head, make([]byte, n)...)
		got, err = io.ReadFull(r, head[start:])
		head = head[:start+got]
		msg = append(msg, head[start:]...)
		if err != nil {
			return head, false
		}
		// type (1), length (3), legacy_version (2), random (32)
		if len(msg) >= 38 {
			return head, msg[0] == 2 && [32]byte(msg[6:38]) == helloRetryRandom
		}
	}
	return head, false
}

// checkHello reads the client's first bytes from r (in's, after what was buffered):
// when the first is a TLS handshake record's type, the whole ClientHello, within the
// head timeout, whose server name must be host. head is everything read, to pass on;
// why is "" when the tunnel may go on, else what about it is denied.
func (p *Proxy) checkHello(in net.Conn, r io.Reader, host string) (head []byte, why string, isTLS bool) {
	var b [1]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return nil, "", false // closed before a byte: nothing to check or carry
	}
	if b[0] != 22 {
		return b[:], "", false
	}
	// the client has begun its ClientHello: the rest comes now or the tunnel is refused
	// (no deadline before the first byte: a protocol where the server speaks first)
	in.SetReadDeadline(time.Now().Add(p.headWait()))
	defer in.SetReadDeadline(time.Time{})
	head, name, err := readClientHello(io.MultiReader(bytes.NewReader(b[:]), r))
	switch {
	case err != nil:
		return head, "a TLS handshake whose ClientHello gosbx cannot read (" + err.Error() + ")", true
	case name == "":
		return head, "a TLS ClientHello without a server name", true
	case !equalFoldASCII(strings.TrimSuffix(name, "."), host):
		return head, "a TLS server name " + peerName(name), true
	}
	return head, "", true
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}

// splitPort splits "host:port" (IPv6 in brackets), port 1-65535; def when absent.
func splitPort(hp string, def uint16) (string, uint16, bool) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil {
		if def == 0 {
			return "", 0, false
		}
		h := hp
		if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
			h = h[1 : len(h)-1]
		}
		return h, def, h != ""
	}
	n, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || n == 0 || host == "" {
		return "", 0, false
	}
	return host, uint16(n), true
}

// Probe decides on host:port as for a connection of the sandbox (the name, the host's
// lookup, the resolved addresses) and, when allowed, dials it and hangs up: gosbx
// doctor's check that the host can resolve and reach an allowed name. The error is the
// dial's.
func (p *Proxy) Probe(host string, port uint16) (Decision, error) {
	d := p.decide(host, port)
	if !d.Allow {
		return d, nil
	}
	c, err := p.dial(d)
	if err == nil {
		c.Close()
	}
	return d, err
}
