package egress

import (
	"container/list"
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

// The stub's name table: at most maxDNSNames names, the least recently asked for (or
// connected to) given up first when a new one comes, and any unused for dnsNameIdle
// dropped, so that a flood of names costs the owner a bounded table and never stops
// new allowed names from being answered. Addresses are handed out in turn over
// 127.77.0.1-127.77.255.254 (65534), so a given-up name's address is given again only
// after some 61,000 other new names: until then a client that kept it (past the
// answer's 60 s TTL) still reaches its name.
const (
	maxDNSNames = 4096
	dnsNameIdle = 10 * time.Minute
)

// dnsNames is the stub's table: a name's address, and back, in least-recently-used
// order (lru's front the most recent).
type dnsNames struct {
	byName map[string]*list.Element
	byAddr map[netip.Addr]*list.Element
	lru    list.List // of *dnsEntry
	next   uint16    // the last address handed out: 127.77.next>>8.next&0xff
}

type dnsEntry struct {
	name string
	addr netip.Addr
	used time.Time
}

// dnsAddr returns the loopback address given to name, a new one the first time.
func (p *Proxy) dnsAddr(name string) netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := &p.names
	if t.byName == nil {
		t.byName, t.byAddr = map[string]*list.Element{}, map[netip.Addr]*list.Element{}
	}
	now := time.Now()
	t.expire(now)
	if el, ok := t.byName[name]; ok {
		el.Value.(*dnsEntry).used = now
		t.lru.MoveToFront(el)
		return el.Value.(*dnsEntry).addr
	}
	if t.lru.Len() >= maxDNSNames {
		t.remove(t.lru.Back())
	}
	var a netip.Addr
	for { // at most maxDNSNames+1 steps: fewer than that are in use
		t.next++
		if t.next == 0 || t.next == 0xffff {
			continue // 127.77.0.0 and 127.77.255.255
		}
		a = netip.AddrFrom4([4]byte{127, 77, byte(t.next >> 8), byte(t.next)})
		if _, used := t.byAddr[a]; !used {
			break
		}
	}
	el := t.lru.PushFront(&dnsEntry{name, a, now})
	t.byName[name], t.byAddr[a] = el, el
	return a
}

// expire drops the names unused for dnsNameIdle (from the back of the list).
func (t *dnsNames) expire(now time.Time) {
	for el := t.lru.Back(); el != nil && now.Sub(el.Value.(*dnsEntry).used) > dnsNameIdle; el = t.lru.Back() {
		t.remove(el)
	}
}

func (t *dnsNames) remove(el *list.Element) {
	e := t.lru.Remove(el).(*dnsEntry)
	delete(t.byName, e.name)
	delete(t.byAddr, e.addr)
}

// dnsName is the name the stub gave address a for (a connection to it counts as a use).
func (p *Proxy) dnsName(a netip.Addr) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	el, ok := p.names.byAddr[a]
	if !ok {
		return "", false
	}
	el.Value.(*dnsEntry).used = time.Now()
	p.names.lru.MoveToFront(el)
	return el.Value.(*dnsEntry).name, true
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
		c.SetReadDeadline(time.Now().Add(p.headWait()))
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
	if p.Hostname != "" && equalFoldASCII(name, p.Hostname) || name == "localhost" {
		if qtype != dnsTypeA || qclass != dnsClassIN {
			return reply(0, question)
		}
		return reply(0, question, aRecord(netip.AddrFrom4([4]byte{127, 0, 0, 1})))
	}
	if !p.Policy.AllowsName(name) {
		d := p.Policy.Host(name, 0)
		if qtype == dnsTypeA {
			p.deny(nil, "dns", d)
		}
		return reply(dnsRcodeRefused, question)
	}
	if qtype != dnsTypeA || qclass != dnsClassIN {
		return reply(0, question) // no data: no IPv6 route, no other records
	}
	return reply(0, question, aRecord(p.dnsAddr(lowerASCII(name))))
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
		labels = append(labels, lowerASCII(string(q[off:off+l])))
		off += l
	}
	return strings.Join(labels, "."), off, len(labels) > 0
}
