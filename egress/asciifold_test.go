package egress

import (
	"encoding/binary"
	"testing"
)

// U+212A KELVIN SIGN lower-cases (strings.ToLower) and folds (strings.EqualFold) to
// 'k' in Go: a name, a coding or a server name holding it must not be taken for the
// ASCII one, whose bytes the server would not see.
func TestNoUnicodeFolding(t *testing.T) {
	const kelvin = "p\u212ag.test"
	p, err := NewPolicy([]string{"pkg.test:18080"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Host(kelvin, 18080); d.Allow || d.Rule != "invalid-host" {
		t.Errorf("Host(%q) = allow %v rule %q, want invalid-host", kelvin, d.Allow, d.Rule)
	}
	if p.AllowsName(kelvin) {
		t.Errorf("AllowsName(%q) = true", kelvin)
	}
	if _, err := ParseRule(kelvin + ":18080"); err == nil {
		t.Errorf("ParseRule(%q) accepted", kelvin)
	}
	if _, why := bodyFraming([]string{"Transfer-Encoding: chun\u212aed"}); why == "" {
		t.Errorf("Transfer-Encoding chun\\u212aed read as chunked")
	}
	if !equalFoldASCII("PKG.Test", "pkg.test") || equalFoldASCII(kelvin, "pkg.test") {
		t.Errorf("equalFoldASCII")
	}
	// the DNS stub refuses the name (5), as any name no rule allows
	q := []byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	q = append(q, byte(len("p\u212ag")))
	q = append(q, "p\u212ag"...)
	q = append(q, 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1)
	px := &Proxy{Policy: p}
	r := px.answer(q)
	if len(r) < 4 || r[3]&0xf != dnsRcodeRefused || binary.BigEndian.Uint16(r[6:]) != 0 {
		t.Errorf("DNS A %q: answer % x, want REFUSED", kelvin, r)
	}
}
