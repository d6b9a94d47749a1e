package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// benchServer sends size bytes to every connection, after reading one line; its port.
func benchServer(b *testing.B, size int) uint16 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	buf := make([]byte, 1<<20)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadString('\n')
				for n := size; n > 0; n -= len(buf) {
					if _, err := c.Write(buf[:min(n, len(buf))]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// The relay's throughput on loopback: 64 MiB through a CONNECT tunnel, against the
// same server read directly (the two extra loopback hops and the splice are the cost).
func BenchmarkRelayDownload(b *testing.B) {
	const size = 64 << 20
	port := benchServer(b, size)
	for _, via := range []string{"direct", "connect"} {
		b.Run(via, func(b *testing.B) {
			pol, _ := NewPolicy([]string{fmt.Sprintf("up.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port)}, nil)
			p := &Proxy{Policy: pol, Lookup: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}}
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			p.Serve(Listeners{HTTP: l})
			defer p.Close()
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				var c net.Conn
				var r io.Reader
				if via == "direct" {
					c, _ = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
					r = c
				} else {
					c, _ = net.Dial("tcp", l.Addr().String())
					fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", port)
					br := bufio.NewReader(c)
					for {
						line, _ := br.ReadString('\n')
						if line == "\r\n" || line == "" {
							break
						}
						if strings.HasPrefix(line, "HTTP/") && !strings.Contains(line, " 200 ") {
							b.Fatal(line)
						}
					}
					r = br
				}
				c.Write([]byte("go\n"))
				n, _ := io.Copy(io.Discard, r)
				c.Close()
				if n != size {
					b.Fatalf("%d bytes", n)
				}
			}
		})
	}
}

// A new connection's cost through the proxy: CONNECT, one line up, 2 bytes back, close,
// against the same exchange with the server directly.
func BenchmarkRelayConnect(b *testing.B) {
	port := benchServer(b, 2)
	for _, via := range []string{"direct", "connect"} {
		b.Run(via, func(b *testing.B) {
			pol, _ := NewPolicy([]string{fmt.Sprintf("up.test:%d", port), fmt.Sprintf("127.0.0.1:%d", port)}, nil)
			p := &Proxy{Policy: pol, Lookup: func(context.Context, string) ([]netip.Addr, error) {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}}
			l, _ := net.Listen("tcp", "127.0.0.1:0")
			p.Serve(Listeners{HTTP: l})
			defer p.Close()
			for i := 0; i < b.N; i++ {
				var c net.Conn
				var r io.Reader
				if via == "direct" {
					c, _ = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
					r = c
				} else {
					c, _ = net.Dial("tcp", l.Addr().String())
					fmt.Fprintf(c, "CONNECT up.test:%d HTTP/1.1\r\n\r\n", port)
					br := bufio.NewReader(c)
					for {
						line, _ := br.ReadString('\n')
						if line == "\r\n" || line == "" {
							break
						}
					}
					r = br
				}
				c.Write([]byte("go\n"))
				n, _ := io.Copy(io.Discard, r)
				c.Close()
				if n != 2 {
					b.Fatalf("%d bytes", n)
				}
			}
		})
	}
}
