package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/nsinit"
)

// netRoutes sends the session proxy's status lines to the requests running in the
// session, as gosbx exec gives its own: a denial's message to the request's stderr
// (a detached job's log), its status lines to its --status-fd. A line goes to the
// request whose command's process tree made the connection (nsinit.SessionNet: the
// connecting socket's holder in /proc, up to the command); a denial that cannot be
// attributed so (the process ended or closed the socket before the lookup, left its
// command's tree, or a DNS question over UDP) goes to the stderr of every request
// running, marked so, and to no status fd: those lines must be exact.
type netRoutes struct {
	// proxied: the session's sandbox has a proxy (config.Egress or HostPorts), the
	// only source of lines; without one a request needs no route
	proxied bool
	mu      sync.Mutex
	byPid   map[int]*netRoute
	status  int       // routes with a status fd
	closed  sync.Cond // on mu: a route's open count fell, a route came, a start ended
	// starting counts requests between begin and add or abort: a line whose origin has
	// no route yet waits for them (the command may connect before its Start returns)
	starting int
}

type netRoute struct {
	message func(string) // stderr's
	event   func([]byte) // the status fd's; nil without one
	open    int          // allowed connections whose last line has not come
}

// lingerLines bounds how long a request's end waits for the lines of its connections
// still open (the proxy sees them close just after the command ends; a background
// process may keep one open for good).
const lingerLines = 2 * time.Second

func (r *netRoutes) sessionNet() *nsinit.SessionNet {
	r.closed.L = &r.mu
	return &nsinit.SessionNet{Events: r.route, Want: r.want, Opened: r.opened, Withheld: r.withheld}
}

// withheld tells every running request how many of the session's denial messages
// were withheld (egress.Proxy.Withheld): a flood from one request holds back the
// messages of all.
func (r *netRoutes) withheld(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.byPid {
		x.message("gosbx: " + egress.WithheldText(n) + "\n")
	}
}

// begin says a request's command is starting; add or abort follows.
func (r *netRoutes) begin() {
	r.mu.Lock()
	r.starting++
	r.mu.Unlock()
}

// abort ends begin for a command that did not start.
func (r *netRoutes) abort() { r.add(0, nil) }

// add ends begin with the route of the started command pid (0: none).
func (r *netRoutes) add(pid int, rt *netRoute) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starting--
	r.closed.Broadcast()
	if pid == 0 {
		return
	}
	if r.byPid == nil {
		r.byPid = map[int]*netRoute{}
	}
	r.byPid[pid] = rt
	if rt.event != nil {
		r.status++
	}
}

// remove ends pid's route once the lines of its open connections came, or after
// lingerLines.
func (r *netRoutes) remove(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.byPid[pid]
	if rt == nil {
		return
	}
	timer := time.AfterFunc(lingerLines, func() {
		r.mu.Lock()
		r.closed.Broadcast()
		r.mu.Unlock()
	})
	deadline := time.Now().Add(lingerLines)
	for rt.open > 0 && time.Now().Before(deadline) {
		r.closed.Wait()
	}
	timer.Stop()
	delete(r.byPid, pid)
	if rt.event != nil {
		r.status--
	}
}

// want says whether the proxy should find a connection's origin for a line of its
// kind: some request could take it, counting a request still starting (its command
// may connect before its route is added: lookup then waits for it; CI saw a denial's
// note lost so, the origin left unlooked-for).
func (r *netRoutes) want(deny bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.starting > 0 {
		return true
	}
	if deny {
		return len(r.byPid) > 0
	}
	return r.status > 0
}

func (r *netRoutes) opened(pid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.lookup(pid); rt != nil {
		rt.open++
	}
}

// lookup is pid's route, waiting while a request is starting when it has none yet (at
// most startWait: requests started one after another must not hold the proxy's lines).
func (r *netRoutes) lookup(pid int) *netRoute {
	rt := r.byPid[pid]
	if rt != nil || pid == 0 || r.starting == 0 {
		return rt
	}
	deadline := time.Now().Add(startWait)
	timer := time.AfterFunc(startWait, func() {
		r.mu.Lock()
		r.closed.Broadcast()
		r.mu.Unlock()
	})
	defer timer.Stop()
	for rt == nil && r.starting > 0 && time.Now().Before(deadline) {
		r.closed.Wait()
		rt = r.byPid[pid]
	}
	return rt
}

// startWait bounds how long a line waits for its request's registration.
const startWait = 500 * time.Millisecond

// route delivers e, under the lock: once remove returned, nothing more is written
// for that request (its connection is answered and closed next).
func (r *netRoutes) route(e egress.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt := r.lookup(e.Origin)
	if rt != nil && e.Ends && rt.open > 0 {
		rt.open--
		r.closed.Broadcast()
	}
	switch {
	case rt != nil:
		if e.Message != "" {
			rt.message("gosbx: " + lineText(sessionFix(e.Message)) + "\n")
		}
		if rt.event != nil {
			b, _ := json.Marshal(e)
			rt.event(b)
		}
	case e.Message != "":
		for _, x := range r.byPid {
			x.message("gosbx: " + lineText(sessionFix(e.Message)) + " (a connection of this session that gosbx could not attribute to a request)\n")
		}
	}
}

// lineText is a message as one line of a request's stderr: a byte that is a control
// byte or not printable ASCII is written as its Go escape (\n, \x1b, \u202e), so that
// a line, broadcast to every request's stderr when unattributed, can never be more
// than one line or carry a terminal escape (the proxy quotes peer bytes already: this
// holds whatever a message holds).
func lineText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			q := strconv.QuoteToASCII(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// sessionFix adds to a denial that names an --allow-host flag where a session takes it:
// exec --session refuses network flags (the proxy's rules are the session's), so the
// flag goes to session start, of a new session.
func sessionFix(msg string) string {
	if strings.Contains(msg, "--allow-host") {
		return msg + " (for a session, at its start: gosbx session stop NAME, then gosbx session start NAME with the flag)"
	}
	return msg
}
