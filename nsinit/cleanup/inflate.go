package cleanup

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// inflate decodes a zlib stream (RFC 1950: a 2-byte header, then RFC 1951 deflate
// blocks; the Adler-32 trailer is not checked: the caller hashes what comes out) from
// r and writes what it decodes to w, stopping with an error once more than limit bytes
// came out. Written here, after zlib's contrib/puff (canonical Huffman codes decoded
// a bit at a time), rather than taken from compress/zlib, whose flate package builds
// its encoder tables at init in every program that links this package
// (cmd/gosbx's TestStartPathDeps). Slow (a few tens of MB/s) and small: it serves the
// after-run check of loose objects, bounded by the caller.
func inflate(r io.ByteReader, w io.Writer, limit int64) error {
	s := &inflater{r: r, w: w, limit: limit}
	cmf, err := r.ReadByte()
	if err != nil {
		return err
	}
	flg, err := r.ReadByte()
	if err != nil {
		return err
	}
	if cmf&0x0f != 8 || (uint16(cmf)<<8|uint16(flg))%31 != 0 || flg&0x20 != 0 {
		return errors.New("not a zlib stream")
	}
	for {
		last, err := s.bits(1)
		if err != nil {
			return err
		}
		typ, err := s.bits(2)
		if err != nil {
			return err
		}
		switch typ {
		case 0:
			err = s.stored()
		case 1:
			err = s.codes(&fixedLen, &fixedDist)
		case 2:
			err = s.dynamic()
		default:
			err = errors.New("a deflate block of type 3")
		}
		if err != nil {
			return err
		}
		if last == 1 {
			return s.flush()
		}
	}
}

// errInflateLimit is inflate's error past its limit.
var errInflateLimit = errors.New("more data than the limit")

type inflater struct {
	r      io.ByteReader
	w      io.Writer
	limit  int64
	bitbuf uint32
	bitcnt uint
	win    [1 << 15]byte // the last 32 KiB written, for back references
	pos    int           // where the next byte goes in win
	total  int64
	start  int // where the part of win not yet written to w starts
}

func (s *inflater) bits(n uint) (uint32, error) {
	for s.bitcnt < n {
		c, err := s.r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		s.bitbuf |= uint32(c) << s.bitcnt
		s.bitcnt += 8
	}
	v := s.bitbuf & (1<<n - 1)
	s.bitbuf >>= n
	s.bitcnt -= n
	return v, nil
}

// put appends one byte to the window, flushing it to w when full.
func (s *inflater) put(b byte) error {
	if s.total++; s.total > s.limit {
		s.flush() // what was decoded up to the limit, for a caller reading a header
		return errInflateLimit
	}
	s.win[s.pos] = b
	s.pos++
	if s.pos == len(s.win) {
		if err := s.flush(); err != nil {
			return err
		}
		s.pos, s.start = 0, 0
	}
	return nil
}

func (s *inflater) flush() error {
	_, err := s.w.Write(s.win[s.start:s.pos])
	s.start = s.pos
	return err
}

func (s *inflater) stored() error {
	s.bitbuf, s.bitcnt = 0, 0
	var h [4]byte
	for i := range h {
		c, err := s.r.ReadByte()
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		h[i] = c
	}
	n := uint16(h[0]) | uint16(h[1])<<8
	if n != ^(uint16(h[2]) | uint16(h[3])<<8) {
		return errors.New("a stored block's length does not match its complement")
	}
	for ; n > 0; n-- {
		c, err := s.r.ReadByte()
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		if err := s.put(c); err != nil {
			return err
		}
	}
	return nil
}

// huffman is a canonical Huffman code: count[l] codes of length l, symbols in code
// order.
type huffman struct {
	count  [16]uint16
	symbol []uint16
}

// build makes h from the code lengths; an over-subscribed set is an error (an
// incomplete one is allowed, as puff allows it for a single distance code).
func (h *huffman) build(lengths []uint8) error {
	h.count = [16]uint16{}
	for _, l := range lengths {
		h.count[l]++
	}
	left := 1
	for l := 1; l < 16; l++ {
		left = left<<1 - int(h.count[l])
		if left < 0 {
			return errors.New("an over-subscribed Huffman code")
		}
	}
	var offs [16]uint16
	for l := 1; l < 15; l++ {
		offs[l+1] = offs[l] + h.count[l]
	}
	h.symbol = make([]uint16, len(lengths))
	for sym, l := range lengths {
		if l != 0 {
			h.symbol[offs[l]] = uint16(sym)
			offs[l]++
		}
	}
	return nil
}

func (s *inflater) decode(h *huffman) (int, error) {
	code, first, index := 0, 0, 0
	for l := 1; l < 16; l++ {
		b, err := s.bits(1)
		if err != nil {
			return 0, err
		}
		code |= int(b)
		count := int(h.count[l])
		if code-count < first {
			return int(h.symbol[index+(code-first)]), nil
		}
		index += count
		first += count
		first <<= 1
		code <<= 1
	}
	return 0, errors.New("a Huffman code past 15 bits")
}

var (
	lenBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lenExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	dstBase  = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	dstExtra = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
	// fixedLen and fixedDist are the fixed codes (RFC 1951 3.2.6), built on first use
	// (fixedOnce: cleanups of a session's requests may inflate at the same time).
	fixedLen, fixedDist huffman
	fixedOnce           sync.Once
)

func (s *inflater) codes(lc, dc *huffman) error {
	if lc == &fixedLen {
		fixedOnce.Do(buildFixed)
	}
	for {
		sym, err := s.decode(lc)
		if err != nil {
			return err
		}
		switch {
		case sym < 256:
			if err := s.put(byte(sym)); err != nil {
				return err
			}
			continue
		case sym == 256:
			return nil
		case sym > 285:
			return errors.New("a bad length code")
		}
		sym -= 257
		e, err := s.bits(uint(lenExtra[sym]))
		if err != nil {
			return err
		}
		n := int(lenBase[sym]) + int(e)
		ds, err := s.decode(dc)
		if err != nil {
			return err
		}
		if ds > 29 {
			return errors.New("a bad distance code")
		}
		e, err = s.bits(uint(dstExtra[ds]))
		if err != nil {
			return err
		}
		dist := int(dstBase[ds]) + int(e)
		if int64(dist) > s.total {
			return errors.New("a distance before the start")
		}
		for ; n > 0; n-- {
			if err := s.put(s.win[(s.pos-dist+len(s.win))%len(s.win)]); err != nil {
				return err
			}
		}
	}
}

var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

func (s *inflater) dynamic() error {
	v, err := s.bits(14)
	if err != nil {
		return err
	}
	nlen, ndist, ncode := int(v&31)+257, int(v>>5&31)+1, int(v>>10)+4
	if nlen > 286 || ndist > 30 {
		return errors.New("too many length or distance codes")
	}
	var lengths [320]uint8
	for i := 0; i < ncode; i++ {
		b, err := s.bits(3)
		if err != nil {
			return err
		}
		lengths[codeOrder[i]] = uint8(b)
	}
	var lc, dc huffman
	if err := lc.build(lengths[:19]); err != nil {
		return err
	}
	lengths = [320]uint8{}
	for i := 0; i < nlen+ndist; {
		sym, err := s.decode(&lc)
		if err != nil {
			return err
		}
		if sym < 16 {
			lengths[i] = uint8(sym)
			i++
			continue
		}
		var l uint8
		var rep uint32
		switch sym {
		case 16:
			if i == 0 {
				return errors.New("a repeat with no length before")
			}
			l = lengths[i-1]
			rep, err = s.bits(2)
			rep += 3
		case 17:
			rep, err = s.bits(3)
			rep += 3
		default:
			rep, err = s.bits(7)
			rep += 11
		}
		if err != nil {
			return err
		}
		if i+int(rep) > nlen+ndist {
			return errors.New("too many code lengths")
		}
		for ; rep > 0; rep-- {
			lengths[i] = l
			i++
		}
	}
	if lengths[256] == 0 {
		return errors.New("no end-of-block code")
	}
	if err := lc.build(lengths[:nlen]); err != nil {
		return err
	}
	if err := dc.build(lengths[nlen : nlen+ndist]); err != nil {
		return err
	}
	return s.codes(&lc, &dc)
}

// byteReader is a bufio.Reader limited to n bytes (a file's size at the check).
func byteReader(r io.Reader, n int64) *bufio.Reader {
	return bufio.NewReaderSize(io.LimitReader(r, n), 32<<10)
}

// buildFixed builds fixedLen and fixedDist.
func buildFixed() {
	var l [288]uint8
	for i := range l {
		switch {
		case i < 144:
			l[i] = 8
		case i < 256:
			l[i] = 9
		case i < 280:
			l[i] = 7
		default:
			l[i] = 8
		}
	}
	fixedLen.build(l[:])
	var d [30]uint8
	for i := range d {
		d[i] = 5
	}
	fixedDist.build(d[:])
}
