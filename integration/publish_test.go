package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// --publish: a server the command starts on the sandbox's loopback answers on the
// host's port while the sandbox runs (for every connection, the init connects inside),
// and the port is closed once it ends; the sandbox still has only lo, seen from the
// host (--net none, and --net proxy, where fd 6 carries the egress's sockets too). With
// --net host it is refused.
func TestPublish(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"none", "proxy"} {
			t.Run(mode, func(t *testing.T) { publishOnce(t, c, mode) })
		}
	})
}

func publishOnce(t *testing.T, c caller, mode string) {
	s := newSandbox(t, c)
	s.writeWS("index.html", "served from inside "+s.id, 0o644)
	stop := filepath.Join(s.ws, "stop-"+s.id)
	port := freePort(t)
	ctx := s.limitCtx(runLimit)
	statusR, statusW, err := os.Pipe()
	must(t, err)
	defer statusR.Close()
	cmd := s.command(ctx, "--status-fd", "3", "--net", mode, "--publish", fmt.Sprintf("%d:8000", port), "--", shellPath, "-c",
		`python3 -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 & while [ ! -e "$1" ]; do sleep 0.05; done; kill $!; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`,
		"_", stop)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.ExtraFiles = []*os.File{statusW}
	must(t, cmd.Start())
	statusW.Close()
	// from the host: the sandbox's network namespace (its init's) has only lo
	var first struct {
		ChildPid int `json:"child-pid"`
	}
	statusBuf := bufio.NewReader(statusR)
	line, err := statusBuf.ReadString('\n')
	must(t, err)
	must(t, json.Unmarshal([]byte(line), &first))
	dev, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", first.ChildPid))
	must(t, err)
	var ifaces []string
	for _, l := range strings.Split(string(dev), "\n")[2:] {
		if name, _, ok := strings.Cut(l, ":"); ok {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if strings.Join(ifaces, " ") != "lo" {
		t.Errorf("the sandbox's interfaces, seen from the host: %v", ifaces)
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/index.html", port)
	var body string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		// until the server inside listens, the init's connect is refused and the
		// forwarded connection is closed at once
		if resp, err := http.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				body = string(b)
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, os.WriteFile(stop, nil, 0o644))
	err = cmd.Wait()
	if body != "served from inside "+s.id {
		t.Errorf("through the forward: %q", body)
	}
	rest, _ := io.ReadAll(statusBuf)
	if !strings.Contains(string(rest), fmt.Sprintf(`{"net":"allow","proto":"publish","host":"127.0.0.1","port":%d,"rule":"network.publish"`, port)) {
		t.Errorf("no publish status line:\n%s", rest)
	}
	if err != nil || strings.TrimSpace(out.String()) != "lo" {
		t.Errorf("gosbx: %v, stdout %q (want only lo), stderr %q", err, out.String(), errb.String())
	}
	if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
		conn.Close()
		t.Errorf("port %d still open after the sandbox ended", port)
	}
	r := s.run("--net", "host", "--publish", fmt.Sprintf("%d:8000", port), "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "--publish needs a network namespace") {
		t.Errorf("--publish with --net host: %v", r)
	}
}

// --host-port: the host's 127.0.0.1:PORT answers at the sandbox's own 127.0.0.1:PORT
// (the connection reported on the status fd), and only that port: the host's other
// loopback servers stay out of reach.
func TestHostPort(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, mode := range []string{"none", "proxy"} {
			t.Run(mode, func(t *testing.T) {
				s := newSandbox(t, c)
				mux := http.NewServeMux()
				mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host server "+s.id) })
				var ports []int
				for i := 0; i < 2; i++ {
					l, err := net.Listen("tcp", "127.0.0.1:0")
					must(t, err)
					srv := &http.Server{Handler: mux}
					go srv.Serve(l)
					t.Cleanup(func() { srv.Close() })
					ports = append(ports, l.Addr().(*net.TCPAddr).Port)
				}
				status := filepath.Join(s.base, "status.json")
				sf, err := os.Create(status)
				must(t, err)
				defer sf.Close()
				ctx := s.limitCtx(runLimit)
				cmd := s.command(ctx, "--net", mode, "--status-fd", "3", "--host-port", fmt.Sprint(ports[0]), "--", shellPath, "-c",
					`curl -sS --noproxy '*' http://127.0.0.1:$1/; echo " rc=$?"; curl -sS --noproxy '*' -m 5 http://127.0.0.1:$2/; echo " rc=$?"`,
					"_", fmt.Sprint(ports[0]), fmt.Sprint(ports[1]))
				cmd.ExtraFiles = []*os.File{sf}
				r := s.runCmd(ctx, cmd)
				mustSucceed(t, r, "host-port script")
				want := "host server " + s.id + " rc=0\n rc=7\n"
				if r.stdout != want {
					t.Errorf("stdout %q, want %q", r.stdout, want)
				}
				b, _ := os.ReadFile(status)
				if !strings.Contains(string(b), fmt.Sprintf(`{"net":"allow","proto":"host-port","host":"127.0.0.1","port":%d,"rule":"network.host_ports"`, ports[0])) {
					t.Errorf("no host-port status line:\n%s", b)
				}
			})
		}
		s := newSandbox(t, c)
		if r := s.run("--net", "host", "--host-port", "5432", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "--host-port needs a network namespace") {
			t.Errorf("--host-port with --net host: %v", r)
		}
		if r := s.run("--policy", "strict", "--host-port", "5432", "--", "true"); r.code != 125 || !strings.Contains(r.stderr, "network.allow_extra_hosts") {
			t.Errorf("--host-port under strict: %v", r)
		}
		// the same through a policy file that extends a profile: extends kept only the
		// network mode once, and the file's allow_extra_hosts: false did not hold
		pf := filepath.Join(s.base, "ext.yaml")
		if err := os.WriteFile(pf, []byte("extends: agent\nnetwork:\n  mode: proxy\n  deny: [secret.example.com]\n  allow_extra_hosts: false\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, flag := range [][]string{{"--allow-host", "secret.example.com"}, {"--host-port", "5432"}} {
			args := append(append([]string{"--policy", pf}, flag...), "--", "true")
			if r := s.run(args...); r.code != 125 || !strings.Contains(r.stderr, "network.allow_extra_hosts") {
				t.Errorf("%s under a policy extending agent with allow_extra_hosts: false: %v", flag[0], r)
			}
		}
	})
}
