package integration

// Trial finding: with --net proxy --allow-host 127.0.0.1:PORT, curl http://127.0.0.1:PORT/
// failed "Couldn't connect" with no gosbx line: NO_PROXY (127.0.0.1) sends it to the
// sandbox's own loopback, where nothing listened. The allowed loopback port is now
// captured inside and carried to the host's; a denied loopback address names the exact
// flag. The regular binary (no test resolver): only an address rule is involved.

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestLoopbackAllowHost(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host-side") })}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		hp := l.Addr().(*net.TCPAddr).Port
		url := fmt.Sprintf("http://127.0.0.1:%d/", hp)

		// as the trial did it: the client obeys NO_PROXY and connects to 127.0.0.1 inside
		r := s.run("--net", "proxy", "--allow-host", fmt.Sprintf("127.0.0.1:%d", hp), "--", "curl", "-sS", "-m", "10", url)
		if r.code != 0 || r.stdout != "host-side" {
			t.Errorf("curl %s with --allow-host 127.0.0.1:%d: want the host's answer\n%v", url, hp, r)
		}
		// the address alone allows ports 80 and 443: through the proxy it is denied,
		// and the message names the flag that works, port included
		r = s.run("--net", "proxy", "--allow-host", "127.0.0.1", "--", "curl", "-sS", "-m", "10", "--noproxy", "", "-x", "http://127.0.0.1:3128",
			"-o", "/dev/null", "-w", "%{http_code}", url)
		want := fmt.Sprintf("(or --allow-host 127.0.0.1:%d) to reach it; a port of this host is also reached at the sandbox's own 127.0.0.1:%d with --host-port %d", hp, hp, hp)
		if r.stdout != "403" || !strings.Contains(r.stderr, want) {
			t.Errorf("denied loopback port: want 403 and %q on stderr\n%v", want, r)
		}
	})
}
