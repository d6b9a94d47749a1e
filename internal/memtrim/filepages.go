package memtrim

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anchor is a string of this binary's read-only data: its address names the
// executable's mappings in /proc/self/maps.
const anchor = "gosbx memtrim anchor"

// FilePages is a process's own /proc/self/pagemap (and maps, with OpenMaps), for
// Drop. Opened ahead: a process that is made not dumpable (prctl(2) PR_SET_DUMPABLE,
// as a launcher whose raw init shares its memory is) may no longer open it (its /proc
// entries then belong to root). Raw descriptors, not *os.File: the open is on a
// launch's path, and os.Open registers a file with the runtime's poller first. Not
// safe for concurrent Drops.
type FilePages struct {
	pagemap, maps int
	buf, pm       []byte // maps' text, pagemap entries: kept, so Drops allocate once
}

// OpenFilePages opens /proc/self/pagemap (O_CLOEXEC). Errors are *os.PathError.
func OpenFilePages() (*FilePages, error) {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/self/pagemap", Err: err}
	}
	return &FilePages{pagemap: fd, maps: -1}, nil
}

// OpenMaps opens /proc/self/maps now too (O_CLOEXEC), for a process that will not see
// its own procfs entries later (a sandbox's init, after pivot_root: its /proc is then
// the commands' pid namespace's). Errors are *os.PathError.
func (f *FilePages) OpenMaps() error {
	fd, err := unix.Open("/proc/self/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: "/proc/self/maps", Err: err}
	}
	f.maps = fd
	return nil
}

// Close closes the files.
func (f *FilePages) Close() error {
	if f.maps >= 0 {
		unix.Close(f.maps)
	}
	return unix.Close(f.pagemap)
}

// Drop releases this process's references to the pages of its own executable (its
// read-only and executable mappings: code, read-only data) that no other process maps:
// madvise(2) MADV_DONTNEED on each run of present pages that /proc/self/pagemap marks
// exclusively mapped (bit 56, proc(5)); /proc/self/maps names the mappings (by the
// device and inode of the one holding this binary's read-only data). The pages stay in
// the page cache, clean, as any file's do; what is released is this process's mapping
// of them, which the kernel otherwise keeps resident as its own (a process's
// executable pages are kept on the active list); the next use of such a page is a
// minor fault from the page cache. Never a writable mapping: those hold the process's
// own writes. It returns the bytes released; errors name the /proc file or the call.
func (f *FilePages) Drop() (int, error) {
	fd := f.maps
	if fd < 0 {
		var err error
		if fd, err = unix.Open("/proc/self/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			return 0, &os.PathError{Op: "open", Path: "/proc/self/maps", Err: err}
		}
		defer unix.Close(fd)
	}
	maps, err := f.readMaps(fd)
	if err != nil {
		return 0, err
	}
	return dropFilePages(maps, f.pagemap, &f.pm)
}

// readMaps reads the whole maps file from its start into f.buf.
func (f *FilePages) readMaps(fd int) ([]byte, error) {
	b := f.buf[:0]
	if cap(b) < 4<<10 {
		b = make([]byte, 0, 4<<10)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Pread(fd, b[len(b):cap(b)], int64(len(b)))
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: "/proc/self/maps", Err: err}
		}
		if n == 0 {
			f.buf = b
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// mapping is one line of /proc/PID/maps: start-end perms offset dev inode [path].
type mapping struct {
	start, end uintptr
	perms      []byte
	dev, inode []byte
}

// nextMapping parses the first line of b, and returns the rest.
func nextMapping(b []byte) (m mapping, ok bool, rest []byte) {
	line := b
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		line, rest = b[:i], b[i+1:]
	}
	var f [5][]byte
	for i := range f {
		line = bytes.TrimLeft(line, " ")
		j := bytes.IndexByte(line, ' ')
		if j < 0 {
			j = len(line)
		}
		f[i], line = line[:j], line[j:]
	}
	dash := bytes.IndexByte(f[0], '-')
	if dash < 0 {
		return m, false, rest
	}
	s, ok1 := hex(f[0][:dash])
	e, ok2 := hex(f[0][dash+1:])
	if !ok1 || !ok2 || e <= s || len(f[4]) == 0 {
		return m, false, rest
	}
	return mapping{s, e, f[1], f[3], f[4]}, true, rest
}

func hex(b []byte) (uintptr, bool) {
	var v uintptr
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | uintptr(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | uintptr(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// pagemap entry bits (proc(5), Documentation/admin-guide/mm/pagemap.rst)
const (
	pmPresent   = 1 << 63
	pmExclusive = 1 << 56
)

// pagemapChunk is how many pagemap entries are read at a time.
const pagemapChunk = 256

func dropFilePages(maps []byte, pagemap int, bufp *[]byte) (int, error) {
	at := uintptr(unsafe.Pointer(unsafe.StringData(anchor)))
	var dev, inode []byte
	for rest := maps; len(rest) > 0; {
		var m mapping
		var ok bool
		if m, ok, rest = nextMapping(rest); ok && m.start <= at && at < m.end {
			dev, inode = m.dev, m.inode
		}
	}
	if len(inode) == 0 || string(inode) == "0" {
		return 0, nil // not a file's mapping: nothing of an executable to find
	}
	page := uintptr(os.Getpagesize())
	buf := *bufp
	if cap(buf) < 8*pagemapChunk {
		buf = make([]byte, 8*pagemapChunk)
		*bufp = buf
	}
	buf = buf[:cap(buf)]
	dropped := 0
	for rest := maps; len(rest) > 0; {
		var m mapping
		var ok bool
		m, ok, rest = nextMapping(rest)
		// private, not writable (r--p, r-xp): never written, so equal to the file
		if !ok || !bytes.Equal(m.dev, dev) || !bytes.Equal(m.inode, inode) || len(m.perms) != 4 || m.perms[1] != '-' || m.perms[3] != 'p' {
			continue
		}
		n := int((m.end - m.start) / page)
		run := -1 // first page of the current run of exclusive pages
		for i := 0; i <= n; i++ {
			excl := false
			if i < n {
				k := i % pagemapChunk
				if k == 0 {
					want := 8 * min(pagemapChunk, n-i)
					got, err := unix.Pread(pagemap, buf[:want], int64((m.start/page)+uintptr(i))*8)
					if err != nil || got < want {
						if err == nil {
							err = io.ErrUnexpectedEOF
						}
						return dropped, &os.PathError{Op: "read", Path: "/proc/self/pagemap", Err: err}
					}
				}
				e := binary.LittleEndian.Uint64(buf[8*k:])
				excl = e&pmPresent != 0 && e&pmExclusive != 0
			}
			switch {
			case excl && run < 0:
				run = i
			case !excl && run >= 0:
				addr, size := m.start+uintptr(run)*page, uintptr(i-run)*page
				if _, _, e := unix.Syscall(unix.SYS_MADVISE, addr, size, unix.MADV_DONTNEED); e != 0 {
					return dropped, os.NewSyscallError("madvise", e)
				}
				dropped += int(size)
				run = -1
			}
		}
	}
	return dropped, nil
}
