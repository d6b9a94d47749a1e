package gostart

import (
	"runtime"
	"testing"
)

// GrowStack gives the calling goroutine a 32 KiB stack at once: goroutines that called
// it hold 32 KiB of stack each (runtime.MemStats.StackInuse), where goroutines that did
// not hold the 2 KiB they started with. It fails if the compiler dropped GrowStack's
// frame (the array, only used in a branch never taken). The goroutines stay blocked
// until the test binary exits: none frees its stack while another count is taken.
func TestGrowStack(t *testing.T) {
	const n = 16
	inUse := func(grow bool) int64 {
		var before, after runtime.MemStats
		ready := make(chan struct{})
		runtime.ReadMemStats(&before)
		for range n {
			go func() {
				if grow {
					GrowStack()
				}
				ready <- struct{}{}
				select {}
			}()
		}
		for range n {
			<-ready
		}
		runtime.ReadMemStats(&after)
		return int64(after.StackInuse) - int64(before.StackInuse)
	}
	plain, grown := inUse(false), inUse(true)
	if grown < n*32<<10 {
		t.Errorf("%d goroutines that called GrowStack hold %d bytes of stack more, want at least %d (32 KiB each)", n, grown, n*32<<10)
	}
	if plain >= n*8<<10 {
		t.Errorf("%d goroutines that did not call GrowStack hold %d bytes of stack more: the comparison measures nothing", n, plain)
	}
}
