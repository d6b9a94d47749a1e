package main

import (
	"fmt"
	"sync"

	"github.com/gosbx/gosbx/internal/session"
)

// lineQueue holds the session proxy's lines for one request until its own goroutine
// writes them to the request's client: the proxy's routing (netRoutes, under the lock
// of the whole session) only queues, and never waits on a client's socket. A client
// that reads nothing (stopped by Ctrl-Z or SIGSTOP, or blocked writing its own stderr
// or --status-fd to a full pipe) fills its socket and then its queue, whose further
// lines are dropped and counted, and said once it reads again: it hung every other
// request of the session, its proxy and `session stop` before (from an attack review,
// r37 F3: a blocking write under netRoutes.mu).
type lineQueue struct {
	write func(kind byte, b []byte) // the request's reply: blocks on its client alone

	mu      sync.Mutex
	frames  []queuedFrame
	size    int  // bytes held in frames
	dropped int  // lines dropped since the last note
	closed  bool // no more lines: the writer ends once frames are written
	more    chan struct{}
	done    chan struct{} // closed when the writer has returned
}

type queuedFrame struct {
	kind byte
	b    []byte
}

// queueMax bounds the bytes of lines one request's queue holds (its client not
// reading): ~1000 status lines or denial messages, and the batch its writer holds as
// much again at most; the socket holds ~200 KiB more.
const queueMax = 256 << 10

// newLineQueue starts the writer of a request's lines to write (its reply).
func newLineQueue(write func(byte, []byte)) *lineQueue {
	q := &lineQueue{write: write, more: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// message queues a line for the request's stderr.
func (q *lineQueue) message(m string) { q.push(session.RepMessage, []byte(m)) }

// event queues a status line for the request's --status-fd.
func (q *lineQueue) event(b []byte) { q.push(session.RepEvent, b) }

// push queues a frame, or drops it (counted) when the queue is full; it never waits.
func (q *lineQueue) push(kind byte, b []byte) {
	q.mu.Lock()
	switch {
	case q.closed:
	case q.size+len(b) > queueMax:
		q.dropped++
	default:
		q.frames = append(q.frames, queuedFrame{kind, b})
		q.size += len(b)
	}
	q.mu.Unlock()
	select {
	case q.more <- struct{}{}:
	default:
	}
}

// run writes the queued frames, a note of what was dropped after them, until close.
func (q *lineQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		frames, dropped, closed := q.frames, q.dropped, q.closed
		q.frames, q.size, q.dropped = nil, 0, 0
		q.mu.Unlock()
		for _, f := range frames {
			q.write(f.kind, f.b)
		}
		if dropped > 0 {
			q.write(session.RepMessage, []byte(fmt.Sprintf("gosbx: %d lines of the session's proxy (denials, --status-fd lines) were dropped for this request: its client read none of them for a while (stopped, or its stderr or status fd not read)\n", dropped)))
		}
		if closed {
			return
		}
		<-q.more
	}
}

// close takes no more lines and waits until the queued ones were written (to this
// request's own client: only its handler waits).
func (q *lineQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.more <- struct{}{}:
	default:
	}
	<-q.done
}
