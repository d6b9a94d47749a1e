// Package prefault maps in, with one madvise(2) call a range, the pages a one-shot
// `gosbx exec` launcher is about to touch one page fault at a time (the heap's next
// pages), but only where a page fault costs far more
// than populating a page: judged by timing the first write to one fresh page of its own
// (docs/decisions.md "Speed, thirteenth attempt: faults where they trap (prefault)").
//
// On a VM whose page faults exit to the hypervisor (measured on an AMD EPYC Firecracker
// guest: an anonymous write fault ~12 µs, MADV_POPULATE_WRITE ~1.1 µs a page) a
// launch's ~460 faults were a quarter of its CPU; populating the heap's next 1.25 MiB
// saves ~90 of them and ~0.5 ms of its ~15 ms (the binary's data and bss too: +0.3 ms,
// most of their faults come in the runtime's start, before any package init); where a
// fault costs ~1.3 µs, as much as populating a page, populating more pages than
// the launch touches cost +0.2 ms, so nothing is populated there.
//
// Only the gosbx command imports it. Its init is its whole work, which STYLE.md's "no
// package init work" otherwise forbids: what it saves is in the package inits and the
// launch that follow. It imports only syscall and internal/gostart, so it is
// initialized among the first packages. Every step is an optimisation: a failure (an
// old kernel's EINVAL for MADV_POPULATE_WRITE, Linux < 5.14; an unreadable /proc)
// leaves the pages to fault in as before.
package prefault

import (
	"syscall"
	"unsafe"

	"github.com/gosbx/gosbx/internal/gostart"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (include/uapi/asm-generic/mman-common.h,
// Linux 5.14): fault a range in writable, as writes would, in one call.
const madvPopulateWrite = 23

// Threshold is the cost of one anonymous write fault, in ns, from which pages are
// populated: ~3× a page's population where faults do not trap (~1.3 µs); where they
// do, 10-30 µs was measured.
const Threshold = 4000

// LaunchHeap is the heap a one-shot `gosbx exec` uses from this package's init on, in
// bytes: ~1.1 MiB (`perf record -e page-faults -d`, root, agent policy, /bin/true).
const LaunchHeap = 1280 << 10

// atFdcwd is AT_FDCWD (openat(2)).
const atFdcwd = ^uintptr(99) // -100 as the kernel reads the int argument

// probe holds the page whose first write is timed: 3 pages, so that the middle one is
// wholly this variable's and untouched until then (an anonymous page has no
// fault-around).
var probe [3 << 12]byte

// buf holds /proc/self/cmdline, then /proc/self/maps (30-40 lines in a launcher).
var buf [16 << 10]byte

// heapMark is the init's one allocation, whose address places the heap's next pages.
var heapMark *[16]byte

// Result is what the package's init measured and did.
type Result struct {
	Exec    bool  // the command line is a one-shot gosbx exec: nothing is done otherwise
	FaultNs int64 // the timed first write to a fresh page, ns
	Pages   int   // pages populated; 0 when faults are cheap or populating failed
}

var done = start()

// Done returns what the package's init measured and did.
func Done() Result { return done }

func start() Result {
	_ = gostart.Replaced() // initialized after gostart: one P, the grown stack
	r := Result{Exec: isOneShotExec(buf[:readFile("/proc/self/cmdline\x00")])}
	if !r.Exec {
		return r
	}
	r.FaultNs = faultCost()
	if r.FaultNs < Threshold {
		return r
	}
	heapMark = new([16]byte)
	r.Pages = populate(uint64(uintptr(unsafe.Pointer(heapMark))), LaunchHeap)
	return r
}

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// faultCost times the first write to the probe's page, in ns.
func faultCost() int64 {
	mid := unsafe.Pointer(&probe[len(probe)/2])
	pg := (*byte)(unsafe.Add(mid, -int(uintptr(mid)&4095))) // a page wholly probe's
	t0 := nanotime()
	*pg = 1
	return nanotime() - t0
}

// populate populates the heap from the page of heap to ahead bytes past it, clamped to
// the writable mapping /proc/self/maps shows holding it (the Go heap allocates pages
// upward from its latest; the runtime takes freshly mapped pages as zero, which a
// populated page is; a reservation not yet mapped is left to fault). It returns the
// pages populated.
func populate(heap uint64, ahead uint64) int {
	at := heap &^ 4095
	lo, hi, ok := findMapping(buf[:readFile("/proc/self/maps\x00")], at)
	if !ok {
		return 0
	}
	return populateRange(max(at, lo), min(at+ahead, hi))
}

// populateRange populates [lo, hi) writable and returns its pages (0 when empty or when
// madvise failed).
func populateRange(lo, hi uint64) int {
	if hi <= lo {
		return 0
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), madvPopulateWrite); e != 0 {
		return 0
	}
	return int((hi - lo) >> 12)
}

// readFile reads name, a NUL-terminated path (opened without syscall.Open's copy: no
// allocation), into buf, returning the length read (0 on any error).
func readFile(name string) int {
	p := unsafe.StringData(name)
	r, _, e := syscall.RawSyscall6(syscall.SYS_OPENAT, atFdcwd, uintptr(unsafe.Pointer(p)),
		syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return 0
	}
	fd := int(r)
	n := 0
	for n < len(buf) {
		m, err := syscall.Read(fd, buf[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	syscall.Close(fd)
	return n
}
