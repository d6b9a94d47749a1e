package egress

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) reply codes gosbx sends.
const (
	socksOK           = 0
	socksFailure      = 1
	socksNotAllowed   = 2 // "connection not allowed by ruleset": a policy denial
	socksHostUnreach  = 4
	socksCmdNotSupp   = 7
	socksAddrNotSupp  = 8
	socksAtypIPv4     = 1
	socksAtypDomain   = 3
	socksAtypIPv6     = 4
	socksVersion      = 5
	socksNoAuth       = 0
	socksNoAcceptable = 0xff
)

// serveSOCKS is the SOCKS5 proxy: no authentication, CONNECT only (BIND and UDP
// ASSOCIATE are refused), to a domain name (socks5h://) or an address (decided as an
// address literal). A denial is reply 2, "connection not allowed by ruleset"; its
// message goes to the status line and the caller's stderr, as the protocol has no
// room for text.
func (p *Proxy) serveSOCKS(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(p.headWait()))
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil || hdr[0] != socksVersion {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return
	}
	method := byte(socksNoAcceptable)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := c.Write([]byte{socksVersion, method}); err != nil || method != socksNoAuth {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	var host string
	switch req[3] {
	case socksAtypIPv4:
		var a [4]byte
		if _, err := io.ReadFull(c, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom4(a).String()
	case socksAtypIPv6:
		var a [16]byte
		if _, err := io.ReadFull(c, a[:]); err != nil {
			return
		}
		host = netip.AddrFrom16(a).String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		host = string(b)
	default:
		socksReply(c, socksAddrNotSupp)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(c, pb[:]); err != nil {
		return
	}
	p.headDone(c)
	c.SetReadDeadline(time.Time{})
	if req[1] != 1 { // CONNECT
		socksReply(c, socksCmdNotSupp)
		return
	}
	port := binary.BigEndian.Uint16(pb[:])
	if port == 0 {
		socksReply(c, socksNotAllowed)
		return
	}
	d := p.decide(host, port)
	if !d.Allow {
		p.deny(c, "socks5", d)
		socksReply(c, socksNotAllowed)
		return
	}
	up, err := p.dial(d)
	if err != nil {
		p.dialFailed(c, "socks5", d, err)
		socksReply(c, socksHostUnreach)
		return
	}
	if socksReply(c, socksOK) != nil {
		up.Close()
		return
	}
	p.relay("socks5", d, c, up, nil, nil, sniCheck, nil)
}

// socksReply sends a reply with the bound address 0.0.0.0:0 (the client has no use
// for the host side's).
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
