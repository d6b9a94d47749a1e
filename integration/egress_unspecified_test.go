package integration

// From an attack review (regress): connect(2) to 0.0.0.0 reaches the host's own
// loopback, so a policy allowing 0.0.0.0/0 and denying 127.0.0.0/8 must refuse
// http://0.0.0.0:PORT/ as it refuses http://127.0.0.1:PORT/.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestEgressUnspecifiedIsLoopback(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, nobodyCaller)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var hits atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintln(w, "host-loopback-secret")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	pol := filepath.Join(s.base, "egress.yaml")
	must(t, os.WriteFile(pol, []byte("extends: agent\nnetwork:\n  mode: proxy\n  allow: [\"0.0.0.0/0:*\"]\n  deny: [\"127.0.0.0/8:*\"]\n"), 0o644))
	for _, host := range []string{"0.0.0.0", "127.0.0.1"} {
		r := s.run("--policy", pol, "--", "curl", "-s", "-m", "5", "--noproxy", "", "-x", "http://127.0.0.1:3128", fmt.Sprintf("http://%s:%d/", host, port))
		if strings.Contains(r.stdout, "host-loopback-secret") {
			t.Errorf("%s:%d reached the host's loopback past network.deny 127.0.0.0/8\n%v", host, port, r)
		}
		if !strings.Contains(r.stdout, "network.deny 127.0.0.0/8") {
			t.Errorf("%s:%d: want a refusal by network.deny 127.0.0.0/8\n%v", host, port, r)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the host's server got %d requests, want none", n)
	}
}
