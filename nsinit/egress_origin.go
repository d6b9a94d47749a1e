package nsinit

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

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
	return func(conn net.Conn, deny bool) int {
		if conn == nil || sn.Want != nil && !sn.Want(deny) || c.init == nil {
			return 0
		}
		pid := connOrigin(c.init.pid, conn)
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
func connOrigin(initPid int, conn net.Conn) int {
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return 0
	}
	inode := tcpInode(initPid, remote.AddrPort(), local.AddrPort())
	if inode == "" {
		return 0
	}
	want := "socket:[" + inode + "]"
	budget := maxOriginReads
	for _, pid := range descendants(initPid) {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		if budget -= len(ents); budget < 0 {
			return 0
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + e.Name()); err == nil && l == want {
				return commandOf(initPid, pid)
			}
		}
	}
	return 0
}

// maxOriginReads bounds the descriptors and socket lines one lookup reads: the sandbox
// chooses how many it has, and the lookup runs on the owner's time (then the line is
// unattributed).
const maxOriginReads = 1 << 16

// tcpInode is the inode of the IPv4 TCP socket with local address l and remote address
// r in the network namespace of pid, "" when none.
func tcpInode(pid int, l, r netip.AddrPort) string {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/net/tcp")
	if err != nil {
		return ""
	}
	defer f.Close()
	la, ra := procTCPAddr(l), procTCPAddr(r)
	sc := bufio.NewScanner(f)
	for lines := 0; lines < maxOriginReads && sc.Scan(); lines++ {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fs := strings.Fields(sc.Text())
		if len(fs) >= 10 && fs[1] == la && fs[2] == ra {
			return fs[9]
		}
	}
	return ""
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
