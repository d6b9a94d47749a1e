package cleanup

import (
	"encoding/binary"
	"math/bits"

	"github.com/gosbx/gosbx/internal/namehash"
)

// digest is SHA-1 (FIPS 180-4 §6.1) or SHA-256 (§6.2, internal/namehash's compression
// function), streamed: the checksum that ends
// an index file (gitformat-index(5)). Written here rather than taken from crypto/sha1
// and crypto/sha256, whose package inits (the FIPS module's) would run at every start of
// every program that links this package (cmd/gosbx's TestStartInits).
type digest struct {
	sha256 bool
	h      [8]uint32
	buf    [64]byte
	n      int    // bytes in buf
	total  uint64 // bytes written
}

// newDigest is a SHA-256 digest when size is 32, else SHA-1.
func newDigest(size int) *digest {
	d := &digest{sha256: size == 32}
	if d.sha256 {
		d.h = namehash.Init256
	} else {
		d.h = [8]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}
	}
	return d
}

func (d *digest) Write(p []byte) (int, error) {
	n := len(p)
	d.total += uint64(n)
	for len(p) > 0 {
		c := copy(d.buf[d.n:], p)
		d.n += c
		p = p[c:]
		if d.n == 64 {
			d.block()
			d.n = 0
		}
	}
	return n, nil
}

// Sum pads the message (a 1 bit, zeros, its length in bits, big-endian) and returns
// the 20 or 32 bytes of the digest; d is not used after.
func (d *digest) Sum() []byte {
	length := d.total * 8
	d.Write([]byte{0x80})
	for d.n != 56 {
		d.Write([]byte{0})
	}
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], length)
	d.Write(l[:])
	words := 5
	if d.sha256 {
		words = 8
	}
	out := make([]byte, 4*words)
	for i := 0; i < words; i++ {
		binary.BigEndian.PutUint32(out[4*i:], d.h[i])
	}
	return out
}

// block processes the 64 bytes in buf.
func (d *digest) block() {
	if d.sha256 {
		namehash.Block256(&d.h, d.buf[:])
		return
	}
	var w [80]uint32
	for i := 0; i < 16; i++ {
		w[i] = binary.BigEndian.Uint32(d.buf[4*i:])
	}
	for i := 16; i < 80; i++ {
		w[i] = bits.RotateLeft32(w[i-3]^w[i-8]^w[i-14]^w[i-16], 1)
	}
	a, b, c, dd, e := d.h[0], d.h[1], d.h[2], d.h[3], d.h[4]
	for i := 0; i < 80; i++ {
		var f, k uint32
		switch {
		case i < 20:
			f, k = b&c|^b&dd, 0x5a827999
		case i < 40:
			f, k = b^c^dd, 0x6ed9eba1
		case i < 60:
			f, k = b&c|b&dd|c&dd, 0x8f1bbcdc
		default:
			f, k = b^c^dd, 0xca62c1d6
		}
		t := bits.RotateLeft32(a, 5) + f + e + k + w[i]
		e, dd, c, b, a = dd, c, bits.RotateLeft32(b, 30), a, t
	}
	d.h[0] += a
	d.h[1] += b
	d.h[2] += c
	d.h[3] += dd
	d.h[4] += e
}
