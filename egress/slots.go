package egress

import (
	"container/list"
	"errors"
	"net"
	"time"
)

// MaxConns bounds the connections a proxy serves at once: its goroutines and buffers
// live on the host, outside the sandbox's memory limit. Each listener has at most
// listenerMax of them, so a flood on one port leaves the others half; and a connection
// that has not yet sent its head (request, SOCKS5 request, ClientHello, or a DNS-over-TCP
// connection between questions) holds its slot only until a newer connection needs it:
// when a listener's budget or the whole is used up, the oldest such connection is
// closed. Connections past their head (tunnels, requests being carried) are never
// closed for room; when they hold every slot, new connections wait in the listening
// socket's backlog until one ends.
const (
	MaxConns    = 1024
	listenerMax = MaxConns / 2
)

// pressureHeadTimeout replaces headTimeout for a connection accepted while three
// quarters of the slots are held.
const pressureHeadTimeout = 5 * time.Second

// budget is one listener's count of held slots.
type budget struct{ used int }

// waiter is a connection that holds a slot and has not yet sent its head.
type waiter struct {
	c net.Conn
	b *budget
}

func (p *Proxy) accept(l net.Listener, fn func(net.Conn)) {
	defer p.wg.Done()
	b := &budget{}
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// out of descriptors (EMFILE) or another passing error: the sandbox can
			// open many connections, but must not stop the proxy for good
			time.Sleep(20 * time.Millisecond)
			continue
		}
		// a slot after the accept: a listener with nothing to accept holds none, and
		// this loop accepts no more until one is given
		if !p.acquire(c, b) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.release(c, b)
			defer p.untrack(c)
			fn(c)
		}()
	}
}

// acquire takes a slot for c (a connection of the listener whose budget is b), closing
// the oldest connection still waiting for its head when the budget or the whole is used
// up, or waiting for a slot to free when none is; c is then tracked, and waiting for its
// head until headDone. false when the proxy is closing.
func (p *Proxy) acquire(c net.Conn, b *budget) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && (p.used >= MaxConns || b.used >= listenerMax) {
		var victim *list.Element
		for el := p.waiting.Front(); el != nil; el = el.Next() {
			if w := el.Value.(*waiter); b.used < listenerMax || w.b == b {
				victim = el
				break
			}
		}
		if victim != nil {
			w := p.waiting.Remove(victim).(*waiter)
			delete(p.waitEl, w.c)
			w.c.Close() // its goroutine ends and releases the slot
		}
		p.slotFreed.Wait()
	}
	if p.closed {
		return false
	}
	p.used++
	b.used++
	p.conns[c] = struct{}{}
	if p.waitEl == nil {
		p.waitEl = map[net.Conn]*list.Element{}
	}
	p.waitEl[c] = p.waiting.PushBack(&waiter{c, b})
	return true
}

// headDone says c has sent its head: from now on it is never closed for room.
func (p *Proxy) headDone(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.waitEl[c]; ok {
		p.waiting.Remove(el)
		delete(p.waitEl, c)
	}
}

func (p *Proxy) release(c net.Conn, b *budget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el, ok := p.waitEl[c]; ok {
		p.waiting.Remove(el)
		delete(p.waitEl, c)
	}
	p.used--
	b.used--
	p.slotFreed.Broadcast()
}

// headWait is how long a connection may take to send its head now: headTimeout, or
// pressureHeadTimeout when three quarters of the slots are held.
func (p *Proxy) headWait() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used >= MaxConns*3/4 {
		return pressureHeadTimeout
	}
	return headTimeout
}
