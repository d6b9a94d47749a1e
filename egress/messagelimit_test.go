package egress

import (
	"fmt"
	"io"
	"sync"
	"testing"
)

// 200 denied connections in a burst give at most the bound's messages (the first 50
// and what the rate adds meanwhile) to Denied, the rest counted to Withheld (by Close
// at the latest), and every status line.
func TestProxyMessagesBounded(t *testing.T) {
	env := newTestEnv(t, nil, nil)
	var mu sync.Mutex
	withheld := 0
	env.p.Withheld = func(n int) { mu.Lock(); withheld += n; mu.Unlock() }
	const conns = 200
	for i := 0; i < conns; i++ {
		c := dial(t, env.http)
		fmt.Fprintf(c, "CONNECT evil%d.test:443 HTTP/1.1\r\n\r\n", i)
		io.ReadAll(c)
		c.Close()
	}
	env.p.Close()
	env.mu.Lock()
	shown, events := len(env.denied), len(env.events)
	env.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	if shown > messageBurst+messageRate*5 || shown < messageBurst {
		t.Errorf("%d denied connections gave %d messages, want %d-%d", conns, shown, messageBurst, messageBurst+messageRate*5)
	}
	if shown+withheld != conns {
		t.Errorf("%d messages shown and %d withheld, want %d in all", shown, withheld, conns)
	}
	if events != conns {
		t.Errorf("%d status lines, want %d", events, conns)
	}
}
