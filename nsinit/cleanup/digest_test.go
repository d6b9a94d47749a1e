package cleanup

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"testing"
)

// digest equals crypto/sha1 and crypto/sha256 for every length around the block and
// padding boundaries, written in pieces.
func TestDigest(t *testing.T) {
	msg := make([]byte, 300)
	for i := range msg {
		msg[i] = byte(i*7 + 3)
	}
	for n := 0; n <= len(msg); n++ {
		for _, size := range []int{20, 32} {
			d := newDigest(size)
			d.Write(msg[:n/3])
			d.Write(msg[n/3 : n])
			var want []byte
			if size == 20 {
				s := sha1.Sum(msg[:n])
				want = s[:]
			} else {
				s := sha256.Sum256(msg[:n])
				want = s[:]
			}
			if got := d.Sum(); !bytes.Equal(got, want) {
				t.Fatalf("size %d, %d bytes: %x, want %x", size, n, got, want)
			}
		}
	}
}
