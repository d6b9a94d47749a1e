package egress

import (
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// query is an A question for name, as a stub resolver sends it.
func query(name string) []byte {
	q := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	l := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			q = append(append(q, byte(i-l)), name[l:i]...)
			l = i + 1
		}
	}
	return append(q, 0, 0, dnsTypeA, 0, dnsClassIN)
}

// answerA is the address of the stub's answer to an A question for name, or the
// rcode when it has none.
func answerA(t *testing.T, p *Proxy, name string) (netip.Addr, int) {
	t.Helper()
	q := query(name)
	r := p.answer(q)
	if len(r) < len(q)+16 {
		return netip.Addr{}, int(r[3] & 0xf)
	}
	a, _ := netip.AddrFromSlice(r[len(r)-4:])
	return a, 0
}

// A flood of allowed names (the attack review's F3: 66,000 names grew the owner by
// 41 MB and then every new name was REFUSED) keeps the table at maxDNSNames, the names
// in use stay, and a new allowed name is still answered.
func TestDNSNameTableBounded(t *testing.T) {
	pol, _ := NewPolicy([]string{"*.x.test", "keep.test"}, nil)
	p := &Proxy{Policy: pol}
	keep, rc := answerA(t, p, "keep.test")
	if rc != 0 || !keep.IsLoopback() {
		t.Fatalf("keep.test: %v rcode %d", keep, rc)
	}
	given := map[netip.Addr]string{}
	for i := 0; i < 70000; i++ {
		name := "n" + strconv.Itoa(i) + ".x.test"
		a, rc := answerA(t, p, name)
		if rc != 0 {
			t.Fatalf("%s (after %d names): rcode %d", name, i, rc)
		}
		if i%1000 == 0 { // keep.test in use all along
			if again, _ := answerA(t, p, "keep.test"); again != keep {
				t.Fatalf("keep.test after %d names: %v, was %v", i, again, keep)
			}
		}
		if i > 70000-maxDNSNames+10 {
			if other, dup := given[a]; dup {
				t.Fatalf("%s given %v, which %s holds", name, a, other)
			}
			given[a] = name
		}
	}
	if n := p.names.lru.Len(); n != maxDNSNames || len(p.names.byName) != n || len(p.names.byAddr) != n {
		t.Errorf("table of %d names (%d, %d), want %d", n, len(p.names.byName), len(p.names.byAddr), maxDNSNames)
	}
	if _, ok := p.dnsName(keep); !ok {
		t.Errorf("keep.test's address given up though in use")
	}
	if _, ok := p.names.byName["n0.x.test"]; ok {
		t.Errorf("the least recently used name kept")
	}
	if a, rc := answerA(t, p, "new.x.test"); rc != 0 || !a.IsLoopback() {
		t.Errorf("a new allowed name after the flood: %v rcode %d", a, rc)
	}
}

// A name unused for dnsNameIdle is dropped.
func TestDNSNameAgesOut(t *testing.T) {
	pol, _ := NewPolicy([]string{"*.x.test"}, nil)
	p := &Proxy{Policy: pol}
	old, _ := answerA(t, p, "old.x.test")
	answerA(t, p, "recent.x.test")
	p.names.byName["old.x.test"].Value.(*dnsEntry).used = time.Now().Add(-dnsNameIdle - time.Second)
	p.names.lru.MoveToBack(p.names.byName["old.x.test"])
	answerA(t, p, "new.x.test")
	if _, ok := p.dnsName(old); ok || p.names.lru.Len() != 2 {
		t.Errorf("an idle name kept: %d names", p.names.lru.Len())
	}
}
