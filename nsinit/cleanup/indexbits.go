package cleanup

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// MaxIndex is the largest index file, in bytes, whose entries' bits are read.
const MaxIndex = 512 << 20

// maxIndexName bounds one path name of an index entry.
const maxIndexName = 64 << 10

// Index entry bits that hide a tracked file's change from git status and git diff
// (gitformat-index(5)): assume-valid in the flags, skip-worktree in the extended flags.
const (
	flagAssumeValid  = 0x8000
	flagExtended     = 0x4000
	extSkipWorktree  = 0x4000
	hiddenAssume     = "assume-unchanged"
	hiddenSkip       = "skip-worktree"
	indexHeaderBytes = 12
)

// hiddenEntry is one index entry with a hiding bit: its name, which bits, and the file
// offsets of its flags and extended flags (-1 when it has none).
type hiddenEntry struct {
	name           string
	pos            uint32 // its place among the index's entries, from 0
	assume, skip   bool
	flagsAt, extAt int64
	flags, ext     uint16
}

// indexScan is what scanIndex reads of an index file.
type indexScan struct {
	hidden  []hiddenEntry
	entries uint32            // how many entries it holds
	names   map[uint32]string // the names of the entries at the positions asked for
	// link is the content of its "link" extension (a split index, core.splitIndex:
	// the shared index's name, then its delete and replace bitmaps), at file offset
	// linkAt; nil when it has none.
	link   []byte
	linkAt int64
}

// maxLinkExt bounds the link extension read into memory (its two bitmaps are
// EWAH-compressed: a few bytes for a typical split index, at most about a bit per entry
// each, so 8 MiB serves 32 million entries); the cleanup may run under the command's
// memory limit.
const maxLinkExt = 8 << 20

// scanIndex streams the index file f (size bytes, hashLen the object name length: 20
// for SHA-1, 32 for SHA-256) and returns its entries with a hiding bit, the names of
// the entries at the positions want holds, and its link extension (a split index).
func scanIndex(f io.Reader, size int64, hashLen int, want map[uint32]bool) (sc indexScan, err error) {
	return scanIndexTo(f, size, hashLen, want, nil)
}

// scanIndexTo is scanIndex that, when rw is given, also writes the index anew to rw.w
// as it reads it (trustless: see indexRewrite), all but its trailing checksum.
func scanIndexTo(f io.Reader, size int64, hashLen int, want map[uint32]bool, rw *indexRewrite) (sc indexScan, err error) {
	end := size - int64(hashLen)
	if end < indexHeaderBytes {
		return sc, errors.New("not an index")
	}
	br := bufio.NewReaderSize(io.LimitReader(f, end), 64<<10)
	off := int64(0)
	next := func(n int) ([]byte, error) {
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("at byte %d: %w", off, err)
		}
		off += int64(n)
		return b, nil
	}
	emit := func(b []byte) {
		if rw != nil {
			rw.w.Write(b)
		}
	}
	hdr, err := next(indexHeaderBytes)
	if err != nil {
		return sc, err
	}
	if string(hdr[:4]) != "DIRC" {
		return sc, errors.New("not an index")
	}
	ver, n := binary.BigEndian.Uint32(hdr[4:8]), binary.BigEndian.Uint32(hdr[8:12])
	sc.entries = n
	if ver < 2 || ver > 4 {
		return sc, fmt.Errorf("index version %d", ver)
	}
	if int64(n) > (end-indexHeaderBytes)/int64(40+hashLen+4) {
		return sc, fmt.Errorf("its header counts %d entries, more than its %d bytes can hold", n, size)
	}
	emit(hdr)
	fixed := 40 + hashLen + 2
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		e, err := next(fixed)
		if err != nil {
			return sc, err
		}
		h := hiddenEntry{pos: i, flagsAt: start + int64(fixed-2), extAt: -1}
		h.flags = binary.BigEndian.Uint16(e[fixed-2:])
		size := fixed
		var x []byte
		if h.flags&flagExtended != 0 {
			if ver < 3 {
				return sc, errors.New("extended flags in a version 2 index")
			}
			if x, err = next(2); err != nil {
				return sc, err
			}
			h.extAt, h.ext = off-2, binary.BigEndian.Uint16(x)
			size += 2
		}
		if rw != nil {
			rw.entry(e, x, i)
		}
		if ver == 4 {
			strip, err := gitVarint(countingReader{br, &off, rw})
			if err != nil || strip > uint64(len(prev)) {
				return sc, errors.New("a bad name prefix")
			}
			rest, err := br.ReadSlice(0)
			if err != nil || len(rest) > maxIndexName {
				return sc, fmt.Errorf("a name without its end at byte %d", off)
			}
			emit(rest)
			off += int64(len(rest))
			h.name = prev[:len(prev)-int(strip)] + string(rest[:len(rest)-1])
		} else {
			l := int(h.flags & 0xfff)
			if l == 0xfff {
				rest, err := br.ReadSlice(0)
				if err != nil {
					return sc, fmt.Errorf("a name without its end at byte %d", off)
				}
				emit(rest)
				off += int64(len(rest))
				h.name = string(rest[:len(rest)-1])
				l = len(h.name)
				pad, err := next((size+l+8)&^7 - size - l - 1)
				if err != nil {
					return sc, err
				}
				emit(pad)
			} else {
				b, err := next(l)
				if err != nil {
					return sc, err
				}
				h.name = string(b)
				pad, err := next((size+l+8)&^7 - size - l)
				if err != nil {
					return sc, err
				}
				emit(b)
				emit(pad)
			}
		}
		prev = h.name
		if want[i] {
			if sc.names == nil {
				sc.names = map[uint32]string{}
			}
			sc.names[i] = h.name
		}
		h.assume, h.skip = h.flags&flagAssumeValid != 0, h.ext&extSkipWorktree != 0
		if h.assume || h.skip {
			sc.hidden = append(sc.hidden, h)
		}
	}
	for off < end {
		x, err := next(8)
		if err != nil {
			return sc, err
		}
		sz := int64(binary.BigEndian.Uint32(x[4:8]))
		if sz > end-off {
			return sc, fmt.Errorf("extension %q runs past the end", x[:4])
		}
		if string(x[:4]) == "link" {
			if sz > maxLinkExt || sz < int64(hashLen) {
				return sc, fmt.Errorf("a link extension of %d bytes", sz)
			}
			link, err := next(int(sz))
			if err != nil {
				return sc, err
			}
			if allZero(link[:hashLen]) {
				// a null base: git reads the index alone (read-cache.c read_index_from,
				// is_null_oid), so it is not split; written anew without it (attack
				// review 31 F7: the cleanup took it for a split index it could not read)
				if rw != nil {
					rw.changed = true
				}
				continue
			}
			sc.linkAt, sc.link = off, link
			if rw != nil {
				emit(x)
				if rw.link != nil {
					emit(rw.link)
					emit(sc.link[len(rw.link):])
				} else {
					emit(sc.link)
				}
			}
			continue
		}
		if rw != nil && keptExtension(string(x[:4])) {
			emit(x)
			if _, err := io.CopyN(rw.w, br, sz); err != nil {
				return sc, err
			}
		} else {
			if rw != nil {
				rw.changed = true // an extension dropped
			}
			if _, err := br.Discard(int(sz)); err != nil {
				return sc, err
			}
		}
		off += sz
	}
	return sc, nil
}

// keptExtension reports whether an index extension (gitformat-index(5)) is kept when
// the index is written anew after a run: those that cache a conclusion git would draw
// from the files (TREE, the cache tree; UNTR, the untracked cache; FSMN, the fsmonitor
// token) are dropped, and git, not finding them, looks again; so are EOIE and IEOT,
// the end-of-entries marker and offset table, whose hash over the extensions' headers
// would no longer hold, and any other optional one (a capital first letter: git
// ignores those it does not know). Kept: REUC (resolve undo: stages git shows again on
// git checkout -m, not trust in a file) and every required one (lowercase: link, sdir,
// which git refuses an index without understanding).
func keptExtension(sig string) bool {
	return sig == "REUC" || (sig[0] < 'A' || sig[0] > 'Z')
}

// indexRewrite is how scanIndexTo writes an index anew, trustless: every entry's
// cached stat data (ctime, mtime, dev, ino and size; gitformat-index(5)) is zeroed, so
// the host's git compares each file's content with its blob rather than trusting a
// stat match (as for a racily clean entry, read-cache.c ce_smudge_racily_clean_entry:
// a zero size makes git hash the file), the bits clearFlags and clearExt name (by
// entry position) are cleared, extensions are kept as keptExtension says, and link
// (when set) replaces the start of the link extension (the shared index's name).
type indexRewrite struct {
	w                    io.Writer
	clearFlags, clearExt map[uint32]uint16
	link                 []byte
	// changed is set when the written index differs from the one read
	changed bool
}

// entry writes one entry's fixed part e (and its extended flags x, when it has them),
// the entry at position pos.
func (rw *indexRewrite) entry(e, x []byte, pos uint32) {
	for _, r := range [][2]int{{0, 24}, {36, 40}} { // ctime, mtime, dev, ino; size
		for i := r[0]; i < r[1]; i++ {
			if e[i] != 0 {
				e[i], rw.changed = 0, true
			}
		}
	}
	if m := rw.clearFlags[pos]; m != 0 {
		fl := len(e) - 2
		binary.BigEndian.PutUint16(e[fl:], binary.BigEndian.Uint16(e[fl:])&^m)
		rw.changed = true
	}
	rw.w.Write(e)
	if x != nil {
		if m := rw.clearExt[pos]; m != 0 {
			binary.BigEndian.PutUint16(x, binary.BigEndian.Uint16(x)&^m)
			rw.changed = true
		}
		rw.w.Write(x)
	}
}

// gitVarint reads git's offset varint (varint.c: each continuation adds one before the
// shift), which index version 4 uses for a name's prefix length.
func gitVarint(r io.ByteReader) (uint64, error) {
	c, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	v := uint64(c & 127)
	for c&128 != 0 {
		if c, err = r.ReadByte(); err != nil {
			return 0, err
		}
		if v+1 > (1<<57)-1 {
			return 0, errors.New("varint overflow")
		}
		v = (v+1)<<7 | uint64(c&127)
	}
	return v, nil
}

type countingReader struct {
	br  *bufio.Reader
	off *int64
	rw  *indexRewrite // when set, each byte read is written to it too
}

func (c countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		*c.off++
		if c.rw != nil {
			c.rw.w.Write([]byte{b})
		}
	}
	return b, err
}

// IndexHidden returns the names of the entries of the index file p that have the
// assume-unchanged or skip-worktree bit (git-update-index(1)) as git reads them (for a
// split index, its own entries and its shared index's it does not replace or delete:
// readSplit), each as "name" for the
// former, "name\x00skip" for the latter (both when both), for RemoveIndexBits' Keep; a
// missing index has none. hashLen is 20 (SHA-1) or 32 (SHA-256). A file over MaxIndex
// bytes, or one that does not parse, is an error.
func IndexHidden(p string, hashLen int) ([]string, error) {
	f, st, err := openIndex(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc, err := scanIndex(f, st.Size, hashLen, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	hidden := sc.hidden
	if sc.link != nil {
		v, err := readSplit(p, sc, hashLen)
		if err != nil {
			return nil, err
		}
		hidden = append(v.main, v.shared...)
	}
	var out []string
	for _, h := range hidden {
		out = append(out, hiddenKeys(h)...)
	}
	return out, nil
}

func hiddenKeys(h hiddenEntry) []string {
	var k []string
	if h.assume {
		k = append(k, h.name)
	}
	if h.skip {
		k = append(k, h.name+"\x00skip")
	}
	return k
}

// openIndex opens the regular file p without following a symlink or blocking on a FIFO.
func openIndex(p string) (*os.File, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, st, os.ErrNotExist
	}
	if err != nil {
		return nil, st, fmt.Errorf("%s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > MaxIndex {
		f.Close()
		return nil, st, fmt.Errorf("%s: not a regular file of at most %d bytes", p, MaxIndex)
	}
	return f, st, nil
}

// Stamp is what an index file was at launch, to tell after the run whether the command
// wrote it: its name (a base name: "index", "sharedindex.<hex>"), st_dev, st_ino,
// st_size and st_mtime and st_ctime in nanoseconds. A command cannot set a file's
// ctime (utimensat(2) sets only atime and mtime; any write moves ctime to now), so an
// index it wrote does not match. The zero Stamp is a file that did not exist.
type Stamp struct {
	Name  string `json:"name,omitempty"`
	Dev   uint64 `json:"dev,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
	Size  int64  `json:"size,omitempty"`
	Mtime int64  `json:"mtime,omitempty"`
	Ctime int64  `json:"ctime,omitempty"`
}

func stampOf(name string, st *unix.Stat_t) Stamp {
	return Stamp{Name: name, Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// IndexStamps returns the Stamps of the index file p and, for a split index, of its
// shared index (for RemoveIndexBits' Was); a missing index is one zero Stamp. Errors
// as IndexHidden's.
func IndexStamps(p string, hashLen int) ([]Stamp, error) {
	f, st, err := openIndex(p)
	if errors.Is(err, os.ErrNotExist) {
		return []Stamp{{}}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := []Stamp{stampOf(filepath.Base(p), &st)}
	sc, err := scanIndex(f, st.Size, hashLen, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	if sc.link != nil {
		sp := filepath.Join(filepath.Dir(p), "sharedindex."+hex.EncodeToString(sc.link[:hashLen]))
		sf, sst, err := openIndex(sp)
		if err != nil {
			return nil, fmt.Errorf("%s: its shared index: %w", p, err)
		}
		sf.Close()
		out = append(out, stampOf(filepath.Base(sp), &sst))
	}
	return out, nil
}

// unchanged reports whether the index file (and its shared index) in dir are still
// as was says (launch's IndexStamps; nil: not known, so changed).
func unchanged(dir int, was []Stamp) bool {
	if len(was) == 0 {
		return false
	}
	for _, w := range was {
		var st unix.Stat_t
		err := unix.Fstatat(dir, w.Name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if w == (Stamp{}) || err != nil || stampOf(w.Name, &st) != w {
			return false
		}
	}
	return true
}

// clearIndexBits writes the index file p anew when it is not what it was at launch
// (was: IndexStamps then; nil: always), so that the host's git trusts nothing the
// command could forge in it (attack reviews 28 F8, 29 F2 and F14): the assume-unchanged
// and skip-worktree bits that are not in keep (IndexHidden at launch) are cleared, every
// entry's cached stat data is zeroed and the extensions that cache a conclusion are
// dropped (indexRewrite). The index is written beside itself, streamed, its checksum
// (hashLen bytes: SHA-1 or SHA-256) made again, and renamed over it. For a split index
// (core.splitIndex) the shared index is written the same way under its new name
// (sharedindex.<its checksum>, as git names it; the old one is left for git to
// expire), and the index's link extension names it. An index over MaxIndex bytes, or
// one that does not parse, is moved aside whole to p+".gosbx-aside" (as packed-refs
// is: what git would read in it cannot be checked). It returns "p: <name> (<bit>)" per
// bit cleared and "p: moved aside to …" for an index moved.
func clearIndexBits(p string, keep []string, hashLen int, was []Stamp) (removed, failed []string) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	defer unix.Close(dir)
	if unchanged(dir, was) {
		return nil, nil
	}
	name := filepath.Base(p)
	aside := func(why string) ([]string, []string) {
		did, err := moveAside(dir, name, p)
		if err != nil {
			return nil, []string{p + ": " + why + "; moving it aside: " + err.Error()}
		}
		return []string{p + ": " + did + " (" + why + ")"}, nil
	}
	f, st, err := openIndex(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size > MaxIndex {
			return aside(fmt.Sprintf("%d bytes, more than gosbx reads (%d)", st.Size, MaxIndex))
		}
		return nil, []string{err.Error()}
	}
	defer f.Close()
	sc, err := scanIndex(f, st.Size, hashLen, nil)
	if err != nil {
		return aside("it does not parse: " + err.Error())
	}
	hidden := sc.hidden
	var v splitView
	if sc.link != nil {
		if v, err = readSplit(p, sc, hashLen); err != nil {
			// fail closed, as for an index that does not parse: git must not trust
			// what gosbx could not check (attack review 31 F7)
			return aside("its split index cannot be read: " + err.Error())
		}
		hidden = v.main
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	clear := func(hs []hiddenEntry, file string) (flags, ext map[uint32]uint16) {
		flags, ext = map[uint32]uint16{}, map[uint32]uint16{}
		for _, h := range hs {
			if h.assume && !kept[h.name] {
				flags[h.pos] = flagAssumeValid
				removed = append(removed, file+": "+h.name+" ("+hiddenAssume+")")
			}
			if h.skip && !kept[h.name+"\x00skip"] {
				ext[h.pos] = extSkipWorktree
				removed = append(removed, file+": "+h.name+" ("+hiddenSkip+")")
			}
		}
		return flags, ext
	}
	flags, ext := clear(hidden, p)
	rw := &indexRewrite{clearFlags: flags, clearExt: ext}
	if v.path != "" {
		sflags, sext := clear(v.shared, p) // named as the index git reads
		sf, sst, err := openIndex(v.path)
		if err != nil {
			return nil, []string{v.path + ": " + err.Error()}
		}
		srw := &indexRewrite{clearFlags: sflags, clearExt: sext}
		sum, err := rewriteIndex(dir, sf, sst, srw, hashLen, func(sum []byte) string { return "sharedindex." + hex.EncodeToString(sum) })
		sf.Close()
		if err != nil {
			return nil, []string{v.path + ": writing it anew: " + err.Error()}
		}
		if sum != nil {
			rw.link = sum
		}
	}
	if _, err := rewriteIndex(dir, f, st, rw, hashLen, func([]byte) string { return name }); err != nil {
		return nil, []string{p + ": writing it anew: " + err.Error()}
	}
	return removed, nil
}

// rewriteIndex writes the index f (st) anew beside itself in dir as rw says, with its
// trailing checksum made again, and renames it to name(checksum); it returns the
// checksum, or nil when nothing differed (nothing renamed).
func rewriteIndex(dir int, f *os.File, st unix.Stat_t, rw *indexRewrite, hashLen int, name func(sum []byte) string) ([]byte, error) {
	tmp := "index.gosbx-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(dir, tmp, 0)
	wfd, err := unix.Openat(dir, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o666)
	if err != nil {
		return nil, err
	}
	w := os.NewFile(uintptr(wfd), tmp)
	fail := func(err error) ([]byte, error) {
		w.Close()
		unix.Unlinkat(dir, tmp, 0)
		return nil, err
	}
	hs := newDigest(hashLen)
	bw := bufio.NewWriterSize(io.MultiWriter(w, hs), 64<<10)
	rw.w = bw
	if rw.link != nil {
		rw.changed = true
	}
	if _, err := scanIndexTo(io.NewSectionReader(f, 0, st.Size), st.Size, hashLen, nil, rw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if !rw.changed {
		return fail(nil)
	}
	sum := hs.Sum()
	if _, err := w.Write(sum); err != nil {
		return fail(err)
	}
	unix.Fchown(wfd, int(st.Uid), int(st.Gid)) // as it was; a caller who may not keeps it its own
	if err := w.Close(); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, err
	}
	if err := unix.Renameat(dir, tmp, dir, name(sum)); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, err
	}
	return sum, nil
}

// allZero reports whether b holds only zero bytes (a null object id).
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
