// Package memtrim is what a waiting gosbx process gives back. A Trimmer hands a
// long-lived process's freed heap back to the kernel once the process has been idle a
// while after work that allocated: a session's supervisor and init, which wait for
// hours between requests (Go's collector first runs once the heap has grown to 4 MiB,
// so without a trim every request's garbage stays resident until then).
// docs/decisions.md, "Memory, second pass (issue 20)".
package memtrim

import (
	"os"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SessionIdle and SessionMin are a session's: its supervisor and init return their
// heap's free pages once idle SessionIdle after requests that grew their resident
// anonymous memory by at least SessionMin bytes since the last trim. Not sooner:
// back-to-back requests pay no collection; not for less: a collection in a process
// that grew little adds about what it frees (the collector's own structures).
const (
	SessionIdle = 250 * time.Millisecond
	SessionMin  = 256 << 10
)

// Trimmer runs debug.FreeOSMemory (a collection, then every free page returned with
// madvise(2)) idle after the last Done or Poke, when the process's resident anonymous
// memory grew by at least min since the last trim or since New. A collection in a
// process that grew less costs about what it frees (the collector's own structures:
// ~0.25 MiB at the first one), so none is done there. Busy and Done bracket the work:
// no trim starts while some is under way.
type Trimmer struct {
	idle time.Duration
	min  uint64
	// statm is the process's /proc/self/statm; nil when it could not be opened
	statm *os.File

	mu       sync.Mutex
	busy     int
	trimming bool // a fire is collecting: a second one meanwhile does nothing
	timer    *time.Timer
	mark     uint64 // resident anonymous bytes after the last trim, or at New
	trims    int
	onTrim   func() // tests: called after each trim
}

// OpenStatm opens /proc/self/statm (proc(5)) for New, for a process that will not see
// its own procfs entry later (a sandbox's init, after pivot_root). Errors are
// *os.PathError.
func OpenStatm() (*os.File, error) { return os.Open("/proc/self/statm") }

// New returns a Trimmer for idle (a duration) and min (bytes of resident anonymous
// memory grown since now, or since the last trim), reading statm (from OpenStatm; nil:
// it opens it now). Without a readable statm no collection is ever done. No timer runs
// until the first Done or Poke.
func New(idle time.Duration, min uint64, statm *os.File) *Trimmer {
	if statm == nil {
		statm, _ = OpenStatm()
	}
	t := &Trimmer{idle: idle, min: min, statm: statm}
	t.mark = t.anonResident()
	t.timer = time.AfterFunc(idle, t.fire)
	t.timer.Stop()
	return t
}

// Busy says some work has started: a trim waits for its Done.
func (t *Trimmer) Busy() {
	t.mu.Lock()
	t.busy++
	t.timer.Stop()
	t.mu.Unlock()
}

// Done says the work a Busy announced has ended: the trim is due Idle from now, unless
// more work comes first.
func (t *Trimmer) Done() {
	t.mu.Lock()
	t.busy--
	t.arm()
	t.mu.Unlock()
}

// Poke says some work not bracketed by Busy and Done has ended (a command's exit
// reported): the trim is due Idle from now, unless more work comes first.
func (t *Trimmer) Poke() {
	t.mu.Lock()
	t.arm()
	t.mu.Unlock()
}

func (t *Trimmer) arm() {
	if t.busy == 0 {
		t.timer.Reset(t.idle)
	}
}

// Trims is how many trims ran.
func (t *Trimmer) Trims() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.trims
}

func (t *Trimmer) fire() {
	t.mu.Lock()
	if t.busy > 0 || t.trimming {
		t.mu.Unlock()
		return // when busy, its Done arms the timer again
	}
	r := t.anonResident()
	if r <= t.mark || r-t.mark < t.min {
		t.mu.Unlock()
		return
	}
	t.trimming = true
	t.mu.Unlock()
	// Not under mu: work that starts meanwhile does not wait for the collection (the
	// collector runs beside it).
	debug.FreeOSMemory()
	t.mu.Lock()
	t.mark = t.anonResident()
	t.trims++
	t.trimming = false
	f := t.onTrim
	t.mu.Unlock()
	if f != nil {
		f()
	}
}

// anonResident is the process's resident anonymous memory in bytes: resident less
// shared (file-backed and shmem) pages of /proc/self/statm (proc(5)), 0 when it cannot be
// read. Not runtime.ReadMemStats, which flushes every P's span cache (the next
// allocations then take fresh spans: measured +0.4 MiB in a session's supervisor), nor
// runtime/metrics, whose package init allocates 15 KiB in every gosbx process.
func (t *Trimmer) anonResident() uint64 {
	if t.statm == nil {
		return 0
	}
	var b [128]byte
	n, _ := unix.Pread(int(t.statm.Fd()), b[:], 0)
	if n <= 0 {
		return 0
	}
	// size resident shared text lib data dt, in pages
	var f [3]uint64
	i := 0
	for _, c := range b[:n] {
		switch {
		case c >= '0' && c <= '9':
			f[i] = f[i]*10 + uint64(c-'0')
		case c == ' ':
			if i++; i == len(f) {
				return (f[1] - min(f[2], f[1])) * uint64(os.Getpagesize())
			}
		default:
			return 0
		}
	}
	return 0
}
