package integration

// New-user trial 2026-12-02 T1: curl https://127.0.0.1:PORT/ under --allow-host
// 127.0.0.1:PORT skips the proxy (NO_PROXY names 127.0.0.1), sends no server name (an
// address literal), and is refused by rule capture; the refusal said "use the proxy
// (..., set inside)", which curl was already ignoring. The refusal now names the fixes
// that work for that client, and each, followed as written, reaches the host's server.

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestLoopbackTLSAddressLiteralFix(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host-tls") }))
		srv.StartTLS()
		t.Cleanup(srv.Close)
		hp := srv.Listener.Addr().(*net.TCPAddr).Port
		allow := fmt.Sprintf("127.0.0.1:%d", hp)
		curl := func(flags []string, url string, extra ...string) result {
			args := append(append([]string{"--net", "proxy"}, flags...), "--", "curl", "-sS", "-k", "-m", "10")
			return s.run(append(append(args, extra...), url)...)
		}

		// as the trial did it: refused, and the message names the three fixes
		r := curl([]string{"--allow-host", allow}, fmt.Sprintf("https://127.0.0.1:%d/pkg.txt", hp))
		for _, want := range []string{
			fmt.Sprintf("gosbx: blocked by gosbx policy: a connection to loopback port %d without a server name is denied by rule capture", hp),
			fmt.Sprintf("connect by the name localhost (https://localhost:%d/)", hp),
			fmt.Sprintf("pass --host-port %d", hp),
			"curl --noproxy '' …",
		} {
			if r.code == 0 || !strings.Contains(r.stderr, want) {
				t.Errorf("https to 127.0.0.1:%d: want a refusal saying %q\n%v", hp, want, r)
			}
		}
		// each fix, as the message words it, works
		for _, fix := range []struct {
			name  string
			flags []string
			url   string
			extra []string
		}{
			{"localhost", []string{"--allow-host", allow}, fmt.Sprintf("https://localhost:%d/pkg.txt", hp), nil},
			{"host-port", []string{"--host-port", fmt.Sprint(hp)}, fmt.Sprintf("https://127.0.0.1:%d/pkg.txt", hp), nil},
			{"noproxy", []string{"--allow-host", allow}, fmt.Sprintf("https://127.0.0.1:%d/pkg.txt", hp), []string{"--noproxy", ""}},
		} {
			r := curl(fix.flags, fix.url, fix.extra...)
			if r.code != 0 || r.stdout != "host-tls" {
				t.Errorf("fix %s (%v %s %v): want the host's answer\n%v", fix.name, fix.flags, fix.url, fix.extra, r)
			}
		}
	})
}
