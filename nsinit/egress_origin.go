package nsinit

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/nsinit/config"
)

// SessionNet routes a session's egress status lines to the requests that made them
// (NewSessionNet): a session serves many callers' commands from one proxy.
type SessionNet struct {
	// Events receives every status line of the session's proxy (egress.Event), one at a
	// time. A line's Origin is the host pid of the session command (Cmd.Pid) whose
	// process tree made the connection, 0 when that is not known (the process has
	// ended, closed the socket, left its command's tree, or Want said no); a denial's
	// Message is set.
	Events func(egress.Event)
	// Want says whether lines of a denial (deny true) or of an allowed connection are
	// routed now: the origin is looked up only then (it reads /proc). nil: always.
	Want func(deny bool) bool
	// Opened, if set, is called with the origin found for a connection looked up with
	// deny false (an allowed one, before it is carried): its line, with Ends set,
	// follows when it closes, so that a request can wait for its lines.
	Opened func(origin int)
	// Withheld, if set, receives the number of denial messages withheld past their
	// bound (egress.Proxy.Withheld): for every request's stderr.
	Withheld func(n int)
}

// NewSessionNet is NewSession with the session's egress status lines given to net
// (cfg.Egress or cfg.HostPorts set).
func NewSessionNet(cfg *config.Config, net *SessionNet) (*Session, error) {
	return newSession(cfg, net)
}

// netOrigin is the proxy's Origin hook of a session's sandbox, nil for any other.
func (c *Cmd) netOrigin() func(net.Conn, bool) int {
	sn := c.sessNet
	if sn == nil {
		return nil
	}
	budget := &originBudget{tokens: originBurst, last: time.Now()}
	return func(conn net.Conn, deny bool) int {
		if conn == nil || sn.Want != nil && !sn.Want(deny) || c.init == nil {
			return 0
		}
		n := budget.reserve(maxOriginReads)
		pid, used := connOrigin(c.init.pid, conn, n)
		budget.refund(n - used)
		if pid != 0 && !deny && sn.Opened != nil {
			sn.Opened(pid)
		}
		return pid
	}
}

// connOrigin finds which session command made the TCP connection conn, accepted by the
// owner on a listening socket of the sandbox whose init is initPid: the client's socket
// is the one of the sandbox's network namespace (/proc/INIT/net/tcp, proc(5)) whose
// local and remote addresses are conn's remote and local ones; its inode is held open
// (/proc/PID/fd/N -> socket:[INODE]) by some process of the sandbox, whose ancestors
// lead to the command the init forked (a child of the init: the session's commands
// are). Returns that command's host pid, 0 when any step finds nothing. A process that
// passed the socket on or shares it with another request's tree is attributed to the
// first holder found; a process reparented to the commands' pid 1 belongs to none.
// It reads at most budget socket lines, thread entries and descriptors (then finds
// nothing) and returns how many it read.
func connOrigin(initPid int, conn net.Conn, budget int) (pid, used int) {
	if budget <= 0 {
		return 0, 0
	}
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0, 0
	}
	inode, lines := tcpInode(initPid, remote.AddrPort(), local.AddrPort(), budget)
	used = lines
	if inode == "" {
		return 0, used
	}
	want := "socket:[" + inode + "]"
	pids, n := descendantsWithin(initPid, budget-used)
	if used += n; used > budget {
		return 0, budget
	}
	for _, pid := range pids {
		found, n, over := holds(pid, want, budget-used)
		used += n
		if found {
			return commandOf(initPid, pid), used
		}
		if over {
			return 0, used
		}
	}
	return 0, used
}

// holds says whether process pid has a descriptor linking to want (/proc/PID/fd),
// reading at most max entries, listed a batch at a time (the listing of a large table
// costs as much as the reads: it is counted too); over: the budget ran out first.
func holds(pid int, want string, max int) (found bool, n int, over bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return false, 0, false
	}
	defer f.Close()
	for {
		batch := min(256, max-n)
		if batch <= 0 {
			return false, n, true
		}
		names, err := f.Readdirnames(batch)
		n += len(names)
		for _, name := range names {
			if l, err := os.Readlink(dir + name); err == nil && l == want {
				return true, n, false
			}
		}
		if err != nil {
			return false, n, false // io.EOF: the whole table read
		}
	}
}

// maxOriginReads bounds the descriptors and socket lines one lookup reads: the sandbox
// chooses how many it has, and the lookup runs on the owner's time (then the line is
// unattributed).
const maxOriginReads = 1 << 16

// A session's lookups share a budget of reads (a token bucket): originRate a second,
// at most originBurst saved. A lookup takes what it may read and gives back what it
// did not; an empty budget makes lines unattributed. So the owner's time spent on
// origins is bounded per second whatever number of descriptors the sandbox holds
// (measured: ~1.9 us a descriptor, so originRate costs at most ~40 ms of a core a
// second; docs/decisions.md, "Origin lookups on a budget").
const (
	originRate  = 20000
	originBurst = maxOriginReads
)

type originBudget struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// reserve takes up to max reads from the budget (0 when it is empty).
func (b *originBudget) reserve(max int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens = min(originBurst, b.tokens+now.Sub(b.last).Seconds()*originRate)
	b.last = now
	n := min(max, int(b.tokens))
	if n < 0 {
		n = 0
	}
	b.tokens -= float64(n)
	return n
}

// refund gives back reads reserved and not made.
func (b *originBudget) refund(n int) {
	b.mu.Lock()
	b.tokens = min(originBurst, b.tokens+float64(n))
	b.mu.Unlock()
}

// tcpInode is the inode of the IPv4 TCP socket with local address l and remote address
// r in the network namespace of pid, "" when none within max lines; lines is how many
// it read.
func tcpInode(pid int, l, r netip.AddrPort, max int) (inode string, lines int) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/tcp")
	if err != nil {
		return "", 0
	}
	defer f.Close()
	la, ra := procTCPAddr(l), procTCPAddr(r)
	sc := bufio.NewScanner(f)
	for ; lines < max && sc.Scan(); lines++ {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == la && fs[2] == ra {
			return fs[9], lines + 1
		}
	}
	return "", lines
}

// procTCPAddr is a as /proc/net/tcp prints it: the address's 32 bits in host order
// (little endian here) and the port, both in upper-case hex.
func procTCPAddr(a netip.AddrPort) string {
	b := a.Addr().Unmap().As4()
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
}

// commandOf walks from pid up its parents (/proc/PID/stat's ppid) to the child of the
// init it descends from: a session command's host pid; 0 when the walk leaves the
// sandbox or fails.
func commandOf(initPid, pid int) int {
	for i := 0; i < 64 && pid > 1; i++ {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			return 0
		}
		fs := strings.Fields(s[end+1:])
		if len(fs) < 2 {
			return 0
		}
		ppid, err := strconv.Atoi(fs[1])
		if err != nil {
			return 0
		}
		if ppid == initPid {
			return pid
		}
		pid = ppid
	}
	return 0
}
