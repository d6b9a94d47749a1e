package nsinit

import (
	"strconv"
	"sync"

	"github.com/gosbx/gosbx/internal/dirent"
	"golang.org/x/sys/unix"
)

// The walks of a session's process tree (Processes, Memory: every `session ls` and
// `session start` asks each running session) read small /proc files into one buffer
// of the walk, with raw open/read/getdents64, not os.ReadFile and Readdirnames: those
// cost ~30 KiB of garbage an info request (an os.File, a stat and a 512-byte buffer a
// file, a string a thread), which an idle supervisor keeps (no collection below a
// 4 MiB heap): at 20 sessions the first one started had answered 19 such requests.
// docs/decisions.md, "Memory: idle sessions".

// procBuf is the size of a walk's buffer: the directory listings in its first half,
// the files read in the rest.
const procBuf = 4096

// procBufs are the walks' buffers, reused: a buffer made per walk was 4 KiB of garbage
// each, two walks an info request.
var procBufs = sync.Pool{New: func() any { return new([procBuf]byte) }}

// descendantsWithin is descendants reading at most max entries of /proc (a thread's
// entry and its children file each count one; a sandbox chooses how many threads it
// has); used is how many it read, more than max when it stopped short.
func descendantsWithin(pid, max int) (out []int, used int) {
	buf := procBufs.Get().(*[procBuf]byte)
	defer procBufs.Put(buf)
	list, data := buf[:procBuf/2], buf[procBuf/2:]
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		dfd, err := unix.Open("/proc/"+strconv.Itoa(p)+"/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		found := len(out)
		stop := false
		// a listing that fails (the process gone meanwhile) ends with what it found
		dirent.Each(dfd, list, func(name []byte, _ uint8) error {
			if used += 2; used > max {
				stop = true
				return dirent.ErrStop
			}
			fd, err := unix.Openat(dfd, string(name)+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil
			}
			out = appendNumbers(out, fd, data)
			unix.Close(fd)
			return nil
		})
		unix.Close(dfd)
		if stop {
			return out, used
		}
		queue = append(queue, out[found:]...)
	}
	return out, used
}

// appendNumbers appends to out the decimal numbers, separated by white space, that
// fd holds (read into buf, a number that spans two reads carried over); text that
// is no number is skipped.
func appendNumbers(out []int, fd int, buf []byte) []int {
	v, digits, bad := 0, false, false
	end := func() {
		if digits && !bad {
			out = append(out, v)
		}
		v, digits, bad = 0, false, false
	}
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			end()
			return out
		}
		for _, c := range buf[:n] {
			switch {
			case c == ' ' || c == '\n' || c == '\t':
				end()
			case c >= '0' && c <= '9' && v <= (1<<31)/10:
				v, digits = v*10+int(c-'0'), true
			default:
				bad = true
			}
		}
	}
}

// residentBytes is the resident memory of pid in bytes (statm's second field, proc(5),
// read into buf); 0 when it cannot be read.
func residentBytes(pid int, buf []byte) int64 {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/statm", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	f := appendNumbers(make([]int, 0, 7), fd, buf)
	if len(f) < 2 {
		return 0
	}
	return int64(f[1]) * int64(unix.Getpagesize())
}
