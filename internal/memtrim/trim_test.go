package memtrim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var sink [][]byte

// grow allocates and touches about n bytes of heap, then drops them: garbage the
// process keeps resident until a collection and a scavenge.
func grow(n int) {
	for i := 0; i < n/(64<<10); i++ {
		b := make([]byte, 64<<10)
		for j := range b {
			b[j] = byte(j)
		}
		sink = append(sink, b)
	}
	sink = nil
}

func newTest(t *testing.T, idle time.Duration, min uint64) (*Trimmer, chan struct{}) {
	t.Helper()
	tr := New(idle, min, nil)
	if tr.anonResident() == 0 {
		t.Fatal("resident anonymous memory reads 0: /proc/self/statm not read")
	}
	trimmed := make(chan struct{}, 4)
	tr.onTrim = func() { trimmed <- struct{}{} }
	return tr, trimmed
}

// TestTrimReturnsHeap: after work that left 16 MiB of garbage resident, the trim runs
// once idle, and the process's resident anonymous memory (statm, as the kernel counts
// it) drops by most of it.
func TestTrimReturnsHeap(t *testing.T) {
	tr, trimmed := newTest(t, 20*time.Millisecond, 1<<20)
	tr.Busy()
	grow(16 << 20)
	before := tr.anonResident()
	tr.Done()
	select {
	case <-trimmed:
	case <-time.After(10 * time.Second):
		t.Fatal("no trim 10 s after the work ended")
	}
	after := tr.anonResident()
	if before < after+8<<20 {
		t.Fatalf("resident anonymous memory %d KiB before the trim, %d KiB after: want at least 8 MiB less", before>>10, after>>10)
	}
	if tr.Trims() != 1 {
		t.Fatalf("%d trims, want 1", tr.Trims())
	}
}

// TestTrimWaitsForWork: no trim while work is under way, however long; one once it ends.
func TestTrimWaitsForWork(t *testing.T) {
	tr, trimmed := newTest(t, 10*time.Millisecond, 1<<20)
	tr.Busy()
	tr.Busy()
	grow(8 << 20)
	tr.Done() // one of two still busy
	tr.Poke() // an exit report: still busy
	select {
	case <-trimmed:
		t.Fatal("trimmed while work was under way")
	case <-time.After(200 * time.Millisecond):
	}
	tr.Done()
	select {
	case <-trimmed:
	case <-time.After(10 * time.Second):
		t.Fatal("no trim 10 s after the work ended")
	}
}

// TestNoTrimBelowMin: work that grew the resident memory by less than min, or not at
// all, is followed by no collection (it would cost the collector's own structures).
func TestNoTrimBelowMin(t *testing.T) {
	runtime.GC() // the heap settled: what this test allocates is what grows
	tr, trimmed := newTest(t, 10*time.Millisecond, 64<<20)
	tr.Busy()
	grow(4 << 20)
	tr.Done()
	tr.Poke()
	select {
	case <-trimmed:
		t.Fatal("trimmed after growth below min")
	case <-time.After(200 * time.Millisecond):
	}
	if tr.Trims() != 0 {
		t.Fatalf("%d trims, want 0", tr.Trims())
	}
}

// TestAnonResidentParses: statm's resident less shared, in bytes, is the kernel's
// RssAnon (within what a concurrent allocation can move).
func TestAnonResidentParses(t *testing.T) {
	tr := New(time.Hour, 0, nil)
	got := tr.anonResident()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var kib uint64
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			kib, _ = strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	if kib == 0 || got == 0 || got%4096 != 0 {
		t.Fatalf("anonResident %d bytes, RssAnon %d KiB: want both positive, a multiple of the page size", got, kib)
	}
	if d := int64(got>>10) - int64(kib); d > 1024 || d < -1024 {
		t.Fatalf("anonResident %d KiB, RssAnon %d KiB: want within 1 MiB", got>>10, kib)
	}
}
