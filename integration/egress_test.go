package integration

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testnetBinary builds gosbx with -tags gosbxtestnet (the proxy resolves the names of
// $GOSBX_TEST_HOSTS, egress/lookup_testnet.go) into a directory any user can read,
// once for the tests that need it; TestMain removes it (removeTestnetBinary).
var testnetBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-it-testnet-")
	if err != nil {
		return "", err
	}
	testnetDir.Store(&dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "gosbx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "gosbxtestnet", "-o", bin, "./cmd/gosbx")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -tags gosbxtestnet: %v\n%s", err, out)
	}
	return bin, os.Chmod(bin, 0o755)
})

var testnetDir atomic.Pointer[string]

func removeTestnetBinary() {
	if d := testnetDir.Load(); d != nil {
		os.RemoveAll(*d)
	}
}

// egressServers are the host's side of the egress tests, all on loopback: a plain
// HTTP server, an HTTPS server (a self-signed certificate for pkg.test and pkg2.test,
// its PEM in caFile), a TCP echo server, and an HTTPS server on captureAddr:443 for
// capture (the proxy dials port 443 of the name's address) when that can be bound.
type egressServers struct {
	httpPort, httpsPort, echoPort int
	otherPort                     int // a loopback server no rule names
	capture                       bool
	caFile                        string
}

func startEgressServers(t *testing.T, dir, captureAddr string) *egressServers {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkg.test"},
		DNSNames: []string{"pkg.test", "pkg2.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	es := &egressServers{caFile: filepath.Join(dir, "ca.pem")}
	must(t, os.WriteFile(es.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		scheme := "plain"
		if r.TLS != nil {
			scheme = "tls"
		}
		fmt.Fprintf(w, "ok-%s host=%s", scheme, r.Host)
	})
	serve := func(addr string, tlsOn bool) (int, error) {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return 0, err
		}
		if tlsOn {
			l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}})
		}
		srv := &http.Server{Handler: mux}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	es.httpPort, err = serve("127.0.0.1:0", false)
	must(t, err)
	es.httpsPort, err = serve("127.0.0.1:0", true)
	must(t, err)
	es.otherPort, err = serve("127.0.0.1:0", false)
	must(t, err)
	_, err = serve(captureAddr+":443", true)
	es.capture = err == nil
	if es.capture {
		_, err = serve(captureAddr+":80", false)
		es.capture = err == nil
	}
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { echo.Close() })
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	es.echoPort = echo.Addr().(*net.TCPAddr).Port
	return es
}

// The egress script: each check prints "name=result" on a line of its own.
const egressScript = `
ca=$1 hp=$2 sp=$3 ep=$4 op=$5
t0=$(date +%s%N)
r() { n=$1; shift; out=$("$@" 2>/dev/null); rc=$?; printf '%s=%s rc=%s\n' "$n" "$(printf %s "$out" | tr -d '\n')" $rc; }
r curl-https curl -sS --cacert "$ca" https://pkg.test:$sp/a
r curl-http curl -sS http://pkg.test:$hp/b
r curl-socks curl -sS --cacert "$ca" -x socks5h://127.0.0.1:1080 https://pkg.test:$sp/c
r py-https env SSL_CERT_FILE="$ca" python3 -c "import urllib.request as u; print(u.urlopen('https://pkg.test:$sp/d', timeout=5).read().decode())"
r py-http python3 -c "import urllib.request as u; print(u.urlopen('http://pkg.test:$hp/e', timeout=5).read().decode())"
r py-denied python3 -c "
import urllib.request as u
try: u.urlopen('https://evil.test/', timeout=5)
except Exception as e: print(type(e).__name__, e)"
r curl-denied curl -sS -o /dev/null -w '%{http_code}' https://evil.test/
r curl-denied-body curl -sS http://evil.test/
r literal curl -sS -o /dev/null -w '%{http_code}' http://93.184.216.34/
r literal6 curl -sS -o /dev/null -w '%{http_code}' --noproxy '' -x http://127.0.0.1:3128 "http://[::1]:$hp/"
r host-loopback curl -sS -o /dev/null -w '%{http_code}' --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:$op/
r host-loopback-direct curl -sS -m 5 --noproxy '*' http://127.0.0.1:$op/
r metadata curl -sS -o /dev/null -w '%{http_code}' http://meta.test/
r private curl -sS -o /dev/null -w '%{http_code}' http://priv.test/
r socks-denied curl -sS -o /dev/null -x socks5h://127.0.0.1:1080 http://evil.test/
r dns-allowed getent hosts pkg.test
r dns-denied getent hosts evil.test
r dns-aaaa getent ahostsv6 pkg.test
r ifaces sh -c "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"
r cap-port-tls curl -sS --cacert "$ca" --noproxy '*' https://pkg.test:$sp/p
r cap-port-http curl -sS --noproxy '*' http://pkg.test:$hp/q
r cap-port-raw python3 -c "
import socket
a = socket.getaddrinfo('pkg.test', $ep, socket.AF_INET)[0][4]
s = socket.create_connection(a); s.sendall(b'ping'); s.shutdown(socket.SHUT_WR)
print(a[0][:7], s.makefile('rb').read().decode())"
r cap-port-noname python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', $ep)); s.sendall(b'\\x00ping')
print(repr(s.recv(10)))"
r cap-port-sni python3 -c "
import socket, ssl
a = socket.getaddrinfo('pkg.test', $sp, socket.AF_INET)[0][4]
s = socket.create_connection(a)
try: ssl.create_default_context(cafile='$ca').wrap_socket(s, server_hostname='pkg2.test'); print('connected')
except (ssl.SSLError, OSError): print('refused')"
r routes sh -c "tail -n +2 /proc/net/route | wc -l"
r outside python3 -c "
import socket, errno, time
t = time.monotonic()
try: socket.create_connection(('93.184.216.34', 80), timeout=5); print('connected')
except OSError as e: print(errno.errorcode.get(e.errno, e), time.monotonic() - t < 1)"
r addrconfig python3 -c "
import socket
print(socket.getaddrinfo('pkg.test', 443, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4][0].startswith('127.77.'))"
r ahostsv4 sh -c "getent ahostsv4 pkg.test | head -1 | cut -d. -f1-2"
r relay python3 -c "
import socket, threading
# an in-sandbox relay in front of the proxy: it widens nothing, the decision is the host's
ls = socket.socket(); ls.bind(('127.0.0.1', 9999)); ls.listen(1)
def fwd(a, b):
    while True:
        d = a.recv(65536)
        if not d: b.shutdown(socket.SHUT_WR); return
        b.sendall(d)
def serve():
    c, _ = ls.accept(); up = socket.create_connection(('127.0.0.1', 3128))
    threading.Thread(target=fwd, args=(c, up), daemon=True).start(); fwd(up, c)
threading.Thread(target=serve, daemon=True).start()
s = socket.create_connection(('127.0.0.1', 9999))
s.sendall(b'CONNECT evil.test:443 HTTP/1.1\r\n\r\n')
print(s.recv(200).split(b'\r\n')[0].decode())"
r websocket python3 -c "
import socket
s = socket.create_connection(('127.0.0.1', 3128))
s.sendall(b'CONNECT pkg.test:$ep HTTP/1.1\r\nHost: pkg.test\r\n\r\n')
f = s.makefile('rb')
st = f.readline()
while f.readline() not in (b'\r\n', b''): pass
out = []
for frame in (b'\x81\x05hello', b'\x81\x05world'):
    s.sendall(frame); out.append(f.read(len(frame)))
print(st.split()[1].decode(), b''.join(out) == b'\x81\x05hello\x81\x05world')"
if [ -n "$6" ]; then
r capture curl -sS --cacert "$ca" --noproxy '*' https://pkg2.test/f
r capture-http-ok curl -sS --noproxy '*' http://pkg2.test/g
r capture-http curl -sS --noproxy '*' -o /dev/null -w '%{http_code}' -H 'Host: pkg.test' http://pkg2.test/
r capture-addrconfig python3 -c "
import socket
a = socket.getaddrinfo('pkg2.test', 80, socket.AF_INET, socket.SOCK_STREAM, 0, socket.AI_ADDRCONFIG)[0][4]
s = socket.create_connection(a)
s.sendall(b'GET /h HTTP/1.1\\r\\nHost: pkg2.test\\r\\n\\r\\n')
b = b''
while True:
    d = s.recv(4096)
    if not d: break
    b += d
print(a[0].startswith('127.77.'), b.split(b'\\r\\n\\r\\n', 1)[1].decode())"
fi
echo elapsed-ms=$(( ($(date +%s%N) - t0) / 1000000 ))
`

// --net proxy: allowed names work for curl and python through the proxy variables, a
// denied one fails at once naming the rule (403 body, stderr, status line), IP
// literals, the host's loopback, names resolving to private or metadata addresses,
// IPv6 literals and an in-sandbox relay are all refused; DNS answers only allowed
// names; bytes pass both ways through CONNECT; the sandbox has only lo.
func TestEgressProxy(t *testing.T) {
	requireBinary(t)
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// a capture address of each caller's own: the subtests run in parallel
		capAddr := "127.0.0.2"
		if c.uid != 0 {
			capAddr = "127.0.0.3"
		}
		es := startEgressServers(t, s.base, capAddr)
		status := filepath.Join(s.base, "status.json")
		sf, err := os.Create(status)
		must(t, err)
		defer sf.Close()
		args := []string{"--status-fd", "3", "--ro", es.caFile}
		for _, p := range []int{es.httpPort, es.httpsPort, es.echoPort} {
			// the test resolver maps the names to loopback: the address must be named too
			args = append(args, "--allow-host", fmt.Sprintf("pkg.test:%d", p), "--allow-host", fmt.Sprintf("127.0.0.1:%d", p))
		}
		args = append(args, "--allow-host", "meta.test", "--allow-host", "priv.test")
		capture := ""
		if !es.capture {
			t.Logf("capture not tested: %s:443 cannot be bound here", capAddr)
		}
		if es.capture {
			args = append(args, "--allow-host", "pkg2.test:443", "--allow-host", capAddr+":443", "--allow-host", "pkg2.test:80", "--allow-host", capAddr+":80")
			capture = "1"
		}
		args = append(args, "--", shellPath, "-c", egressScript, "_", es.caFile,
			fmt.Sprint(es.httpPort), fmt.Sprint(es.httpsPort), fmt.Sprint(es.echoPort), fmt.Sprint(es.otherPort), capture)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, args...)
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = append(cmd.Env, "GOSBX_TEST_HOSTS=pkg.test=127.0.0.1,pkg2.test="+capAddr+",meta.test=169.254.169.254,priv.test=10.1.2.3")
		cmd.ExtraFiles = []*os.File{sf}
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "egress script")
		got := map[string]string{}
		for _, l := range strings.Split(r.stdout, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				got[k] = v
			}
		}
		want := map[string]string{
			"curl-https":           fmt.Sprintf("ok-tls host=pkg.test:%d rc=0", es.httpsPort),
			"curl-http":            fmt.Sprintf("ok-plain host=pkg.test:%d rc=0", es.httpPort),
			"curl-socks":           fmt.Sprintf("ok-tls host=pkg.test:%d rc=0", es.httpsPort),
			"py-https":             fmt.Sprintf("ok-tls host=pkg.test:%d rc=0", es.httpsPort),
			"py-http":              fmt.Sprintf("ok-plain host=pkg.test:%d rc=0", es.httpPort),
			"py-denied":            "URLError <urlopen error Tunnel connection failed: 403 Forbidden> rc=0",
			"curl-denied":          "000 rc=56",
			"curl-denied-body":     "blocked by gosbx policy: host evil.test:80 not in network.allow; to allow it, pass --allow-host evil.test:80 or add it to network.allow rc=0",
			"literal":              "403 rc=0",
			"literal6":             "403 rc=0",
			"host-loopback":        "403 rc=0",
			"host-loopback-direct": " rc=7",
			"metadata":             "403 rc=0",
			"private":              "403 rc=0",
			"socks-denied":         " rc=97",
			"dns-denied":           " rc=2",
			"dns-aaaa":             " rc=2",
			"ifaces":               "lo rc=0",
			"routes":               "0 rc=0",
			"cap-port-tls":         fmt.Sprintf("ok-tls host=pkg.test:%d rc=0", es.httpsPort),
			"cap-port-http":        fmt.Sprintf("ok-plain host=pkg.test:%d rc=0", es.httpPort),
			"cap-port-raw":         "127.77. ping rc=0",
			"cap-port-noname":      "b'' rc=0",
			"cap-port-sni":         "refused rc=0",
			"outside":              "ENETUNREACH True rc=0",
			"addrconfig":           "True rc=0",
			"ahostsv4":             "127.77 rc=0",
			"relay":                "HTTP/1.1 403 Forbidden rc=0",
			"websocket":            "200 True rc=0",
		}
		if es.capture {
			want["capture"] = "ok-tls host=pkg2.test rc=0"
			want["capture-http"] = "403 rc=0" // Host pkg.test sent to the address given for pkg2.test
			want["capture-http-ok"] = "ok-plain host=pkg2.test rc=0"
			want["capture-addrconfig"] = "True ok-plain host=pkg2.test rc=0"
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: got %q, want %q", k, got[k], v)
			}
		}
		if !strings.HasPrefix(got["dns-allowed"], "127.77.") {
			t.Errorf("dns-allowed: %q, want an address of 127.77.0.0/16", got["dns-allowed"])
		}
		// Every denial failed at once: no check waited for a timeout.
		if ms := got["elapsed-ms"]; len(ms) > 5 {
			t.Errorf("the script took %s ms", ms)
		}
		for _, msg := range []string{"gosbx: blocked by gosbx policy: host evil.test:443 not in network.allow",
			fmt.Sprintf("gosbx: blocked by gosbx policy: a connection to loopback port %d that is neither TLS with a server name nor HTTP with a Host header, to an address the DNS stub did not give is denied by rule capture", es.echoPort),
			fmt.Sprintf("gosbx: blocked by gosbx policy: a TLS server name pkg2.test in the tunnel to pkg.test:%d is denied by rule sni", es.httpsPort)} {
			if !strings.Contains(r.stderr, msg) {
				t.Errorf("stderr lacks the denial %q:\n%s", msg, r.stderr)
			}
		}
		checkEgressStatus(t, status, map[string]string{
			"allow pkg.test":     "network.allow pkg.test:",
			"deny evil.test":     "network.allow",
			"deny 93.184.216.34": "ip-literal",
			"deny ::1":           "loopback",
			"deny meta.test":     "metadata",
			"deny priv.test":     "private",
			"deny 127.0.0.1":     "loopback",
		})
	})
}

// checkEgressStatus finds a status line for each "net host" key whose rule starts with
// the value.
func checkEgressStatus(t *testing.T, path string, want map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	type line struct {
		Net, Host, Rule string
		Port            int
		BytesIn         int64 `json:"bytes-in"`
		BytesOut        int64 `json:"bytes-out"`
	}
	var lines []line
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Net != "" {
			lines = append(lines, l)
		}
	}
	for k, rule := range want {
		k, _, _ = strings.Cut(k, " (")
		net, host, _ := strings.Cut(k, " ")
		found := false
		for _, l := range lines {
			if l.Net == net && l.Host == host && strings.HasPrefix(l.Rule, rule) && (net == "deny" || l.BytesIn > 0 && l.BytesOut > 0) {
				found = true
			}
		}
		if !found {
			t.Errorf("no status line %q with rule %q among %+v", k, rule, lines)
		}
	}
}
