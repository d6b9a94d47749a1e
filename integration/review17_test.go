package integration

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Attack review 17: resources a sandbox spends that its limits do not see, proved from
// the host while the command holds them.

// heldRun is a gosbx exec whose command prints "ready" when it holds what the test
// inspects, then waits for its stdin to close.
type heldRun struct {
	t     *testing.T
	stdin io.WriteCloser
	lines []string // stdout up to and with "ready"
	wait  func() result
}

// startHeld starts gosbx exec with args as the sandbox's caller and reads its stdout up
// to a "ready" line (failing the test if the command ends first).
func (s *sandbox) startHeld(args ...string) *heldRun {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, args...)
	stdin, err := cmd.StdinPipe()
	must(s.t, err)
	stdout, err := cmd.StdoutPipe()
	must(s.t, err)
	var errb strings.Builder
	cmd.Stderr = &errb
	must(s.t, cmd.Start())
	h := &heldRun{t: s.t, stdin: stdin}
	var rest strings.Builder
	h.wait = func() result {
		stdin.Close()
		io.Copy(&rest, stdout)
		err := cmd.Wait()
		return result{stdout: strings.Join(h.lines, "\n") + "\n" + rest.String(), stderr: errb.String(), code: exitCode(err, cmd.ProcessState)}
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		h.lines = append(h.lines, sc.Text())
		if sc.Text() == "ready" {
			return h
		}
	}
	r := h.wait()
	s.t.Fatalf("the command ended before it was ready:\n%v", r)
	return nil
}

// value is the word after key on the first line starting with key.
func (h *heldRun) value(key string) string {
	for _, l := range h.lines {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == key {
			return f[1]
		}
	}
	h.t.Fatalf("no %q line in %q", key, h.lines)
	return ""
}

// hostPIDOf is the one host process whose command line starts with prefix.
func hostPIDOf(t *testing.T, prefix string) int {
	t.Helper()
	p := waitHostPIDs(prefix, 5*time.Second, func(n int) bool { return n == 1 })
	if len(p) != 1 {
		t.Fatalf("want one host process %q, found %v", prefix, p)
	}
	return p[0]
}

// nlScript tries to queue NETLINK_USERSOCK messages between sockets of its own (the
// reviewer's nl.py, short), then reads the addresses over NETLINK_ROUTE (getifaddrs'
// dump) and holds its sockets until stdin closes.
const nlScript = `import socket, errno, sys, struct
socks, total = [], 0
try:
    snd = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_USERSOCK)
    snd.bind((0, 0)); snd.setblocking(False); socks.append(snd)
    msg = b'\x10\x00\x00\x00' + b'\x00' * 12 + b'x' * 16000
    for i in range(4):
        r = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_USERSOCK)
        r.bind((0, 0)); socks.append(r)
        while True:
            try: total += snd.sendto(msg, (r.getsockname()[0], 0))
            except OSError: break
    print("usersock ok", flush=True)
except OSError as e:
    print("usersock", errno.errorcode[e.errno], flush=True)
print("queued", total, flush=True)
rt = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
rt.bind((0, 0))
rt.send(struct.pack("=LHHLLBBBBL", 24, 22, 0x301, 1, 0, 0, 0, 0, 0, 0))  # RTM_GETADDR dump
got = 0
while True:
    b = rt.recv(65536)
    off, done = 0, False
    while off < len(b):
        ln, typ = struct.unpack_from("=LH", b, off)
        if typ == 3: done = True  # NLMSG_DONE
        elif typ == 20: got += 1  # RTM_NEWADDR
        off += (ln + 3) & ~3
    if done: break
print("route-addrs", got, flush=True)
print("ready", flush=True)
sys.stdin.read()
`

// netlinkRows are the host's view (/proc/PID/net/netlink, the pid's network namespace)
// of the netlink sockets of protocol proto: their count and the bytes in their
// receive queues (the Rmem column).
func netlinkRows(t *testing.T, pid int, proto int) (n int, rmem int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/netlink")
	must(t, err)
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 5 || f[1] != strconv.Itoa(proto) {
			continue
		}
		n++
		v, _ := strconv.ParseInt(f[4], 10, 64)
		rmem += v
	}
	return n, rmem
}

// A command cannot make NETLINK_USERSOCK sockets (EPERM from the filter), so it queues
// no netlink kernel memory (which no memory cgroup charges): the host sees no socket
// of that protocol in the sandbox's network namespace. NETLINK_ROUTE still works (an
// address dump, `ip -o addr`). Fails without seccomp.NoUserNetlinkRules: the sockets
// are made and the host counts 5 of them with about 800 KB queued.
func TestNetUserNetlinkRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		name := "nl-" + s.id + ".py"
		s.writeWS(name, nlScript, 0o644)
		h := s.startHeld("--", "/usr/bin/python3", name)
		pid := hostPIDOf(t, "/usr/bin/python3\x00"+name+"\x00")
		n, rmem := netlinkRows(t, pid, 2) // NETLINK_USERSOCK
		if got := h.value("usersock"); got != "EPERM" {
			t.Errorf("socket(AF_NETLINK, SOCK_RAW, NETLINK_USERSOCK): %s, want EPERM", got)
		}
		if n != 0 || rmem != 0 {
			t.Errorf("the host sees %d NETLINK_USERSOCK sockets in the sandbox's netns, %d bytes queued; want none (queued by the command: %s)", n, rmem, h.value("queued"))
		}
		if got := h.value("route-addrs"); got == "0" {
			t.Errorf("NETLINK_ROUTE address dump: %s addresses, want the loopback's", got)
		}
		r := h.wait()
		mustSucceed(t, r, "netlink probe")
		ip := s.run("--", "/usr/sbin/ip", "-o", "addr")
		mustSucceed(t, ip, "ip -o addr")
		if !strings.Contains(ip.stdout, " lo ") {
			t.Errorf("ip -o addr lists no loopback:\n%v", ip)
		}
	})
}

// gosbx seccomp export names the NETLINK_USERSOCK rule, in every network mode.
func TestSeccompExportUserNetlink(t *testing.T) {
	requireBinary(t)
	want := "socket if domain (32 bits) == AF_NETLINK and protocol (32 bits) == NETLINK_USERSOCK: fail with EPERM"
	s := newSandbox(t, rootCaller)
	host := s.writeWS("../hostnet.yaml", "extends: agent\nnetwork: {mode: host}\n", 0o644)
	for _, args := range [][]string{{}, {"--policy", "strict"}, {"--policy", host}} {
		out, err := exec.Command(gosbxBin, append([]string{"seccomp", "export", "--format", "text"}, args...)...).Output()
		must(t, err)
		if !strings.Contains(string(out), want) {
			t.Errorf("seccomp export %q: no %q in\n%s", args, want, out)
		}
	}
}

// tcpScript opens N loopback TCP connections in the sandbox's own network namespace and
// fills each sender until EAGAIN, never reading (the reviewer's tcp.py), then holds them.
const tcpScript = `import socket, sys
n = int(sys.argv[1])
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(n + 1)
conns, total, chunk = [], 0, b"x" * 65536
for i in range(n):
    c = socket.create_connection(ls.getsockname()); a, _ = ls.accept()
    c.setblocking(False); conns += [c, a]
    while True:
        try: total += c.send(chunk)
        except BlockingIOError: break
        except OSError as e: print("send", e, flush=True); break
print("queued", total, flush=True)
print("ready", flush=True)
sys.stdin.read()
`

// On cgroup v1, a --memory sandbox's TCP socket buffers are charged to its group
// (memory.kmem.tcp.limit_in_bytes = the limit, written before the command starts): 24
// loopback connections filled at --memory 32M queue about the limit, and the host
// reads the group's TCP counter at about the limit at most (measured: 33.7 MB queued,
// peak 34.7 MB). Fails without the write
// (cgroup.writeTCPLimit): the counter stays 0 and about 96 MB are queued (4 MB a
// connection, charged to no group).
func TestLimitsTCPBuffersV1(t *testing.T) {
	requireV1(t)
	requireBinary(t)
	const limit = 32 << 20
	s := newSandbox(t, rootCaller)
	name := "tcp-" + s.id + ".py"
	s.writeWS(name, tcpScript, 0o644)
	h := s.startHeld("--memory", "32M", "--", "/usr/bin/python3", name, "24")
	pid := hostPIDOf(t, "/usr/bin/python3\x00"+name+"\x00")
	dir := sandboxGroup(t, int64(pid), "memory")
	tcpLimit := readTrim(dir + "/memory.kmem.tcp.limit_in_bytes")
	maxUse, _ := strconv.ParseInt(readTrim(dir+"/memory.kmem.tcp.max_usage_in_bytes"), 10, 64)
	queued, _ := strconv.ParseInt(h.value("queued"), 10, 64)
	r := h.wait()
	mustSucceed(t, r, "tcp fill")
	if tcpLimit != strconv.Itoa(limit) {
		t.Errorf("%s: memory.kmem.tcp.limit_in_bytes %q, want %d", dir, tcpLimit, limit)
	}
	// the kernel force-charges some buffers over the limit (an skb a socket): a little slack
	if maxUse == 0 || maxUse > limit*5/4 {
		t.Errorf("the group's TCP buffers peaked at %d bytes (memory.kmem.tcp.max_usage_in_bytes), want charged (> 0) and about the limit %d at most", maxUse, limit)
	}
	if queued > limit*3/2 {
		t.Errorf("the command queued %d bytes in TCP send buffers, want about the limit %d at most", queued, limit)
	}
	t.Logf("queued %d bytes, the group's TCP peak %d", queued, maxUse)
}

// procCPUAndWrites are a host process's CPU time (utime+stime, clock ticks: 1/100 s
// here) and the bytes it has written (/proc/PID/io wchar).
func procCPUAndWrites(t *testing.T, pid int) (ticks, wchar int64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	must(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	io, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	must(t, err)
	for _, l := range strings.Split(string(io), "\n") {
		if v, ok := strings.CutPrefix(l, "wchar: "); ok {
			wchar, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return u + s, wchar
}

// A detached job's output costs the session's supervisor (a host process, outside the
// session's --cpus) a bounded share: it logs at most jobLogRate (8 MiB/s) of all its
// jobs' output, so 3 s of `yes` under --cpus 0.2 has the supervisor write about 26 MiB
// and spend well under half a second of CPU; `job logs` still gives the output's end.
// Fails without the rate gate: the supervisor wrote about 600 MB/s into the log and
// spent 2.7 times the job's own CPU (attack review 17: 2.02 s of CPU in 4 s).
func TestJobLogCopyBounded(t *testing.T) {
	requireV1(t)
	e := newSessionEnv(t, rootCaller)
	e.start("y", "--cpus", "0.2")
	sv := e.info("y").Pid
	ticks0, w0 := procCPUAndWrites(t, sv)
	mustSucceed(t, e.gosbx("exec", "--session", "y", "--detach", "--", "timeout", "3", "yes"), "a job of yes")
	if r := e.gosbx("job", "wait", "y/1"); r.code != 124 {
		t.Fatalf("job wait: want timeout's 124\n%v", r)
	}
	ticks1, w1 := procCPUAndWrites(t, sv)
	cpu, wrote := ticks1-ticks0, w1-w0
	t.Logf("the supervisor: %d ticks of CPU, %d bytes written for 3 s of yes", cpu, wrote)
	if limit := int64(3*8<<20 + 8<<20); wrote > limit {
		t.Errorf("the supervisor wrote %d bytes for 3 s of a job's output, want at most %d (8 MiB/s, a burst and slack)", wrote, limit)
	}
	if cpu > 75 {
		t.Errorf("the supervisor spent %d ticks of CPU logging 3 s of a job's output under --cpus 0.2, want under 75", cpu)
	}
	r := e.gosbx("job", "logs", "y/1")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "y\ny\n") {
		t.Errorf("job logs: want the output's end\n%v", clip(r.stdout[max(0, len(r.stdout)-100):]))
	}
}
