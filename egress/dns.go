package egress

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// The DNS stub (RFC 1035 messages, one question): an A question for a name some allow
// rule names is answered with a loopback address of its own for that name (127.77.0.0/16,
// where the init's capture listeners answer), AAAA and other types of such a name with
// no answer (there is no IPv6 route), and every other name with REFUSED at once, so no
// client waits for a timeout. Nothing is asked of the host's resolver here: the proxy
// resolves when a connection is made.

const (
	dnsRcodeFormErr = 1
	dnsRcodeNotImp  = 4
	dnsRcodeRefused = 5
	dnsTypeA        = 1
	dnsClassIN      = 1
	dnsTTL          = 60
)

// dnsAddr returns the loopback address given to name, a new one the first time:
// 127.77.x.y, from 127.77.0.1, for up to 65534 names.
func (p *Proxy) dnsAddr(name string) (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.names[name]; ok {
		return a, true
	}
	if len(p.names) >= 65534 {
		return netip.Addr{}, false
	}
	if p.names == nil {
		p.names, p.addrs = map[string]netip.Addr{}, map[netip.Addr]string{}
	}
	n := len(p.names) + 1
	a := netip.AddrFrom4([4]byte{127, 77, byte(n >> 8), byte(n)})
	p.names[name], p.addrs[a] = a, name
	return a, true
}

// dnsName is the name the stub gave address a for.
func (p *Proxy) dnsName(a netip.Addr) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.addrs[a]
	return n, ok
}

func (p *Proxy) serveDNS(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp := p.answer(buf[:n]); resp != nil {
			pc.WriteTo(resp, from)
		}
	}
}

// serveDNSStream serves DNS over TCP: messages with a two-byte length.
func (p *Proxy) serveDNSStream(c net.Conn) {
	for {
		c.SetReadDeadline(time.Now().Add(headTimeout))
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := p.answer(q)
		if resp == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...)); err != nil {
			return
		}
	}
}

// answer is the response to the query q, nil for a message that is not a query.
func (p *Proxy) answer(q []byte) []byte {
	if len(q) < 12 || q[2]&0x80 != 0 {
		return nil
	}
	id, flags := q[:2], binary.BigEndian.Uint16(q[2:])
	reply := func(rcode int, question []byte, answers ...[]byte) []byte {
		r := append([]byte(nil), id...)
		// QR, the query's opcode and RD, RA, the rcode
		r = binary.BigEndian.AppendUint16(r, 0x8000|flags&0x7900|0x0080|uint16(rcode))
		qd := 0
		if question != nil {
			qd = 1
		}
		r = binary.BigEndian.AppendUint16(r, uint16(qd))
		r = binary.BigEndian.AppendUint16(r, uint16(len(answers)))
		r = append(r, 0, 0, 0, 0)
		r = append(r, question...)
		for _, a := range answers {
			r = append(r, a...)
		}
		return r
	}
	if flags>>11&0xf != 0 {
		return reply(dnsRcodeNotImp, nil)
	}
	if binary.BigEndian.Uint16(q[4:]) != 1 {
		return reply(dnsRcodeFormErr, nil)
	}
	name, end, ok := questionName(q, 12)
	if !ok || len(q) < end+4 {
		return reply(dnsRcodeFormErr, nil)
	}
	question := q[12 : end+4]
	qtype, qclass := binary.BigEndian.Uint16(q[end:]), binary.BigEndian.Uint16(q[end+2:])
	if p.Hostname != "" && strings.EqualFold(name, p.Hostname) || name == "localhost" {
		if qtype != dnsTypeA || qclass != dnsClassIN {
			return reply(0, question)
		}
		return reply(0, question, aRecord(netip.AddrFrom4([4]byte{127, 0, 0, 1})))
	}
	if !p.Policy.AllowsName(name) {
		d := p.Policy.Host(name, 0)
		if qtype == dnsTypeA {
			p.deny("dns", d)
		}
		return reply(dnsRcodeRefused, question)
	}
	if qtype != dnsTypeA || qclass != dnsClassIN {
		return reply(0, question) // no data: no IPv6 route, no other records
	}
	a, ok := p.dnsAddr(strings.ToLower(name))
	if !ok {
		return reply(dnsRcodeRefused, question)
	}
	return reply(0, question, aRecord(a))
}

// aRecord is an answer for the question's name (a pointer to it) with address a.
func aRecord(a netip.Addr) []byte {
	rr := []byte{0xc0, 12, 0, dnsTypeA, 0, dnsClassIN}
	rr = binary.BigEndian.AppendUint32(rr, dnsTTL)
	b := a.As4()
	return append(rr, 0, 4, b[0], b[1], b[2], b[3])
}

// questionName reads the uncompressed name at off; it returns the name (dotted, lower
// case) and the offset after it.
func questionName(q []byte, off int) (string, int, bool) {
	var labels []string
	for {
		if off >= len(q) {
			return "", 0, false
		}
		l := int(q[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(q) {
			return "", 0, false
		}
		labels = append(labels, strings.ToLower(string(q[off:off+l])))
		off += l
	}
	return strings.Join(labels, "."), off, len(labels) > 0
}
