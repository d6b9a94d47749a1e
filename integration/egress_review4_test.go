package integration

// From an attack review (round four): what a sandbox's peer bytes may do to the
// caller's terminal and status lines, and the host-side cost of a session's origin
// lookups.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// junkNames sends, from inside, a TLS ClientHello whose server name holds a newline
// and a terminal escape through CONNECT to an allowed name, and to the DNS stub's
// address for that name (port 80) an HTTP request whose Host holds control bytes (a
// 400 since review 26: no field value holds one) and one whose Host holds a bidi
// override and a byte past ASCII (obs-text: denied, not a host name).
const junkNames = `
import socket, struct, sys
port = int(sys.argv[1])
junk = b"x\ngosbx: FORGED LINE \x1b[31m RED"
sni = struct.pack("!BH", 0, len(junk)) + junk
ext = struct.pack("!HH", 0, len(sni) + 2) + struct.pack("!H", len(sni)) + sni
body = b"\x03\x03" + b"\x00" * 32 + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00" + struct.pack("!H", len(ext)) + ext
hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
rec = b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs
c = socket.create_connection(("127.0.0.1", 3128))
c.sendall(b"CONNECT pkg.test:%d HTTP/1.1\r\n\r\n" % port + rec)
c.settimeout(10)
while c.recv(4096):
    pass
addr = socket.gethostbyname("pkg.test")
c = socket.create_connection((addr, 80))
c.sendall(b"GET / HTTP/1.1\r\nHost: up\x1b[31mRED\x07\r\n\r\n")
print(c.recv(4096)[:12])
c = socket.create_connection((addr, 80))
c.sendall(b"GET / HTTP/1.1\r\nHost: up\xe2\x80\xaeRED\xff\r\n\r\n")
print(c.recv(4096)[:12])
`

// A name with control bytes sent by a command reaches the caller's stderr and status
// fd only quoted: no raw escape byte, no forged line, the status lines one JSON object
// a line.
func TestEgressPeerBytesQuoted(t *testing.T) {
	requireBinary(t)
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	s := newRootSandbox(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hp := l.Addr().(*net.TCPAddr).Port
	status, err := os.Create(filepath.Join(s.base, "status.json"))
	must(t, err)
	defer status.Close()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, "--net", "proxy", "--allow-host", fmt.Sprintf("pkg.test:%d", hp), "--allow-host", "pkg.test:80",
		"--allow-host", fmt.Sprintf("127.0.0.1:%d", hp), "--status-fd", "3", "--", python, "-c", junkNames, strconv.Itoa(hp))
	cmd.Path, cmd.Args = replaceBinary(cmd, bin)
	cmd.Env = append(cmd.Env, "GOSBX_TEST_HOSTS=pkg.test=127.0.0.1")
	cmd.ExtraFiles = []*os.File{status}
	r := s.runCmd(ctx, cmd)
	st, err := os.ReadFile(status.Name())
	must(t, err)
	if strings.Count(r.stderr, "blocked by gosbx policy") != 2 || r.stdout != "b'HTTP/1.1 400'\nb'HTTP/1.1 403'\n" {
		t.Errorf("want two denials on stderr, a 400 and a 403\n%v", r)
	}
	for what, text := range map[string]string{"stderr": r.stderr, "status fd": string(st)} {
		for _, line := range strings.Split(text, "\n") {
			if strings.ContainsFunc(line, func(c rune) bool { return c < 0x20 || c == 0x7f }) || strings.HasPrefix(line, "gosbx: FORGED") {
				t.Errorf("%s: a raw control byte or a forged line: %q", what, line)
			}
		}
	}
	if !strings.Contains(r.stderr, `\x1b[31m`) || !strings.Contains(r.stderr, `\u202e`) {
		t.Errorf("stderr does not show the name quoted\n%v", r)
	}
}

// scanFds holds N descriptors of /dev/null, then makes C denied CONNECTs.
const scanFds = `
import os, socket, sys
n, conns = int(sys.argv[1]), int(sys.argv[2])
fds = [os.open("/dev/null", os.O_RDONLY) for i in range(n)]
for i in range(conns):
    c = socket.create_connection(("127.0.0.1", 3128))
    c.sendall(b"CONNECT evil%d.example:443 HTTP/1.1\r\n\r\n" % i)
    c.recv(100); c.close()
`

// scanThreads starts N threads that wait, then makes C denied CONNECTs.
const scanThreads = `
import socket, sys, threading
n, conns = int(sys.argv[1]), int(sys.argv[2])
ev = threading.Event()
ts = [threading.Thread(target=ev.wait) for i in range(n)]
for t in ts:
    t.start()
for i in range(conns):
    c = socket.create_connection(("127.0.0.1", 3128))
    c.sendall(b"CONNECT evil%d.example:443 HTTP/1.1\r\n\r\n" % i)
    c.recv(100); c.close()
ev.set()
`

// The host-side (supervisor's) CPU a session's origin lookups cost is bounded whatever
// the number of descriptors the sandbox holds: 200 denied connections from a command
// holding 19000 descriptors cost the supervisor less than 3 s of CPU (it was ~8.5 s,
// one listing and readlink of every descriptor per connection); a command with few
// descriptors still gets its denials.
func TestEgressSessionOriginCostBounded(t *testing.T) {
	requireBinary(t)
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	e := newSessionEnv(t, rootCaller)
	run := func(args ...string) result {
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, args...)
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		return e.runCmd(ctx, cmd)
	}
	mustSucceed(t, run("session", "start", "o", "--workspace", e.ws, "--net", "proxy", "--allow-host", "pkg.test"), "session start")
	sup := e.info("o").Pid
	ticks := func() int {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(sup) + "/stat")
		must(t, err)
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		u, _ := strconv.Atoi(f[11])
		s, _ := strconv.Atoi(f[12])
		return u + s
	}
	r := run("exec", "--session", "o", "--", python, "-c", scanFds, "0", "20")
	if n := strings.Count(r.stderr, "blocked by gosbx policy"); n != 20 || strings.Contains(r.stderr, "could not attribute") {
		t.Errorf("few descriptors: %d denials attributed, want 20\n%v", n, r)
	}
	before := ticks()
	r = run("exec", "--session", "o", "--", python, "-c", scanFds, "19000", "200")
	mustSucceed(t, r, "19000 descriptors, 200 connections")
	if used := ticks() - before; used > 300 {
		t.Errorf("host: the supervisor spent %d ticks (1/100 s) on 200 connections from a command with 19000 descriptors, want < 300", used)
	}
	// the walk over the sandbox's threads counts too (it was ~4 s for 3000 threads)
	before = ticks()
	r = run("exec", "--session", "o", "--", python, "-c", scanThreads, "3000", "200")
	mustSucceed(t, r, "3000 threads, 200 connections")
	if used := ticks() - before; used > 200 {
		t.Errorf("host: the supervisor spent %d ticks (1/100 s) on 200 connections from a command with 3000 threads, want < 200", used)
	}
}

// In a session, a denial no request can be given (its process left its command's
// tree) goes to every running request's stderr: a name with a newline and a terminal
// escape reaches another request's stderr quoted, one line, no forged line.
func TestEgressSessionBroadcastQuoted(t *testing.T) {
	requireBinary(t)
	bin, err := testnetBinary()
	if err != nil {
		t.Fatal(err)
	}
	e := newSessionEnv(t, rootCaller)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hp := l.Addr().(*net.TCPAddr).Port
	run := func(args ...string) *exec.Cmd {
		ctx := e.limitCtx(runLimit)
		cmd := e.rawCommand(ctx, args...)
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt, "GOSBX_TEST_HOSTS=pkg.test=127.0.0.1")
		return cmd
	}
	if out, err := run("session", "start", "b", "--workspace", e.ws, "--net", "proxy", "--allow-host", fmt.Sprintf("pkg.test:%d", hp),
		"--allow-host", fmt.Sprintf("127.0.0.1:%d", hp)).CombinedOutput(); err != nil {
		t.Fatalf("session start: %v\n%s", err, out)
	}
	// the victim runs until the attacker's daemon has been refused
	victim := run("exec", "--session", "b", "--", shellPath, "-c", "echo up; while [ ! -e sent ]; do sleep 0.05; done")
	var vout, verr strings.Builder
	victim.Stdout, victim.Stderr = &vout, &verr
	must(t, victim.Start())
	for i := 0; !strings.Contains(vout.String(), "up") && i < 200; i++ {
		e.gosbx("session", "ls") // a round trip while waiting for the request to run
	}
	// the attacker's sender leaves its command's tree (a daemon): unattributable
	script := strings.Replace(junkNames, `addr = socket.gethostbyname`, "open('sent', 'w').close()\nsys.exit(0)\naddr = socket.gethostbyname", 1)
	must(t, os.WriteFile(filepath.Join(e.ws, "junk.py"), []byte(script), 0o644))
	att := run("exec", "--session", "b", "--", shellPath, "-c", fmt.Sprintf("(%s junk.py %d >/dev/null 2>&1 &)", python, hp))
	if out, err := att.CombinedOutput(); err != nil {
		t.Fatalf("attacker: %v\n%s", err, out)
	}
	if err := victim.Wait(); err != nil {
		t.Fatalf("victim: %v\n%s", err, verr.String())
	}
	got := verr.String()
	if !strings.Contains(got, "could not attribute") || !strings.Contains(got, `\x1b[31m`) {
		t.Errorf("victim's stderr: %q, want the broadcast denial with the name quoted", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.ContainsFunc(line, func(c rune) bool { return c < 0x20 || c == 0x7f }) || strings.HasPrefix(line, "gosbx: FORGED") {
			t.Errorf("victim's stderr: a raw control byte or a forged line: %q", line)
		}
	}
}
