package egress

import (
	"strconv"
	"sync"
	"time"
)

// Bounds of the messages a proxy gives for its caller's stderr (Proxy.Denied,
// Event.Message: denials and failed dials): the first messageBurst at once, then
// messageRate a second (a token bucket); the others are withheld and their number
// given to Proxy.Withheld at most once every withheldEvery. A sandbox that makes
// thousands of denied connections a second would otherwise cost its caller a stderr
// line each; the status lines (Events) are all given.
const (
	messageBurst  = 50
	messageRate   = 5
	withheldEvery = time.Second
)

// messageLimit is a Proxy's bucket of messages.
type messageLimit struct {
	mu       sync.Mutex
	tokens   float64
	last     time.Time
	withheld int
	timer    *time.Timer
}

// allowMessage says whether a message may be given now; when not, it is counted for
// Withheld, told within withheldEvery.
func (p *Proxy) allowMessage() bool {
	l := &p.msgs
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = messageBurst
	} else {
		l.tokens = min(messageBurst, l.tokens+now.Sub(l.last).Seconds()*messageRate)
	}
	l.last = now
	if l.tokens >= 1 {
		l.tokens--
		return true
	}
	l.withheld++
	if l.timer == nil {
		l.timer = time.AfterFunc(withheldEvery, p.flushWithheld)
	}
	return false
}

// flushWithheld gives Withheld the number of messages withheld since its last call,
// if any.
func (p *Proxy) flushWithheld() {
	l := &p.msgs
	l.mu.Lock()
	n := l.withheld
	l.withheld = 0
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	if n > 0 && p.Withheld != nil {
		p.Withheld(n)
	}
}

// WithheldText is the line a caller shows for Withheld's n.
func WithheldText(n int) string {
	return "egress: " + strconv.Itoa(n) + " more denials or failed connections not shown (at most " + strconv.Itoa(messageRate) +
		" a second after the first " + strconv.Itoa(messageBurst) + "; the status lines, --status-fd, have every one)"
}
