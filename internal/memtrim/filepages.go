package memtrim

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// anchor is a string of this binary's read-only data: its address names the
// executable's mappings in /proc/self/maps.
const anchor = "gosbx memtrim anchor"

// Drop releases this process's references to the pages of its own executable
// (its read-only and executable mappings: code, read-only data) that no other process
// maps: madvise(2) MADV_DONTNEED on each run of present pages that /proc/self/pagemap
// marks exclusively mapped (bit 56, proc(5)); /proc/self/maps names the mappings (by
// the device and inode of the one holding this binary's read-only data). The pages stay
// in the page cache, clean, as any file's do; what is released is this process's
// mapping of them, which the kernel otherwise keeps resident as its own (a process's
// executable pages are kept on the active list); the next use of such a page is a
// minor fault from the page cache. Never a writable mapping: those hold the process's
// own writes. It returns the bytes released; errors name the /proc file or the call.
func (f *FilePages) Drop() (int, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	return dropFilePages(maps, f.pagemap)
}

// FilePages is a process's own /proc/self/pagemap, for Drop. Opened ahead: a process
// that is made not dumpable (prctl(2) PR_SET_DUMPABLE, as a launcher whose raw init
// shares its memory is) may no longer open it (its /proc entries then belong to root).
// A raw descriptor, not an *os.File: the open is on a launch's path, and os.Open
// registers a file with the runtime's poller first.
type FilePages struct{ pagemap int }

// OpenFilePages opens /proc/self/pagemap (O_CLOEXEC). Errors are *os.PathError.
func OpenFilePages() (*FilePages, error) {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/proc/self/pagemap", Err: err}
	}
	return &FilePages{fd}, nil
}

// Close closes the pagemap file.
func (f *FilePages) Close() error { return unix.Close(f.pagemap) }

type mapping struct {
	start, end uintptr
	perms      string
	dev, inode string
}

// parseMaps reads /proc/PID/maps lines: start-end perms offset dev inode [path].
func parseMaps(b []byte) []mapping {
	var out []mapping
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(l)
		if len(f) < 5 {
			continue
		}
		se := bytes.SplitN(f[0], []byte{'-'}, 2)
		if len(se) != 2 {
			continue
		}
		s, err1 := strconv.ParseUint(string(se[0]), 16, 64)
		e, err2 := strconv.ParseUint(string(se[1]), 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			continue
		}
		out = append(out, mapping{uintptr(s), uintptr(e), string(f[1]), string(f[3]), string(f[4])})
	}
	return out
}

// pagemap entry bits (proc(5), Documentation/admin-guide/mm/pagemap.rst)
const (
	pmPresent   = 1 << 63
	pmExclusive = 1 << 56
)

func dropFilePages(maps []byte, pagemap int) (int, error) {
	ms := parseMaps(maps)
	at := uintptr(unsafe.Pointer(unsafe.StringData(anchor)))
	var dev, inode string
	for _, m := range ms {
		if m.start <= at && at < m.end {
			dev, inode = m.dev, m.inode
		}
	}
	if inode == "" || inode == "0" {
		return 0, nil // not a file's mapping: nothing of an executable to find
	}
	page := uintptr(os.Getpagesize())
	dropped := 0
	var buf []byte
	for _, m := range ms {
		// private, not writable (r--p, r-xp): never written, so equal to the file
		if m.dev != dev || m.inode != inode || len(m.perms) != 4 || m.perms[1] != '-' || m.perms[3] != 'p' {
			continue
		}
		n := int((m.end - m.start) / page)
		if cap(buf) < 8*n {
			buf = make([]byte, 8*n)
		}
		buf = buf[:8*n]
		got, err := unix.Pread(pagemap, buf, int64(m.start/page)*8)
		if err != nil || got < len(buf) {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return dropped, &os.PathError{Op: "read", Path: "/proc/self/pagemap", Err: err}
		}
		run := -1 // first page of the current run of exclusive pages
		for i := 0; i <= n; i++ {
			excl := false
			if i < n {
				e := binary.LittleEndian.Uint64(buf[8*i:])
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
