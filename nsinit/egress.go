package nsinit

import (
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Egress (config.Egress): the sandbox keeps its network namespace with only lo. Its
// init, after the loopback step and while it still holds CAP_NET_BIND_SERVICE there,
// makes the listening sockets of the egress (config.EgressHTTPPort and the others) and
// sends them once, with SCM_RIGHTS, on fd 7, a unix socket pair inherited from the
// owner; then it closes its copies, and fd 7 unless it serves port forwards
// (publish.go). The owner's proxy (egress.Proxy) accepts on
// them: every connection of the sandbox to those ports is a socket of the sandbox's
// namespace held by the owner on the host side, which decides, dials and copies (splice(2)
// between the two TCP sockets). pid 1 copies nothing and keeps no egress state, and no
// socket path exists on disk. docs/decisions.md, "Egress".
const egressFd = 7

// egressSockets, in the order they are sent.
var egressSockets = [...]listenSocket{
	{unix.SOCK_STREAM, false, config.EgressHTTPPort},
	{unix.SOCK_STREAM, false, config.EgressSOCKSPort},
	{unix.SOCK_STREAM, true, config.CaptureHTTPPort},
	{unix.SOCK_STREAM, true, config.CaptureTLSPort},
	{unix.SOCK_DGRAM, false, config.EgressDNSPort},
	{unix.SOCK_STREAM, false, config.EgressDNSPort},
}

// listenSocket is one listening socket the init makes for its owner.
type listenSocket struct {
	typ  int
	any  bool // every loopback address (capture), not only 127.0.0.1
	port int
}

// listenEgress makes the egress's listening sockets in the init's network namespace
// (IPv4 only: there is no IPv6 route for anything to use) and sends them to the owner;
// fd 7 is closed then unless keep (more to send, or port forwards: serveDials).
// Before them it adds EgressLoopbackAddr to lo (egress_addr.go).
// Capture listeners on every loopback address follow, one for each port of capture.
func listenEgress(capture []uint16, keep bool) error {
	if err := addLoopbackAddr(); err != nil {
		return err
	}
	list := append([]listenSocket(nil), egressSockets[:]...)
	for _, p := range capture {
		list = append(list, listenSocket{unix.SOCK_STREAM, true, int(p)})
	}
	return listenAndSend(list, keep)
}

// listenHostPorts makes a listening socket on 127.0.0.1:PORT for each of the host's
// loopback ports the sandbox may reach (config.HostPorts) and sends them to the owner.
func listenHostPorts(ports []uint16, keep bool) error {
	list := make([]listenSocket, len(ports))
	for i, p := range ports {
		list[i] = listenSocket{unix.SOCK_STREAM, false, int(p)}
	}
	return listenAndSend(list, keep)
}

func listenAndSend(list []listenSocket, keep bool) error {
	fds := make([]int, 0, len(list))
	defer func() { closeFds(fds) }()
	for _, s := range list {
		fd, err := unix.Socket(unix.AF_INET, s.typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("socket: %w", err)
		}
		fds = append(fds, fd)
		addr := &unix.SockaddrInet4{Port: s.port, Addr: [4]byte{127, 0, 0, 1}}
		if s.any {
			addr.Addr = [4]byte{}
		}
		if err := unix.Bind(fd, addr); err != nil {
			return fmt.Errorf("bind %d.%d.%d.%d:%d: %w", addr.Addr[0], addr.Addr[1], addr.Addr[2], addr.Addr[3], s.port, err)
		}
		if s.typ == unix.SOCK_STREAM {
			if err := unix.Listen(fd, 1024); err != nil {
				return fmt.Errorf("listen :%d: %w", s.port, err)
			}
		}
	}
	// one message (config.Validate bounds the host ports below SCM_MAX_FD)
	if err := unix.Sendmsg(egressFd, []byte{'E'}, unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("send the listening sockets to the owner: sendmsg: %w", err)
	}
	if !keep {
		unix.Close(egressFd)
	}
	return nil
}

// resolvConf covers /etc/resolv.conf in the new root with the DNS stub's.
func resolvConf(root *mounts.Root) error {
	return root.File("/etc/resolv.conf", []byte(config.EgressResolvConf))
}

// egressPair makes the socket pair of a sandbox with egress: the init's end (fd 7
// inside) and the owner's.
func egressPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "egress-init"), os.NewFile(uintptr(fds[1]), "egress"), nil
}

// startNet starts the owner's side of fd 7 (sock): the egress proxy (pol set), served
// from when the init sends its listening sockets (received in a goroutine: the init
// sends them during its setup), and the port forwards pub of list. An init that ends
// before it sends them closes its end: nothing is served. Ended by stopNet.
func (o *owner) startNet(pol *egress.Policy, hostname string, sock *os.File, events func(egress.Event), denied func(string), withheld func(int),
	pub *publisher, list []config.Publish, hostPorts, capture []uint16, origin func(net.Conn, bool) int) {
	n := &netSock{f: sock, ready: make(chan struct{})}
	if events != nil {
		// the proxy's and the host ports' goroutines: one line at a time
		var mu sync.Mutex
		inner := events
		events = func(e egress.Event) {
			mu.Lock()
			defer mu.Unlock()
			inner(e)
		}
	}
	if pub == nil {
		pub = newPublisher() // for the host ports' connections
	}
	o.net, o.publisher, o.netDone = n, pub, make(chan struct{})
	if pol != nil {
		o.proxy = &egress.Proxy{Policy: pol, Events: events, Denied: denied, Withheld: withheld, Hostname: hostname, Origin: origin}
	}
	go func() {
		defer close(o.netDone)
		defer close(n.ready)
		if pol != nil {
			fds, err := recvFds(int(sock.Fd()), len(egressSockets)+len(capture))
			if err != nil {
				n.dead = true
				return
			}
			o.proxy.Serve(egressListeners(fds, capture))
		}
		if len(hostPorts) > 0 {
			fds, err := recvFds(int(sock.Fd()), len(hostPorts))
			if err != nil {
				n.dead = true
				return
			}
			pub.serveHostPorts(fds, hostPorts, events)
		}
	}()
	pub.serve(list, n, events)
}

// capturePorts are spec's egress capture ports, nil without egress.
func capturePorts(spec *config.Config) []uint16 {
	if spec.Egress == nil {
		return nil
	}
	return spec.Egress.CapturePorts
}

// egressListeners wraps the descriptors the init sent, in egressSockets' order, then
// one for each port of capture.
func egressListeners(fds []int, capture []uint16) egress.Listeners {
	var ls egress.Listeners
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "egress-listener")
		if i >= len(egressSockets) {
			l, err := net.FileListener(f)
			f.Close()
			if err == nil {
				if ls.Capture == nil {
					ls.Capture = map[uint16]net.Listener{}
				}
				ls.Capture[capture[i-len(egressSockets)]] = l
			}
			continue
		}
		if egressSockets[i].typ == unix.SOCK_DGRAM {
			pc, err := net.FilePacketConn(f)
			f.Close()
			if err == nil {
				ls.DNS = pc
			}
			continue
		}
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			continue
		}
		switch i {
		case 0:
			ls.HTTP = l
		case 1:
			ls.SOCKS = l
		case 2:
			ls.CaptureHTTP = l
		case 3:
			ls.CaptureTLS = l
		case 5:
			ls.DNSStream = l
		}
	}
	return ls
}

// stopNet stops the proxy and the port forwards once the sandbox is gone, after the
// last connection's status line.
func (o *owner) stopNet() {
	if o.net == nil {
		return
	}
	<-o.netDone
	o.publisher.close()
	o.net.close()
	if o.proxy != nil {
		o.proxy.Close()
	}
	o.net, o.proxy, o.publisher = nil, nil, nil
}
