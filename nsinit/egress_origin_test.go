package nsinit

import (
	"testing"
	"time"
)

// From an attack review: a session's origin lookups read at most originBurst entries
// at once and originRate a second after that, whatever they are asked for; what a
// lookup did not read is given back.
func TestOriginBudget(t *testing.T) {
	b := &originBudget{tokens: originBurst, last: time.Now()}
	start := time.Now()
	got := 0
	for i := 0; i < 100; i++ {
		got += b.reserve(maxOriginReads)
	}
	if limit := originBurst + int(time.Since(start).Seconds()*originRate) + 1; got > limit {
		t.Errorf("100 lookups reserved %d reads, more than %d", got, limit)
	}
	if n := b.reserve(maxOriginReads); n > originRate/10 {
		t.Errorf("an empty budget gave %d reads at once", n)
	}
	b.refund(1000)
	if n := b.reserve(maxOriginReads); n < 1000 {
		t.Errorf("after a refund of 1000: %d reads", n)
	}
}
