package cleanup

import (
	"encoding/binary"
	"math/bits"
)

// digest is SHA-1 (FIPS 180-4 §6.1) or SHA-256 (§6.2), streamed: the checksum that ends
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
		d.h = [8]uint32{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19}
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

var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// block processes the 64 bytes in buf.
func (d *digest) block() {
	if d.sha256 {
		var w [64]uint32
		for i := 0; i < 16; i++ {
			w[i] = binary.BigEndian.Uint32(d.buf[4*i:])
		}
		for i := 16; i < 64; i++ {
			s0 := bits.RotateLeft32(w[i-15], -7) ^ bits.RotateLeft32(w[i-15], -18) ^ w[i-15]>>3
			s1 := bits.RotateLeft32(w[i-2], -17) ^ bits.RotateLeft32(w[i-2], -19) ^ w[i-2]>>10
			w[i] = w[i-16] + s0 + w[i-7] + s1
		}
		a, b, c, dd, e, f, g, h := d.h[0], d.h[1], d.h[2], d.h[3], d.h[4], d.h[5], d.h[6], d.h[7]
		for i := 0; i < 64; i++ {
			t1 := h + (bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)) + (e&f ^ ^e&g) + sha256K[i] + w[i]
			t2 := (bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)) + (a&b ^ a&c ^ b&c)
			h, g, f, e, dd, c, b, a = g, f, e, dd+t1, c, b, a, t1+t2
		}
		for i, v := range [8]uint32{a, b, c, dd, e, f, g, h} {
			d.h[i] += v
		}
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
