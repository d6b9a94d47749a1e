package lazy

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestValueOnce: f runs once across concurrent Gets, and every Get sees its value.
func TestValueOnce(t *testing.T) {
	var l Value[int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := l.Get(func() int { calls.Add(1); return 42 }); got != 42 {
				t.Errorf("Get = %d; want 42", got)
			}
		}()
	}
	wg.Wait()
	if got := l.Get(func() int { return 7 }); got != 42 || calls.Load() != 1 {
		t.Errorf("Get after = %d with %d calls of f; want 42 and 1", got, calls.Load())
	}
}

// TestValueNoInitAlloc: a package-level Value costs no allocation until used.
func TestValueNoInitAlloc(t *testing.T) {
	if n := testing.AllocsPerRun(10, func() { var l Value[[]int]; _ = &l }); n != 0 {
		t.Errorf("a zero Value allocates %v times", n)
	}
}

// TestValuePanicRepeated: a panic in f is every Get's, not a zero value for the later
// ones.
func TestValuePanicRepeated(t *testing.T) {
	var l Value[int]
	for i := range 2 {
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Errorf("Get %d: recovered %v; want boom", i, r)
				}
			}()
			l.Get(func() int { panic("boom") })
		}()
	}
}
