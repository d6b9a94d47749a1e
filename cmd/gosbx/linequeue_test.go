package main

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// A writer that blocks (a client reading nothing) never makes push wait; past queueMax
// lines are dropped, counted, and the count is written once the writer moves again,
// after the lines kept and in their order.
func TestLineQueueNeverWaits(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	q := newLineQueue(func(kind byte, b []byte) {
		<-release
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	})
	line := strings.Repeat("x", 1000) + "\n"
	start := time.Now()
	for i := 0; i < 1000; i++ { // ~1 MB: four times the bound
		q.event([]byte(line))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 pushes to a blocked writer took %v", d)
	}
	close(release)
	q.close()
	q.message("after close\n") // dropped silently: the request has ended
	mu.Lock()
	defer mu.Unlock()
	// kept: at most the queue and one batch the writer held; each note counts the lines
	// dropped since the one before
	kept, dropped := 0, 0
	for _, g := range got {
		if g == line {
			kept++
			continue
		}
		n, err := strconv.Atoi(strings.Fields(g)[1])
		if !strings.HasPrefix(g, "gosbx: ") || !strings.Contains(g, "lines of the session's proxy") || err != nil {
			t.Fatalf("not a line pushed nor a drop note: %q", g)
		}
		dropped += n
	}
	if kept < 200 || kept > 2*queueMax/len(line)+1 || kept+dropped != 1000 || got[len(got)-1] == line {
		t.Fatalf("kept %d lines, %d said dropped (want 1000 in all, the note last)", kept, dropped)
	}
}
