package namehash

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"
)

// TestSum256: the digests are crypto/sha256's for every length across the padding's
// block boundaries (0-300 bytes) and for random inputs up to 10 KB, and FIPS 180-4's
// examples ("abc", the 448-bit message).
func TestSum256(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	} {
		if got := Sum256([]byte(tc.in)); hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("Sum256(%q) = %x; want %s", tc.in, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 10000)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	check := func(b []byte) {
		if got, want := Sum256(b), sha256.Sum256(b); got != want {
			t.Fatalf("Sum256 of %d bytes = %x; crypto/sha256 %x", len(b), got, want)
		}
	}
	for n := 0; n <= 300; n++ {
		check(buf[:n])
	}
	for range 200 {
		off := r.IntN(len(buf))
		check(buf[off : off+r.IntN(len(buf)-off+1)])
	}
}
