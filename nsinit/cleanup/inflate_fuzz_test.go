package cleanup

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"errors"
	"io"
	"testing"
)

// inflate reads what a sandboxed command wrote, on the host: for any input it must end
// (an error or the data) without a panic, within its limit, and whatever it returns
// without error must be what compress/zlib decodes from the same stream (zlib checks
// the Adler-32 trailer, inflate does not: only zlib's successes are compared).
func FuzzInflate(f *testing.F) {
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly} {
		for _, data := range [][]byte{nil, []byte("blob 5\x00hello"), bytes.Repeat([]byte("abcabcabd"), 5000)} {
			var b bytes.Buffer
			w, _ := zlib.NewWriterLevel(&b, level)
			w.Write(data)
			w.Close()
			f.Add(b.Bytes())
		}
	}
	f.Add([]byte{0x78, 0x9c, 0x07}) // a block of type 3
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, in []byte) {
		var got bytes.Buffer
		err := inflate(bufio.NewReader(bytes.NewReader(in)), &got, limit)
		if int64(got.Len()) > limit {
			t.Fatalf("inflate wrote %d bytes past its limit %d", got.Len(), limit)
		}
		zr, zerr := zlib.NewReader(bytes.NewReader(in))
		if zerr != nil {
			return
		}
		want, zerr := io.ReadAll(io.LimitReader(zr, limit+1))
		if zerr != nil || len(want) > limit {
			return
		}
		if err != nil && !errors.Is(err, errInflateLimit) {
			t.Fatalf("zlib decodes %d bytes, inflate fails: %v", len(want), err)
		}
		if err == nil && !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("inflate and zlib differ: %d vs %d bytes", got.Len(), len(want))
		}
	})
}
