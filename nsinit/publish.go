package nsinit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/internal/wire"
	"github.com/gosbx/gosbx/nsinit/config"
)

// Port forwards (config.Publish, --publish): the owner listens on the host (bound
// before the clone, so a port in use is a setup error), and for each connection asks
// the sandbox's init, on fd 7 (the socket pair of egress.go), for a connection to the
// sandbox's loopback port; the init connects (no capability needed) and sends the
// connected socket back with SCM_RIGHTS, or the errno. The owner then copies both ways.
// A request is two bytes (the port, big-endian); a reply four (0 with the descriptor,
// else the errno). The init connects only to the ports of its config.

// serveDials answers the owner's requests on fd 7 until it closes.
func serveDials(ports []uint16) {
	go func() {
		defer unix.Close(egressFd)
		var req [2]byte
		for {
			n, _, _, _, err := unix.Recvmsg(egressFd, req[:], nil, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n != len(req) {
				return
			}
			var reply [4]byte
			fd, errno := dialLoopback(binary.BigEndian.Uint16(req[:]), ports)
			var oob []byte
			if fd >= 0 {
				oob = unix.UnixRights(fd)
			} else {
				binary.BigEndian.PutUint32(reply[:], uint32(errno))
			}
			err = unix.Sendmsg(egressFd, reply[:], oob, nil, 0)
			if fd >= 0 {
				unix.Close(fd)
			}
			if err != nil {
				return
			}
		}
	}()
}

// dialLoopback connects to 127.0.0.1:port of the init's network namespace, when port
// is one of ports.
func dialLoopback(port uint16, ports []uint16) (int, unix.Errno) {
	if !slices.Contains(ports, port) {
		return -1, unix.EPERM
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err.(unix.Errno)
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		var errno unix.Errno
		if !errors.As(err, &errno) {
			errno = unix.EIO
		}
		return -1, errno
	}
	return fd, 0
}

// netSock is the owner's end of fd 7: the egress's listening sockets come first (when
// the sandbox has egress), then the replies to dial requests, one at a time.
type netSock struct {
	f     *os.File
	ready chan struct{} // closed once the egress's sockets are received (or none come)
	mu    sync.Mutex
	dead  bool
}

// dial asks the init for a connection to port inside the sandbox.
func (n *netSock) dial(port uint16) (net.Conn, error) {
	<-n.ready
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dead {
		return nil, errors.New("the sandbox is gone")
	}
	fd := int(n.f.Fd())
	if err := unix.Sendmsg(fd, binary.BigEndian.AppendUint16(nil, port), nil, nil, 0); err != nil {
		n.dead = true
		return nil, fmt.Errorf("ask the sandbox's init: %w", err)
	}
	var reply [4]byte
	oob := make([]byte, unix.CmsgSpace(4))
	got, oobn, _, _, err := unix.Recvmsg(fd, reply[:], oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || got != len(reply) {
		n.dead = true
		return nil, fmt.Errorf("the sandbox's init did not answer: %v", err)
	}
	fds := wire.Rights(oob[:oobn])
	if errno := binary.BigEndian.Uint32(reply[:]); errno != 0 || len(fds) != 1 {
		closeFds(fds)
		return nil, fmt.Errorf("connect to port %d inside: %w", port, unix.Errno(errno))
	}
	f := os.NewFile(uintptr(fds[0]), "publish")
	defer f.Close()
	return net.FileConn(f)
}

func (n *netSock) close() {
	n.mu.Lock()
	n.dead = true
	n.f.Close()
	n.mu.Unlock()
}

// publisher is the owner's port forwards: its host listeners and open connections.
type publisher struct {
	pub   []net.Listener // the forwards' host listeners, in config.Publish's order
	lns   []net.Listener // every listener, the host ports' too: closed by close
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	done  bool
	// slots bounds the connections carried at once (egress.MaxConns, as the proxy's:
	// their goroutines live on the host); stop is closed by close
	slots chan struct{}
	stop  chan struct{}
}

func newPublisher() *publisher {
	return &publisher{conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, egress.MaxConns), stop: make(chan struct{})}
}

// take tracks the accepted connection c once a slot is free; false when closing.
func (p *publisher) take(c net.Conn) bool {
	select {
	case p.slots <- struct{}{}:
	case <-p.stop:
		c.Close()
		return false
	}
	if !p.track(c) {
		<-p.slots
		c.Close()
		return false
	}
	return true
}

// give back c's slot (and close it).
func (p *publisher) give(c net.Conn) {
	p.untrack(c)
	<-p.slots
}

// listenPublish binds the host side of each port forward.
func listenPublish(list []config.Publish) (*publisher, error) {
	p := newPublisher()
	for _, f := range list {
		a, _ := netip.ParseAddr(f.HostIP)
		l, err := net.Listen("tcp", netip.AddrPortFrom(a, f.HostPort).String())
		if err != nil {
			p.close()
			return nil, fmt.Errorf("publish %s:%d: %w", f.HostIP, f.HostPort, err)
		}
		p.pub = append(p.pub, l)
		p.lns = append(p.lns, l)
	}
	return p, nil
}

// serve carries the connections of each forward's listener to its port inside, through
// n, and reports each with its byte counts when it closes.
func (p *publisher) serve(list []config.Publish, n *netSock, events func(egress.Event)) {
	for i, l := range p.pub {
		port := list[i].Port
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					if errors.Is(err, net.ErrClosed) {
						return
					}
					time.Sleep(20 * time.Millisecond) // EMFILE and the like: not for good
					continue
				}
				if !p.take(c) {
					return
				}
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					defer p.give(c)
					ev := egress.Event{Net: "allow", Proto: "publish", Host: list[i].HostIP, Port: list[i].HostPort,
						Rule: "network.publish", Addr: c.RemoteAddr().String()}
					in, err := n.dial(port)
					if err == nil && !p.track(in) {
						in.Close()
						return
					}
					if err != nil {
						ev.Error = err.Error()
					} else {
						defer p.untrack(in)
						ev.BytesOut, ev.BytesIn = copyBothCount(in, c)
					}
					if events != nil {
						events(ev)
					}
				}()
			}
		}()
	}
}

// serveHostPorts carries the connections accepted on the init's listening sockets fds
// (127.0.0.1:PORT inside, one per port of ports) to the host's 127.0.0.1:PORT, and
// reports each with its byte counts when it closes.
func (p *publisher) serveHostPorts(fds []int, ports []uint16, events func(egress.Event)) {
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "host-port")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			continue
		}
		p.mu.Lock()
		if p.done {
			p.mu.Unlock()
			l.Close()
			continue
		}
		p.lns = append(p.lns, l)
		p.wg.Add(1)
		p.mu.Unlock()
		port := ports[i]
		go func() {
			defer p.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					if errors.Is(err, net.ErrClosed) {
						return
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if !p.take(c) {
					return
				}
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					defer p.give(c)
					ev := egress.Event{Net: "allow", Proto: "host-port", Host: "127.0.0.1", Port: port, Rule: "network.host_ports"}
					up, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port).String(), 10*time.Second)
					if err == nil && !p.track(up) {
						up.Close()
						return
					}
					if err != nil {
						ev.Error = err.Error()
					} else {
						defer p.untrack(up)
						ev.Addr = up.RemoteAddr().String()
						ev.BytesOut, ev.BytesIn = copyBothCount(c, up)
					}
					if events != nil {
						events(ev)
					}
				}()
			}
		}()
	}
}

func (p *publisher) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *publisher) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// close stops the forwards: listeners and connections closed, goroutines waited for.
func (p *publisher) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !p.done {
		close(p.stop)
	}
	p.done = true
	for _, l := range p.lns {
		l.Close()
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// copyBothCount copies a to b and b to a until both directions end, passing
// half-closes on, and returns the bytes copied from a to b and from b to a.
func copyBothCount(a, b net.Conn) (ab, ba int64) {
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(b, a)
		closeWrite(b)
		done <- n
	}()
	ba, _ = io.Copy(a, b)
	closeWrite(a)
	return <-done, ba
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
