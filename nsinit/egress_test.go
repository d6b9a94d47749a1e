package nsinit

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gosbx/gosbx/egress"
	"github.com/gosbx/gosbx/policy"
)

// A library caller's sandboxes with egress, a port forward and a host port, run one
// after another: each one's proxy, forwards and fd 7 carry traffic while it runs and
// are gone once Wait returns: the same descriptors and goroutines as before, the
// forwarded port closed, and every status line delivered before Wait returned.
func TestEgressLeavesNothing(t *testing.T) {
	ws := testWorkspace(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "host") })}
	go srv.Serve(l)
	defer srv.Close()
	hostPort := l.Addr().(*net.TCPAddr).Port
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pubPort := pl.Addr().(*net.TCPAddr).Port
	pl.Close()
	spec := compile(t, policy.Options{Workspace: ws, Args: []string{"/bin/sh", "-c",
		// the host port through the init's socket; a denied CONNECT through the proxy
		fmt.Sprintf(`curl -sS --noproxy '*' http://127.0.0.1:%d/ && curl -sS -o /dev/null -w ' %%{http_code}' -x http://127.0.0.1:3128 --noproxy '' http://evil.test/`, hostPort)},
		AllowHosts: []string{"pypi.org"}, HostPorts: []uint16{uint16(hostPort)}, Publish: []string{fmt.Sprintf("%d:8000", pubPort)}}, nil)
	run := func() (string, []egress.Event) {
		var out strings.Builder
		var evs []egress.Event
		c := Command(spec)
		c.Stdout = &out
		c.NetEvents = func(e egress.Event) { evs = append(evs, e) }
		if err := c.Run(); err != nil {
			skipIfNoSandbox(t, err)
			t.Fatalf("run: %v", err)
		}
		return out.String(), evs
	}
	run() // the first run starts what Go keeps (threads, the poller)
	time.Sleep(100 * time.Millisecond)
	before, err := takeProcSnap()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		out, evs := run()
		if out != "host 403" {
			t.Fatalf("run %d: %q", i, out)
		}
		var allow, deny bool
		for _, e := range evs {
			allow = allow || e.Net == "allow" && e.Proto == "host-port" && e.BytesIn > 0
			deny = deny || e.Net == "deny" && e.Host == "evil.test"
		}
		if !allow || !deny {
			t.Errorf("run %d: status lines %+v", i, evs)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", pubPort), time.Second); err == nil {
			c.Close()
			t.Errorf("run %d: the forwarded port is still open", i)
		}
	}
	deadline := time.Now().Add(soakSettle)
	for {
		// splice(2)'s pipes are kept by Go in a sync.Pool, closed by a finalizer once
		// two collections drop them
		runtime.GC()
		after, err := takeProcSnap()
		if err != nil {
			t.Fatal(err)
		}
		leaked := newFds(before.fds, after.fds)
		if len(leaked) == 0 && after.goroutines <= before.goroutines {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left behind: descriptors %v, goroutines %d → %d", leaked, before.goroutines, after.goroutines)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// /proc/net/tcp prints an IPv4 socket address as the address's 32 bits in host order
// and the port, in hex: the origin lookup compares them as text.
func TestProcTCPAddr(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1:443": "0100007F:01BB", "127.77.1.2:53": "02014D7F:0035"} {
		if got := procTCPAddr(netip.MustParseAddrPort(in)); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
