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

// Trial findings: an allowed loopback port with nothing behind it gave curl's own
// "Empty reply" or "Couldn't connect", a bare --allow-host 127.0.0.1 then curl of
// another port failed silently, and curl localhost:PORT under --allow-host
// 127.0.0.1:PORT was told to pass --allow-host localhost:PORT, which failed again.
// Now: a 502 and a gosbx note naming host, port and cause; a note at launch naming the
// flag with the port; localhost is 127.0.0.1 for rules and requests, the hint's flag
// followed literally works, and a port no flag names stays unreachable.
func TestLoopbackTrialCases(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		l, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host-side") })}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		hp := l.Addr().(*net.TCPAddr).Port
		down, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		dp := down.Addr().(*net.TCPAddr).Port
		down.Close() // allowed, but nothing listens: the host is "down"
		curl := func(allow, url string, extra ...string) result {
			args := []string{"--net", "proxy", "--allow-host", allow, "--", "curl", "-sS", "-m", "10", "-w", "|%{http_code}"}
			return s.run(append(append(args, extra...), url)...)
		}

		r := curl(fmt.Sprintf("127.0.0.1:%d", dp), fmt.Sprintf("http://127.0.0.1:%d/", dp))
		want := fmt.Sprintf("gosbx: note: 127.0.0.1:%d is allowed (rule network.allow 127.0.0.1:%d), but the connection to it failed: dial tcp 127.0.0.1:%d: connect: connection refused: nothing listens on that port of the host", dp, dp, dp)
		if !strings.HasSuffix(r.stdout, "|502") || !strings.Contains(r.stdout, "nothing listens") || !strings.Contains(r.stderr, want) {
			t.Errorf("an allowed loopback port with nothing behind it: want a 502 and %q\n%v", want, r)
		}

		r = curl("127.0.0.1", fmt.Sprintf("http://127.0.0.1:%d/", hp))
		want = "gosbx: note: --allow-host 127.0.0.1 names no port: it allows ports 80 and 443 of the host's loopback only; for another, name it (--allow-host 127.0.0.1:PORT)"
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("--allow-host 127.0.0.1, then another port: want curl to fail and %q\n%v", want, r)
		}

		for _, allow := range []string{fmt.Sprintf("127.0.0.1:%d", hp), fmt.Sprintf("localhost:%d", hp)} {
			r = curl(allow, fmt.Sprintf("http://localhost:%d/", hp))
			if r.code != 0 || r.stdout != "host-side|200" {
				t.Errorf("curl localhost:%d with --allow-host %s: want the host's answer\n%v", hp, allow, r)
			}
		}
		// through the proxy with only ports 80 and 443 allowed: refused, and the flag it
		// names (taken from the message) works as written
		r = curl("127.0.0.1", fmt.Sprintf("http://localhost:%d/", hp), "--noproxy", "", "-x", "http://127.0.0.1:3128", "-o", "/dev/null")
		_, rest, ok := strings.Cut(r.stderr, "(or --allow-host ")
		flag, _, _ := strings.Cut(rest, ")")
		if !ok || r.stdout != "|403" || flag != fmt.Sprintf("127.0.0.1:%d", hp) {
			t.Fatalf("localhost:%d through the proxy, port not allowed: want a 403 naming --allow-host 127.0.0.1:%d\n%v", hp, hp, r)
		}
		r = curl(flag, fmt.Sprintf("http://localhost:%d/", hp), "--noproxy", "", "-x", "http://127.0.0.1:3128")
		if r.code != 0 || r.stdout != "host-side|200" {
			t.Errorf("the hint's --allow-host %s followed: want the host's answer\n%v", flag, r)
		}
		// localhost:PORT names that port alone
		r = curl(fmt.Sprintf("localhost:%d", dp), fmt.Sprintf("http://localhost:%d/", hp), "--noproxy", "", "-x", "http://127.0.0.1:3128", "-o", "/dev/null")
		if r.stdout != "|403" || strings.Contains(r.stdout, "host-side") {
			t.Errorf("--allow-host localhost:%d reached port %d\n%v", dp, hp, r)
		}
	})
}

// In a session, the note of an allowed host that cannot be reached goes to the stderr
// of the request that made the connection, as a denial does.
func TestLoopbackDownInSession(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		down, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		dp := down.Addr().(*net.TCPAddr).Port
		down.Close()
		e.start("d", "--net", "proxy", "--allow-host", fmt.Sprintf("127.0.0.1:%d", dp))
		r := e.in("d", nil, fmt.Sprintf("curl -sS -m 10 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/", dp))
		want := fmt.Sprintf("gosbx: note: 127.0.0.1:%d is allowed (rule network.allow 127.0.0.1:%d), but the connection to it failed", dp, dp)
		if r.stdout != "502" || !strings.Contains(r.stderr, want) {
			t.Errorf("a session's request to an allowed port with nothing behind it: want 502 and %q\n%v", want, r)
		}
	})
}
