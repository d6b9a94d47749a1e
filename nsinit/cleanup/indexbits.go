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
		if h.flags&flagExtended != 0 {
			if ver < 3 {
				return sc, errors.New("extended flags in a version 2 index")
			}
			x, err := next(2)
			if err != nil {
				return sc, err
			}
			h.extAt, h.ext = off-2, binary.BigEndian.Uint16(x)
			size += 2
		}
		if ver == 4 {
			strip, err := gitVarint(countingReader{br, &off})
			if err != nil || strip > uint64(len(prev)) {
				return sc, errors.New("a bad name prefix")
			}
			rest, err := br.ReadSlice(0)
			if err != nil || len(rest) > maxIndexName {
				return sc, fmt.Errorf("a name without its end at byte %d", off)
			}
			off += int64(len(rest))
			h.name = prev[:len(prev)-int(strip)] + string(rest[:len(rest)-1])
		} else {
			l := int(h.flags & 0xfff)
			if l == 0xfff {
				rest, err := br.ReadSlice(0)
				if err != nil {
					return sc, fmt.Errorf("a name without its end at byte %d", off)
				}
				off += int64(len(rest))
				h.name = string(rest[:len(rest)-1])
				l = len(h.name)
				if _, err := next((size+l+8)&^7 - size - l - 1); err != nil {
					return sc, err
				}
			} else {
				b, err := next(l)
				if err != nil {
					return sc, err
				}
				h.name = string(b)
				if _, err := next((size+l+8)&^7 - size - l); err != nil {
					return sc, err
				}
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
			sc.linkAt = off
			if sc.link, err = next(int(sz)); err != nil {
				return sc, err
			}
			continue
		}
		if _, err := br.Discard(int(sz)); err != nil {
			return sc, err
		}
		off += sz
	}
	return sc, nil
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
}

func (c countingReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		*c.off++
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

// clearIndexBits clears, in the index file p, the assume-unchanged and skip-worktree
// bits that are not in keep (IndexHidden at launch): the host's git status and diff
// would not show the change of a file the command marked so. The index is copied
// beside itself with the bits cleared and its checksum made again (hashLen bytes:
// SHA-1 or SHA-256), and renamed over it. For a split index (core.splitIndex) the bits
// of the shared index's entries git uses are cleared too: the shared index is written
// anew under its new name (sharedindex.<its checksum>, as git names it; the old one is
// left for git to expire), and the index's link extension names it. It returns
// "p: <name> (<bit>)" per bit cleared.
func clearIndexBits(p string, keep []string, hashLen int) (removed, failed []string) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	defer unix.Close(dir)
	f, st, err := openIndex(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{err.Error()}
	}
	defer f.Close()
	sc, err := scanIndex(f, st.Size, hashLen, nil)
	if err != nil {
		return nil, []string{p + ": cannot read it to check its assume-unchanged and skip-worktree bits: " + err.Error()}
	}
	hidden := sc.hidden
	var v splitView
	if sc.link != nil {
		if v, err = readSplit(p, sc, hashLen); err != nil {
			return nil, []string{err.Error() + ": its assume-unchanged and skip-worktree bits are not checked: run git update-index --no-split-index and look at git ls-files -v"}
		}
		hidden = v.main
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	clear := func(hs []hiddenEntry, file string) (patches []indexPatch) {
		for _, h := range hs {
			if h.assume && !kept[h.name] {
				patches = append(patches, patch16(h.flagsAt, h.flags&^flagAssumeValid))
				removed = append(removed, file+": "+h.name+" ("+hiddenAssume+")")
			}
			if h.skip && !kept[h.name+"\x00skip"] {
				patches = append(patches, patch16(h.extAt, h.ext&^extSkipWorktree))
				removed = append(removed, file+": "+h.name+" ("+hiddenSkip+")")
			}
		}
		return patches
	}
	patches := clear(hidden, p)
	if shared := clear(v.shared, p); len(shared) > 0 { // named as the index git reads
		sf, sst, err := openIndex(v.path)
		if err != nil {
			return nil, []string{v.path + ": " + err.Error()}
		}
		sum, err := rewriteIndex(dir, sf, sst, shared, hashLen, func(sum []byte) string { return "sharedindex." + hex.EncodeToString(sum) })
		sf.Close()
		if err != nil {
			return nil, []string{v.path + ": clearing the bits: " + err.Error()}
		}
		patches = append(patches, indexPatch{sc.linkAt, sum})
	}
	if len(patches) == 0 {
		return nil, nil
	}
	name := filepath.Base(p)
	if _, err := rewriteIndex(dir, f, st, patches, hashLen, func([]byte) string { return name }); err != nil {
		return nil, []string{p + ": clearing the bits: " + err.Error()}
	}
	return removed, nil
}

// indexPatch is bytes to write at a file offset.
type indexPatch struct {
	at int64
	b  []byte
}

func patch16(at int64, v uint16) indexPatch {
	return indexPatch{at, binary.BigEndian.AppendUint16(nil, v)}
}

// rewriteIndex copies the index f (st) beside itself in dir with patches applied and
// its trailing checksum made again, and renames the copy to name(checksum); it returns
// the checksum.
func rewriteIndex(dir int, f *os.File, st unix.Stat_t, patches []indexPatch, hashLen int, name func(sum []byte) string) ([]byte, error) {
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
	body := st.Size - int64(hashLen)
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, body)); err != nil {
		return fail(err)
	}
	for _, pt := range patches {
		if _, err := w.WriteAt(pt.b, pt.at); err != nil {
			return fail(err)
		}
	}
	hs := newDigest(hashLen)
	if _, err := io.Copy(hs, io.NewSectionReader(w, 0, body)); err != nil {
		return fail(err)
	}
	sum := hs.Sum()
	if _, err := w.WriteAt(sum, body); err != nil {
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
