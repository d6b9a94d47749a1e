package cgroup

import (
	"bytes"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// eventFiles are a group's two limit-event counters (LimitEvents), each file opened once
// and read with pread(2) from offset 0 (a cgroup file is a seq_file: a read at 0 shows it
// anew): a session reads them before and after every command, and os.ReadFile's open,
// epoll registration (cgroup files are pollable), reads and close cost 0.13 ms of the
// supervisor's CPU a command (docs/decisions.md, "Speed, eighth attempt: the session
// path"). The descriptors are O_CLOEXEC, raw (no poller), and closed by close, under mu,
// so that no read can use a number another file took meanwhile.
type eventFiles struct {
	mu     sync.Mutex
	closed bool
	files  [2]eventFile
}

// eventFile is one counter: the count of key in file, read through fd once opened.
type eventFile struct {
	path, key string
	fd        int
	opened    bool
}

// newEventFiles reads the count of key0 in path0 and key1 in path1 ("" for a counter the
// group has not: read as 0).
func newEventFiles(path0, key0, path1, key1 string) *eventFiles {
	return &eventFiles{files: [2]eventFile{{path: path0, key: key0}, {path: path1, key: key1}}}
}

// counts reads both counters (0, 0 for a nil e), 0 for one that cannot be read (as eventCount): a file
// that could not be opened is tried again on the next call.
func (e *eventFiles) counts() (int64, int64) {
	if e == nil {
		return 0, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, 0
	}
	return e.files[0].count(), e.files[1].count()
}

// count reads f's counter; e.mu held.
func (f *eventFile) count() int64 {
	if f.path == "" {
		return 0
	}
	if !f.opened {
		fd, err := unix.Open(f.path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0
		}
		f.fd, f.opened = fd, true
	}
	var buf [512]byte
	n, err := preadRetry(f.fd, buf[:])
	if err != nil || n <= 0 {
		return 0
	}
	if n == len(buf) {
		return eventCount(f.path, f.key) // longer than any kernel's today: read it whole
	}
	return countIn(buf[:n], f.key)
}

// preadRetry is pread(2) at offset 0, again on EINTR.
func preadRetry(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, b, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}

// countIn is the count of key in the lines of an events file ("key N\n..."), 0 without it.
func countIn(b []byte, key string) int64 {
	for len(b) > 0 {
		var line []byte
		line, b = cutField(b, '\n')
		k, v, ok := bytes.Cut(line, []byte{' '})
		if ok && string(k) == key {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			return n
		}
	}
	return 0
}

// close closes the descriptors; counts reads 0 after it.
func (e *eventFiles) close() {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	for i := range e.files {
		if e.files[i].opened {
			unix.Close(e.files[i].fd)
			e.files[i].opened = false
		}
	}
}
