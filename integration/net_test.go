package integration

import (
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// netProbe prints the net namespace, every interface with its IFF_UP flag,
// and whether a loopback TCP round trip works.
const netProbe = `
import fcntl, os, socket, struct
print("NS", os.readlink("/proc/self/ns/net"))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _, name in socket.if_nameindex():
    flags = struct.unpack("H", fcntl.ioctl(s, 0x8913, struct.pack("256s", name.encode()))[16:18])[0]
    print("IF", name, flags & 1)
try:
    l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
    c = socket.create_connection(l.getsockname(), timeout=3); a, _ = l.accept()
    c.sendall(b"ping"); assert a.recv(4) == b"ping"
    print("LOOPBACK ok")
except Exception as e:
    print("LOOPBACK", repr(e))
`

type netView struct {
	ns       string
	ifs      map[string]bool // name -> up
	loopback string
}

func parseNet(out string) netView {
	v := netView{ifs: map[string]bool{}}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 2 && f[0] == "NS":
			v.ns = f[1]
		case len(f) == 3 && f[0] == "IF":
			v.ifs[f[1]] = f[2] == "1"
		case len(f) >= 2 && f[0] == "LOOPBACK":
			v.loopback = strings.Join(f[1:], " ")
		}
	}
	return v
}

func hostInterfaces(t *testing.T) []string {
	b, err := os.ReadFile("/proc/net/dev")
	must(t, err)
	var names []string
	for i, l := range strings.Split(string(b), "\n") {
		if i < 2 {
			continue
		}
		if n, _, ok := strings.Cut(l, ":"); ok {
			names = append(names, strings.TrimSpace(n))
		}
	}
	sort.Strings(names)
	return names
}

// --net none (the default): a new net namespace with only lo, up, and a
// working loopback.
func TestNetNone(t *testing.T) {
	hostNS, err := os.Readlink("/proc/self/ns/net")
	must(t, err)
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, flags := range [][]string{nil, {"--net", "none"}} {
			s := newSandbox(t, c)
			r := s.run(append(flags, "--", python, "-c", netProbe)...)
			mustSucceed(t, r, "net probe")
			v := parseNet(r.stdout)
			if v.ns == "" || v.ns == hostNS {
				t.Errorf("%v: net namespace inside %q, host %q: not a new one", flags, v.ns, hostNS)
			}
			if len(v.ifs) != 1 || !v.ifs["lo"] {
				t.Errorf("%v: interfaces inside %v, want only lo, up", flags, v.ifs)
			}
			if v.loopback != "ok" {
				t.Errorf("%v: loopback TCP inside: %s", flags, v.loopback)
			}
		}
	})
}

// Name lookups: localhost resolves, a failing lookup fails fast.
func TestNetNoneResolver(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `getent hosts localhost >/dev/null || echo "NO-LOCALHOST"
if timeout 20 getent hosts gosbx-it.invalid >/dev/null; then echo "RESOLVED-INVALID"; fi; exit 0`)
		mustSucceed(t, r, "resolver")
		if strings.Contains(r.stdout, "NO-LOCALHOST") || strings.Contains(r.stdout, "RESOLVED-INVALID") {
			t.Errorf("resolver inside:\n%v", r)
		}
		if r.elapsed.Seconds() > 8 {
			t.Errorf("a failing lookup took %v", r.elapsed)
		}
	})
}

// --net host: the host's namespace and interfaces.
func TestNetHost(t *testing.T) {
	hostNS, err := os.Readlink("/proc/self/ns/net")
	must(t, err)
	want := hostInterfaces(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--net", "host", "--", python, "-c", netProbe)
		mustSucceed(t, r, "net probe")
		v := parseNet(r.stdout)
		if v.ns != hostNS {
			t.Errorf("--net host: namespace inside %q, want the host's %q", v.ns, hostNS)
		}
		var got []string
		for n := range v.ifs {
			got = append(got, n)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("--net host: interfaces inside %v, host %v", got, want)
		}
		if v.loopback != "ok" {
			t.Errorf("--net host: loopback TCP inside: %s", v.loopback)
		}
	})
}

// hostListener accepts on the host's loopback and reports what it receives.
func hostListener(t *testing.T) (port string, got <-chan string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	ch := make(chan string, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			b := make([]byte, 64)
			n, _ := c.Read(b)
			ch <- string(b[:n])
			c.Close()
		}
	}()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port), ch
}

const connectProbe = `
import socket, sys
try:
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3)
    c.sendall(sys.argv[2].encode()); c.close(); print("CONNECTED")
except OSError as e:
    print("REFUSED", e)
`

// The host's loopback is reachable with --net host only.
func TestNetHostLoopbackReach(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"none", "host"} {
			s := newSandbox(t, c)
			port, got := hostListener(t)
			msg := "hello-" + mode + "-" + s.id
			r := s.run("--net", mode, "--", python, "-c", connectProbe, port, msg)
			mustSucceed(t, r, "connect probe")
			var recv string
			select {
			case recv = <-got:
			case <-time.After(500 * time.Millisecond):
			}
			switch mode {
			case "none":
				if recv != "" || strings.Contains(r.stdout, "CONNECTED") {
					t.Errorf("--net none reached a host loopback listener (host got %q):\n%v", recv, r)
				}
			case "host":
				if recv != msg {
					t.Errorf("--net host: host listener got %q, want %q\n%v", recv, msg, r)
				}
			}
		}
	})
}
