package cleanup

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
)

// splitView is a split index's hidden entries as git reads them
// (gitformat-index(5), "Split index"; split-index.c merge_base_index): the index's own
// (its first len(replace) entries, their names stripped, replace the shared index's
// entries at the replace bitmap's positions: named here by those), and the shared
// index's entries that are neither replaced nor deleted.
type splitView struct {
	main, shared []hiddenEntry
	path         string // the shared index, <dir>/sharedindex.<hex>
}

// readSplit reads the split index p (scanned as sc): its link extension's shared index
// name and EWAH delete and replace bitmaps, and the shared index's entries. A shared
// index that is missing, does not parse, or that the bitmaps do not fit is an error
// (git refuses such an index too).
func readSplit(p string, sc indexScan, hashLen int) (v splitView, err error) {
	link := sc.link
	v.path = filepath.Join(filepath.Dir(p), "sharedindex."+hex.EncodeToString(link[:hashLen]))
	var del, repl []uint64
	if rest := link[hashLen:]; len(rest) > 0 {
		if del, rest, err = ewahWords(rest); err == nil {
			repl, rest, err = ewahWords(rest)
		}
		if err == nil && len(rest) != 0 {
			err = errors.New("trailing bytes")
		}
		if err != nil {
			return v, fmt.Errorf("%s: its link extension (a split index): %w", p, err)
		}
	}
	replaced, err := ewahPositions(repl, math.MaxUint32, sc.entries) // each replaced by one of its entries
	if err != nil {
		return v, fmt.Errorf("%s: its replace bitmap: %w", p, err)
	}
	want := map[uint32]bool{}
	for _, h := range sc.hidden {
		if int(h.pos) < len(replaced) {
			want[replaced[h.pos]] = true
		}
	}
	f, st, err := openIndex(v.path)
	if err != nil {
		return v, fmt.Errorf("%s: its shared index: %w", p, err)
	}
	defer f.Close()
	shared, err := scanIndex(f, st.Size, hashLen, want)
	if err != nil {
		return v, fmt.Errorf("%s: %w", v.path, err)
	}
	if shared.link != nil {
		return v, fmt.Errorf("%s: a shared index with a link extension", v.path)
	}
	if n := len(replaced); n > 0 && replaced[n-1] >= shared.entries {
		return v, fmt.Errorf("%s: its replace bitmap names entry %d of a shared index of %d", p, replaced[n-1], shared.entries)
	}
	deleted, err := ewahPositions(del, shared.entries, shared.entries)
	if err != nil {
		return v, fmt.Errorf("%s: its delete bitmap: %w", p, err)
	}
	for _, h := range sc.hidden {
		if int(h.pos) < len(replaced) {
			h.name = shared.names[replaced[h.pos]]
		}
		v.main = append(v.main, h)
	}
	for _, h := range shared.hidden {
		if _, r := slices.BinarySearch(replaced, h.pos); r {
			continue
		}
		if _, d := slices.BinarySearch(deleted, h.pos); d {
			continue
		}
		v.shared = append(v.shared, h)
	}
	return v, nil
}

// ewahWords reads one EWAH bitmap as git serializes it (ewah/ewah_io.c): a 32-bit bit
// count, a 32-bit word count, the 64-bit words, and a 32-bit position of the last
// run-length word; all big-endian. It returns the words and what follows.
func ewahWords(b []byte) (words []uint64, rest []byte, err error) {
	if len(b) < 8 {
		return nil, nil, errors.New("a bitmap cut short")
	}
	n := uint64(binary.BigEndian.Uint32(b[4:8]))
	if uint64(len(b)-8) < n*8+4 {
		return nil, nil, errors.New("a bitmap cut short")
	}
	words = make([]uint64, n)
	for i := range words {
		words[i] = binary.BigEndian.Uint64(b[8+8*i:])
	}
	return words, b[8+8*n+4:], nil
}

// ewahPositions are the positions of the set bits of the EWAH words, ascending
// (ewah_each_bit): each run-length word holds a run bit (bit 0), a run of 64-bit words
// of it (bits 1-32) and a count of literal words after it (bits 33-63). A set bit at
// limit or past it is an error (an index of limit entries has no such entry), as are
// more than most set bits.
func ewahPositions(words []uint64, limit, most uint32) ([]uint32, error) {
	var out []uint32
	pos := uint64(0)
	for i := 0; i < len(words); {
		w := words[i]
		i++
		run := ((w >> 1) & 0xffffffff) * 64
		if w&1 != 0 {
			if pos+run > uint64(limit) {
				return nil, fmt.Errorf("bit %d set in a bitmap of %d entries", pos+run-1, limit)
			}
			if uint64(len(out))+run > uint64(most) {
				return nil, fmt.Errorf("more than %d bits set", most)
			}
			for k := uint64(0); k < run; k++ {
				out = append(out, uint32(pos+k))
			}
		}
		pos += run
		for lit := w >> 33; lit > 0; lit-- {
			if i >= len(words) {
				return nil, errors.New("a bitmap's literal words cut short")
			}
			lw := words[i]
			i++
			for c := uint64(0); c < 64; c++ {
				if lw>>c&1 == 0 {
					continue
				}
				if pos+c >= uint64(limit) {
					return nil, fmt.Errorf("bit %d set in a bitmap of %d entries", pos+c, limit)
				}
				if uint32(len(out)) >= most {
					return nil, fmt.Errorf("more than %d bits set", most)
				}
				out = append(out, uint32(pos+c))
			}
			pos += 64
		}
	}
	return out, nil
}
