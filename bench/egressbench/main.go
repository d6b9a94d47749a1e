// Command egressbench is bench/egress.sh's server and client for the egress rows of
// `make bench`: a download of -mb MiB and -n small requests over HTTPS, each on a new
// connection, from a local server on 127.0.0.1, timed by the client itself (the
// sandbox's start is not in the numbers).
//
//	egressbench serve -dir DIR        # writes DIR/ports ("HTTP HTTPS") and DIR/ca.pem, serves until killed
//	egressbench get -mode direct|proxy|capture -ca DIR/ca.pem -http PORT -https PORT [-mb 100] [-n 200]
//
// The client asks for bench.test: in mode direct it dials 127.0.0.1 itself (run it with
// --net host); in mode proxy it goes through $HTTPS_PROXY / $HTTP_PROXY (gosbx's proxy
// inside --net proxy); in mode capture it ignores them and dials what the sandbox's
// DNS stub answers (gosbx's capture). It prints one JSON line per measure.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const name = "bench.test"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: egressbench serve|get ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "get":
		err = get(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "egressbench:", err)
		os.Exit(1)
	}
}

// chunk is what /big sends, again and again.
var chunk = make([]byte, 1<<20)

func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		mb, _ := strconv.Atoi(r.URL.Query().Get("mb"))
		w.Header().Set("Content-Length", strconv.Itoa(mb<<20))
		for i := 0; i < mb; i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	return mux
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("dir", "", "where to write ports and ca.pem")
	fs.Parse(args)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return err
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	tl := tls.NewListener(sl, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	go http.Serve(hl, handler())
	go http.Serve(tl, handler())
	ports := fmt.Sprintf("%d %d\n", hl.Addr().(*net.TCPAddr).Port, sl.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(filepath.Join(*dir, "ports.tmp"), []byte(ports), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(*dir, "ports.tmp"), filepath.Join(*dir, "ports")); err != nil {
		return err
	}
	select {}
}

func get(args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	mode := fs.String("mode", "direct", "direct, proxy or capture")
	caFile := fs.String("ca", "", "the server's certificate (PEM)")
	hp := fs.Int("http", 0, "the plain HTTP server's port")
	sp := fs.Int("https", 0, "the HTTPS server's port")
	mb := fs.Int("mb", 100, "MiB to download")
	n := fs.Int("n", 200, "small HTTPS requests, a new connection each")
	fs.Parse(args)
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true, DisableCompression: true}
	switch *mode {
	case "direct":
		d := &net.Dialer{}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			return d.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
		}
	case "proxy":
		tr.Proxy = http.ProxyFromEnvironment
	case "capture":
	default:
		return fmt.Errorf("mode %q: want direct, proxy or capture", *mode)
	}
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
	fetch := func(url string) (int64, error) {
		resp, err := cl.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.Copy(io.Discard, resp.Body)
	}
	emit := func(what string, t time.Duration, bytes int64, count int) {
		b, _ := json.Marshal(map[string]any{"case": what, "mode": *mode, "seconds": t.Seconds(), "bytes": bytes, "requests": count})
		fmt.Println(string(b))
	}
	for _, c := range []struct {
		what, scheme string
		port         int
	}{{"http-download", "http", *hp}, {"https-download", "https", *sp}} {
		t0 := time.Now()
		got, err := fetch(fmt.Sprintf("%s://%s:%d/big?mb=%d", c.scheme, name, c.port, *mb))
		if err != nil {
			return err
		}
		if got != int64(*mb)<<20 {
			return fmt.Errorf("%s: %d bytes, want %d", c.what, got, int64(*mb)<<20)
		}
		emit(c.what, time.Since(t0), got, 1)
	}
	t0 := time.Now()
	for i := 0; i < *n; i++ {
		if _, err := fetch(fmt.Sprintf("https://%s:%d/small", name, *sp)); err != nil {
			return err
		}
	}
	emit("https-requests", time.Since(t0), 0, *n)
	return nil
}
