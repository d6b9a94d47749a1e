package cleanup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
)

// maxDeltaDepth bounds a pack's delta chains: git caps pack.depth at 4095 and reads
// any depth; a deeper chain leaves its pack unchecked (reported), never "forged"
// (attack review 32 F3: a legal chain of 101 once the cache was full was moved aside).
const maxDeltaDepth = 4095

// maxPackCache bounds the objects kept while a pack is checked, so that a delta
// chain's bases are inflated once, not once per object on it (without it, this
// repository's own 3.8 MB pack of 9 703 objects took the whole 256 MiB budget).
// A variable so that a test can play a full cache (attack review 32 F3).
var maxPackCache = 64 << 20

// maxPackHashed bounds the bytes deltas rebuild (and hashed) in one run, all packs
// together (attack review 32 F4: per pack, hard links of one 1 KB pack cost hours): the
// content of every version of every file, which for a repository's whole history is
// far more than what is inflated (this repository: 9 703 objects, over 256 MiB
// rebuilt, a 3.8 MB pack). Hashing and copying run at some 400 MB/s here, inflating at
// 20-30 MB/s: the inflated bytes take the shared budget, the rebuilt ones this one.
const maxPackHashed = 2 << 30

// maxPackObject bounds one pack object held in memory (inflated, or rebuilt from its
// delta): a larger one leaves its pack unchecked (reported), never allocated.
const maxPackObject = 64 << 20

// errPackBudget is verifyPack's error past its bounds: the pack is reported, not checked.
var errPackBudget = errors.New("over budget")

// errPackObject is an object over maxPackObject: it is not checked, the others are.
var errPackObject = errors.New("an object over 64 MiB")

// packObj is one object of a pack: its offset, and its position in the index.
type packObj struct {
	off uint64
	pos int
}

// verifyPack checks the pack idx (a v2 .idx, read whole) against its pack file pack
// (gitformat-pack(5)): the pack holds as many objects as the index names, and each
// object at an index entry's offset, inflated (delta chains resolved within the pack,
// at most maxDeltaDepth deep), hashes to that entry's name (hashLen bytes). Every byte
// inflated or read is taken from *budget, every object from *count, every byte a delta
// rebuilds from *hashed; past any, errPackBudget.
// It returns why the pack is bad ("" good): only a proven hash mismatch, an object
// whose content does not hash to the name its index gives it. Anything else it cannot
// verify (a v1 index, a malformed entry, a bound reached) is an error: the pack is
// reported unchecked, never moved aside, so that a check that could not finish never
// makes the user's objects unreadable (attack review 32 F3). For a pack's index that
// names an object with other content than the pack holds (attack review 31 F4: git
// reads a pack object unhashed, before loose ones).
func verifyPack(idx []byte, pack *os.File, packSize int64, hashLen int, budget *int64, count *int, hashed *int64) (string, error) {
	if len(idx) < 8+1024 || !bytes.Equal(idx[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return "", errors.New("its index is not a version 2 pack index")
	}
	n := int(binary.BigEndian.Uint32(idx[8+1020:]))
	names, crcs := 8+1024, 8+1024+n*hashLen
	offs := crcs + n*4
	large := offs + n*4
	if n < 0 || large+2*hashLen > len(idx) {
		return "", errors.New("its index is shorter than its fan-out says")
	}
	if *count += n; *count > MaxVerifyObjects {
		return "", errPackBudget
	}
	var hdr [12]byte
	if _, err := pack.ReadAt(hdr[:], 0); err != nil {
		return "", err
	}
	if string(hdr[:4]) != "PACK" || int(binary.BigEndian.Uint32(hdr[8:])) != n {
		return "", errors.New("its pack file does not hold the objects its index names")
	}
	objs := make([]packObj, n)
	byName := make(map[string]int, n)
	for i := range n {
		o := uint64(binary.BigEndian.Uint32(idx[offs+4*i:]))
		if o&0x80000000 != 0 {
			j := large + 8*int(o&0x7fffffff)
			if j+8 > len(idx)-2*hashLen {
				return "", errors.New("its index's large offset table is short")
			}
			o = binary.BigEndian.Uint64(idx[j:])
		}
		if o < 12 || o >= uint64(packSize-int64(hashLen)) {
			return "", errors.New("its index names an offset outside the pack")
		}
		objs[i] = packObj{off: o, pos: i}
		byName[string(idx[names+i*hashLen:names+(i+1)*hashLen])] = i
	}
	sorted := append([]packObj(nil), objs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a].off < sorted[b].off })
	end := map[uint64]uint64{}
	for i, o := range sorted {
		e := uint64(packSize - int64(hashLen))
		if i+1 < len(sorted) {
			e = sorted[i+1].off
		}
		if e <= o.off {
			return "", errors.New("two index entries name one offset")
		}
		end[o.off] = e
	}
	p := &packReader{f: pack, hashLen: hashLen, hashed: hashed, end: end, byName: byName, objs: objs, budget: budget}
	// an object that cannot be checked (over maxPackObject, a chain too deep, one that
	// does not inflate) is skipped, and the rest still checked: an object git never
	// reads, put first, no longer leaves a forged one after it unchecked (attack review
	// 32 F1); only the run's shared budget stops the pass
	var skipped error
	for _, o := range sorted { // offset order: an OFS_DELTA's base comes first
		typ, data, err := p.object(o.off, 0)
		if errors.Is(err, errPackBudget) {
			return "", err
		}
		if err != nil {
			if skipped == nil {
				skipped = err
			}
			continue
		}
		d := newDigest(hashLen)
		d.Write([]byte(typ + " " + strconv.Itoa(len(data)) + "\x00"))
		d.Write(data)
		if !bytes.Equal(d.Sum(), idx[names+o.pos*hashLen:names+(o.pos+1)*hashLen]) {
			return fmt.Sprintf("the object at offset %d does not hash to the name its index gives it", o.off), nil
		}
	}
	return "", skipped
}

// packReader reads a pack's objects by offset; end holds where each ends (the next
// object's offset, or the trailer).
type packReader struct {
	f       *os.File
	hashLen int
	end     map[uint64]uint64
	byName  map[string]int
	objs    []packObj
	budget  *int64
	// cache holds objects read (type and content by offset), up to maxPackCache bytes
	cache      map[uint64]packed
	cacheBytes int
	// hashed is what deltas may still rebuild (maxPackHashed, for the whole run)
	hashed *int64
}

// packed is an object read from a pack: its type and content.
type packed struct {
	typ  string
	data []byte
}

var packTypes = [...]string{1: "commit", 2: "tree", 3: "blob", 4: "tag"}

// object reads the object at off: its type and content, deltas applied.
func (p *packReader) object(off uint64, depth int) (string, []byte, error) {
	if depth > maxDeltaDepth {
		return "", nil, fmt.Errorf("a delta chain deeper than %d", maxDeltaDepth)
	}
	if c, ok := p.cache[off]; ok {
		return c.typ, c.data, nil
	}
	typ, data, err := p.read(off, depth)
	if err == nil && p.cacheBytes+len(data) <= maxPackCache {
		if p.cache == nil {
			p.cache = map[uint64]packed{}
		}
		p.cache[off] = packed{typ, data}
		p.cacheBytes += len(data)
	}
	return typ, data, err
}

// read reads the object at off (object's work, without the cache).
func (p *packReader) read(off uint64, depth int) (string, []byte, error) {
	e, ok := p.end[off]
	if !ok {
		return "", nil, fmt.Errorf("a delta base at offset %d that its index does not name", off)
	}
	r := byteReader(io.NewSectionReader(p.f, int64(off), int64(e-off)), int64(e-off))
	c, err := r.ReadByte()
	if err != nil {
		return "", nil, err
	}
	typ, size, shift := int(c>>4)&7, uint64(c&15), 4
	for c&0x80 != 0 {
		if c, err = r.ReadByte(); err != nil || shift > 56 {
			return "", nil, errors.New("a bad object header")
		}
		size |= uint64(c&0x7f) << shift
		shift += 7
	}
	var base uint64
	switch typ {
	case 6: // OFS_DELTA
		c, err := r.ReadByte()
		if err != nil {
			return "", nil, err
		}
		rel := uint64(c & 127)
		for i := 0; c&128 != 0; i++ {
			if c, err = r.ReadByte(); err != nil || i > 8 {
				return "", nil, errors.New("a bad delta offset")
			}
			rel = (rel+1)<<7 | uint64(c&127)
		}
		if rel == 0 || rel > off {
			return "", nil, errors.New("a delta offset outside the pack")
		}
		base = off - rel
	case 7: // REF_DELTA
		oid := make([]byte, p.hashLen)
		if _, err := io.ReadFull(r, oid); err != nil {
			return "", nil, err
		}
		i, ok := p.byName[string(oid)]
		if !ok {
			return "", nil, errors.New("a delta on an object outside the pack")
		}
		base = p.objs[i].off
	case 1, 2, 3, 4:
	default:
		return "", nil, fmt.Errorf("an object of type %d", typ)
	}
	// what is read is charged as well as what is inflated (attack review 32 F8)
	if size > maxPackObject {
		return "", nil, errPackObject
	}
	if int64(size)+int64(e-off) > *p.budget {
		return "", nil, errPackBudget
	}
	var out bytes.Buffer
	err = inflate(r, &out, int64(size))
	*p.budget -= int64(out.Len()) + int64(e-off)
	if err != nil || uint64(out.Len()) != size {
		// git inflates from the offset on, whatever the next entry's offset: an object
		// rewritten in place over the ones after it (attack review 32 F7) is read as
		// git reads it, up to the trailer, so that its hash can prove it forged
		if out, err = p.readToEnd(off, size); err != nil {
			return "", nil, err
		}
	}
	if typ <= 4 {
		return packTypes[typ], out.Bytes(), nil
	}
	btyp, bdata, err := p.object(base, depth+1)
	if err != nil {
		return "", nil, err
	}
	data, err := applyDelta(bdata, out.Bytes(), p.hashed)
	if err != nil {
		return "", nil, fmt.Errorf("the delta at offset %d: %w", off, err)
	}
	return btyp, data, nil
}

// readToEnd inflates the object data (size bytes) whose header is at off, reading up to
// the pack's trailer, every byte of that charged to the budget first.
func (p *packReader) readToEnd(off, size uint64) (bytes.Buffer, error) {
	var out bytes.Buffer
	last := uint64(0)
	for _, e := range p.end {
		last = max(last, e)
	}
	if int64(size)+int64(last-off) > *p.budget {
		return out, errPackBudget
	}
	*p.budget -= int64(last - off)
	r := byteReader(io.NewSectionReader(p.f, int64(off), int64(last-off)), int64(last-off))
	c, err := r.ReadByte()
	typ := c >> 4 & 7
	for err == nil && c&0x80 != 0 { // the header, read before
		c, err = r.ReadByte()
	}
	if err == nil && typ == 6 {
		for c, err = r.ReadByte(); err == nil && c&128 != 0; c, err = r.ReadByte() {
		}
	} else if err == nil && typ == 7 {
		_, err = io.ReadFull(r, make([]byte, p.hashLen))
	}
	if err == nil {
		err = inflate(r, &out, int64(size))
	}
	*p.budget -= int64(out.Len())
	if err != nil || uint64(out.Len()) != size {
		return out, fmt.Errorf("the object at offset %d does not inflate to its size", off)
	}
	return out, nil
}

// applyDelta applies git's delta d to base (gitformat-pack(5), "Deltified
// representation"), charging the result to *budget.
func applyDelta(base, d []byte, budget *int64) ([]byte, error) {
	varint := func() (uint64, error) {
		var v uint64
		for shift := 0; shift < 64; shift += 7 {
			if len(d) == 0 {
				return 0, io.ErrUnexpectedEOF
			}
			c := d[0]
			d = d[1:]
			v |= uint64(c&0x7f) << shift
			if c&0x80 == 0 {
				return v, nil
			}
		}
		return 0, errors.New("a size too large")
	}
	src, err := varint()
	if err != nil {
		return nil, err
	}
	dst, err := varint()
	if err != nil {
		return nil, err
	}
	if src != uint64(len(base)) {
		return nil, errors.New("its base size is not its base's")
	}
	if dst > maxPackObject {
		return nil, errPackObject
	}
	if int64(dst) > *budget {
		return nil, errPackBudget
	}
	*budget -= int64(dst)
	out := make([]byte, 0, dst)
	for len(d) > 0 {
		c := d[0]
		d = d[1:]
		switch {
		case c&0x80 != 0:
			var off, n uint64
			for i := 0; i < 7; i++ {
				if c&(1<<i) == 0 {
					continue
				}
				if len(d) == 0 {
					return nil, io.ErrUnexpectedEOF
				}
				if i < 4 {
					off |= uint64(d[0]) << (8 * i)
				} else {
					n |= uint64(d[0]) << (8 * (i - 4))
				}
				d = d[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || uint64(len(out))+n > dst {
				return nil, errors.New("a copy outside its base or result")
			}
			out = append(out, base[off:off+n]...)
		case c != 0:
			if int(c) > len(d) || uint64(len(out))+uint64(c) > dst {
				return nil, errors.New("an insert past its end")
			}
			out = append(out, d[:c]...)
			d = d[c:]
		default:
			return nil, errors.New("a reserved opcode")
		}
	}
	if uint64(len(out)) != dst {
		return nil, errors.New("its result is not its size")
	}
	return out, nil
}
