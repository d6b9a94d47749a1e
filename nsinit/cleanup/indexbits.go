package cleanup

import (
	"bufio"
	"encoding/binary"
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
	assume, skip   bool
	flagsAt, extAt int64
	flags, ext     uint16
}

// scanIndex streams the index file f (size bytes, hashLen the object name length: 20
// for SHA-1, 32 for SHA-256) and returns its entries with a hiding bit, and whether it
// is a split index (a "link" extension: the shared index's entries are not read).
func scanIndex(f io.Reader, size int64, hashLen int) (hidden []hiddenEntry, split bool, err error) {
	end := size - int64(hashLen)
	if end < indexHeaderBytes {
		return nil, false, errors.New("not an index")
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
		return nil, false, err
	}
	if string(hdr[:4]) != "DIRC" {
		return nil, false, errors.New("not an index")
	}
	ver, n := binary.BigEndian.Uint32(hdr[4:8]), binary.BigEndian.Uint32(hdr[8:12])
	if ver < 2 || ver > 4 {
		return nil, false, fmt.Errorf("index version %d", ver)
	}
	if int64(n) > (end-indexHeaderBytes)/int64(40+hashLen+4) {
		return nil, false, fmt.Errorf("its header counts %d entries, more than its %d bytes can hold", n, size)
	}
	fixed := 40 + hashLen + 2
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		e, err := next(fixed)
		if err != nil {
			return nil, false, err
		}
		h := hiddenEntry{flagsAt: start + int64(fixed-2), extAt: -1}
		h.flags = binary.BigEndian.Uint16(e[fixed-2:])
		size := fixed
		if h.flags&flagExtended != 0 {
			if ver < 3 {
				return nil, false, errors.New("extended flags in a version 2 index")
			}
			x, err := next(2)
			if err != nil {
				return nil, false, err
			}
			h.extAt, h.ext = off-2, binary.BigEndian.Uint16(x)
			size += 2
		}
		if ver == 4 {
			strip, err := gitVarint(countingReader{br, &off})
			if err != nil || strip > uint64(len(prev)) {
				return nil, false, errors.New("a bad name prefix")
			}
			rest, err := br.ReadSlice(0)
			if err != nil || len(rest) > maxIndexName {
				return nil, false, fmt.Errorf("a name without its end at byte %d", off)
			}
			off += int64(len(rest))
			h.name = prev[:len(prev)-int(strip)] + string(rest[:len(rest)-1])
		} else {
			l := int(h.flags & 0xfff)
			if l == 0xfff {
				rest, err := br.ReadSlice(0)
				if err != nil {
					return nil, false, fmt.Errorf("a name without its end at byte %d", off)
				}
				off += int64(len(rest))
				h.name = string(rest[:len(rest)-1])
				l = len(h.name)
				if _, err := next((size+l+8)&^7 - size - l - 1); err != nil {
					return nil, false, err
				}
			} else {
				b, err := next(l)
				if err != nil {
					return nil, false, err
				}
				h.name = string(b)
				if _, err := next((size+l+8)&^7 - size - l); err != nil {
					return nil, false, err
				}
			}
		}
		prev = h.name
		h.assume, h.skip = h.flags&flagAssumeValid != 0, h.ext&extSkipWorktree != 0
		if h.assume || h.skip {
			hidden = append(hidden, h)
		}
	}
	for off < end {
		x, err := next(8)
		if err != nil {
			return nil, false, err
		}
		sz := int64(binary.BigEndian.Uint32(x[4:8]))
		if sz > end-off {
			return nil, false, fmt.Errorf("extension %q runs past the end", x[:4])
		}
		if string(x[:4]) == "link" {
			split = true
		}
		if _, err := br.Discard(int(sz)); err != nil {
			return nil, false, err
		}
		off += sz
	}
	return hidden, split, nil
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
// assume-unchanged or skip-worktree bit (git-update-index(1)), each as "name" for the
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
	hidden, _, err := scanIndex(f, st.Size, hashLen)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
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
// SHA-1 or SHA-256), and renamed over it. It returns "p: <name> (<bit>)" per bit
// cleared. A split index is reported as failed: its shared index is not checked.
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
	hidden, split, err := scanIndex(f, st.Size, hashLen)
	if err != nil {
		return nil, []string{p + ": cannot read it to check its assume-unchanged and skip-worktree bits: " + err.Error()}
	}
	if split {
		return nil, []string{p + ": a split index (core.splitIndex), whose shared index gosbx does not check for assume-unchanged and skip-worktree bits: run git update-index --no-split-index and look at git ls-files -v"}
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	type patch struct {
		at int64
		v  uint16
	}
	var patches []patch
	for _, h := range hidden {
		if h.assume && !kept[h.name] {
			patches = append(patches, patch{h.flagsAt, h.flags &^ flagAssumeValid})
			removed = append(removed, p+": "+h.name+" ("+hiddenAssume+")")
		}
		if h.skip && !kept[h.name+"\x00skip"] {
			patches = append(patches, patch{h.extAt, h.ext &^ extSkipWorktree})
			removed = append(removed, p+": "+h.name+" ("+hiddenSkip+")")
		}
	}
	if len(patches) == 0 {
		return nil, nil
	}
	name := filepath.Base(p)
	tmp := name + ".gosbx-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(dir, tmp, 0)
	wfd, err := unix.Openat(dir, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o666)
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	w := os.NewFile(uintptr(wfd), tmp)
	fail := func(err error) ([]string, []string) {
		w.Close()
		unix.Unlinkat(dir, tmp, 0)
		return nil, []string{p + ": clearing the bits: " + err.Error()}
	}
	body := st.Size - int64(hashLen)
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, body)); err != nil {
		return fail(err)
	}
	for _, pt := range patches {
		var b [2]byte
		binary.BigEndian.PutUint16(b[:], pt.v)
		if _, err := w.WriteAt(b[:], pt.at); err != nil {
			return fail(err)
		}
	}
	hs := newDigest(hashLen)
	if _, err := io.Copy(hs, io.NewSectionReader(w, 0, body)); err != nil {
		return fail(err)
	}
	if _, err := w.WriteAt(hs.Sum(), body); err != nil {
		return fail(err)
	}
	unix.Fchown(wfd, int(st.Uid), int(st.Gid)) // as it was; a caller who may not keeps it its own
	if err := w.Close(); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, []string{p + ": " + err.Error()}
	}
	if err := unix.Renameat(dir, tmp, dir, name); err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, []string{p + ": " + err.Error()}
	}
	return removed, nil
}
