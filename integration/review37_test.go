package integration

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// connFlood is a command that asks the session's proxy (127.0.0.1:3128) for one
// denied host after another: each denial is a status line for its request's
// --status-fd, which no rate limit holds back.
const connFlood = `
import socket
n = 0
while True:
    n += 1
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
        s.sendall(b"CONNECT blocked%d.example.org:443 HTTP/1.1\r\nHost: x\r\n\r\n" % n)
        s.recv(200)
        s.close()
    except Exception:
        pass
`

// TestSessionStoppedClientHoldsNothing: a request whose client reads none of its
// frames (stopped by SIGSTOP) while its command makes the proxy write lines for it
// neither holds the session's other requests nor its stop: its lines are queued, and
// dropped past a bound (attack review 37 F3: the proxy wrote to that client's full
// socket under the lock of the whole session's routing; every later request, the
// proxy and `session stop` waited until the client was continued).
func TestSessionStoppedClientHoldsNothing(t *testing.T) {
	requireBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37", "--allow-host", "example.com")
		status, err := os.Create(filepath.Join(e.base, "status.json"))
		must(t, err)
		e.chown(status.Name())
		t.Cleanup(func() { status.Close() })
		cmd := e.rawCommand(e.limitCtx(2*time.Minute), "exec", "--session", "r37", "--status-fd", "3", "--", python, "-c", connFlood)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.ExtraFiles = []*os.File{status}
		must(t, cmd.Start())
		t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGCONT)
			cmd.Process.Kill()
			cmd.Wait()
		})
		// its first lines came: the command runs, the proxy writes for it
		for i := 0; ; i++ {
			if b, _ := os.ReadFile(status.Name()); strings.Contains(string(b), "blocked") {
				break
			}
			if i == 100 {
				t.Fatal("no denial on the flooding request's status fd in 10 s")
			}
			time.Sleep(100 * time.Millisecond)
		}
		must(t, cmd.Process.Signal(syscall.SIGSTOP))
		// its socket fills (~200 KiB of status lines) within a few seconds
		time.Sleep(6 * time.Second)
		for i := 0; i < 2; i++ {
			start := time.Now()
			ctx := e.limitCtx(10 * time.Second)
			rc := e.rawCommand(ctx, "exec", "--session", "r37", "--", "true")
			rc.Env = append(rc.Env, "XDG_RUNTIME_DIR="+e.rt)
			out, err := rc.CombinedOutput()
			if ctx.Err() != nil || err != nil {
				t.Fatalf("request %d while a client is stopped: %v after %v (killed at 10 s: the session hung on the stopped client)\n%s", i+1, err, time.Since(start).Round(time.Millisecond), out)
			}
			time.Sleep(time.Second)
		}
		ctx := e.limitCtx(15 * time.Second)
		stop := e.rawCommand(ctx, "session", "stop", "r37")
		stop.Env = append(stop.Env, "XDG_RUNTIME_DIR="+e.rt)
		start := time.Now()
		if out, err := stop.CombinedOutput(); ctx.Err() != nil || err != nil {
			t.Fatalf("session stop while a client is stopped: %v after %v (killed at 15 s)\n%s", err, time.Since(start).Round(time.Millisecond), out)
		}
	})
}

// TestSessionTTYBrokenPipeRestoresTerminal: `gosbx exec --session --tty` whose stdout's
// reader leaves (`| head -c 1`) ends as a pipeline's writer does, 141, and gives the
// caller's terminal its modes back (attack review 37 F4: the client died of SIGPIPE
// before its deferred restore, leaving the terminal raw: no echo, no line editing).
func TestSessionTTYBrokenPipeRestoresTerminal(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37t")
		outer := `B=$(stty -g); { "$@"; echo "RC=$?" >/dev/tty; } | head -c 1 >/dev/null; ` +
			`if [ "$(stty -g)" = "$B" ]; then echo MODES-SAME; else echo MODES-CHANGED; stty -a; fi; sleep 30`
		out := ptySession(t, e, outer, "exec", "--session", "r37t", "--tty", "--", "yes")
		if !out.waitFor("MODES-", 30*time.Second) {
			t.Fatalf("the client did not return: %q", out.String())
		}
		got := out.String()
		if !strings.Contains(got, "RC=141") || !strings.Contains(got, "MODES-SAME") {
			t.Errorf("want exit 141 and the terminal's modes as before: %q", got)
		}
	})
}

// TestSessionHungUpTerminalDoesNotHang: a request whose caller's terminal hangs up (an
// ssh disconnect, a closed terminal window: the master closed) while its command,
// which ignores SIGHUP, goes on writing more than a pipe holds, ends with the command:
// the relay reads and discards what the dead terminal cannot take (attack review 37 F2:
// the relay stopped reading at the first EIO, the command blocked in write(2) and the
// client waited for its exit for ever).
func TestSessionHungUpTerminalDoesNotHang(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37h")
		done := filepath.Join(e.ws, "done")
		script := `trap "" HUP; sleep 2; i=0; while [ $i -lt 5000 ]; do echo "line $i of sixty bytes, more or less, for the relay's pipe"; i=$((i+1)); done; echo ok > done`
		m, sl := openPty(t)
		cmd := e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "r37h", "--", shellPath, "-c", script)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		go func() {
			b := make([]byte, 4096)
			for {
				if _, err := m.Read(b); err != nil {
					return
				}
			}
		}()
		time.Sleep(time.Second)
		m.Close() // the hangup
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("the client still waits 30 s after its terminal hung up: its command blocked writing to the relay's pipe")
		}
		if _, err := os.Stat(done); err != nil {
			t.Errorf("the command did not finish its output: %v", err)
		}
	})
}

// cpuTicks is the user and system time of process pid so far, in clock ticks.
func cpuTicks(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	must(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}

// TestSessionDrainBounded: the supervisor's drain of a terminal request's relay pipes,
// which a leftover writes to flat out once its client returned, is paid for as the
// jobs' log copy is (8 MiB/s, read at most 128 times a second): the supervisor, outside
// the session's --cpus, spends a few percent of a core on it (attack review 37 F1: it
// read as fast as the leftover wrote, 22-26 % of a core for `cat /dev/zero`, 19 % for
// `dd bs=1`).
func TestSessionDrainBounded(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37d")
		sv := e.info("r37d").Pid
		for _, w := range []string{"cat /dev/zero", "dd if=/dev/zero bs=1 status=none"} {
			out := ptySession(t, e, `"$@"; echo CLIENT_RC=$?; sleep 30`, "exec", "--session", "r37d", "--", shellPath, "-c", w+" & sleep 0.5")
			if !out.waitFor("CLIENT_RC=", 30*time.Second) {
				t.Fatalf("the client did not return: %q", out.String())
			}
			time.Sleep(time.Second)
			a := cpuTicks(t, sv)
			time.Sleep(5 * time.Second)
			// 5 s are 500 ticks of a core (USER_HZ 100); before, 96-136
			n := cpuTicks(t, sv) - a
			t.Logf("%s: the supervisor spent %d ticks in 5 s", w, n)
			if n > 40 {
				t.Errorf("%s left running: the supervisor spent %d ticks of CPU in 5 s draining it, want at most 40", w, n)
			}
			e.in("r37d", nil, "pkill -x cat; pkill -x dd; true")
		}
	})
}

// TestSessionJobFollowSlowReader: `job logs -f` read slower than the job writes (its
// log rotated several times between two of the follower's reads) gives on stdout the
// job's lines in order with some left out, never a line the job did not print, and
// says on stderr how much it lost (attack review 37 F5: it read the next file from the
// old one's offset and spliced two places of the log into one made-up line, silently).
func TestSessionJobFollowSlowReader(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37j")
		const n = 3000000
		r := e.gosbx("exec", "--session", "r37j", "--detach", "--", shellPath, "-c", "sleep 0.5; seq 1 "+strconv.Itoa(n))
		mustSucceed(t, r, "exec --detach")
		id := strings.TrimSpace(r.stdout)
		ctx := e.limitCtx(2 * time.Minute)
		cmd := e.rawCommand(ctx, "job", "logs", "-f", id)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		must(t, cmd.Start())
		time.Sleep(3 * time.Second) // the reader late: the log rotates every 1 MiB
		b, err := io.ReadAll(stdout)
		must(t, err)
		must(t, cmd.Wait())
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		prev := 0
		for i, l := range lines {
			v, err := strconv.Atoi(l)
			if err != nil || v <= prev || v > n {
				t.Fatalf("line %d of the follower's output is %q after %d: not a line of the job's, in order (a splice of two places of the log)", i+1, clip(l), prev)
			}
			prev = v
		}
		if prev != n {
			t.Errorf("the follower's last line is %d, want %d", prev, n)
		}
		if len(lines) < n && !strings.Contains(stderr.String(), "bytes of the job's log were rotated away before this follower read them") {
			t.Errorf("%d of %d lines left out, and no note of it on stderr: %q", n-len(lines), n, stderr.String())
		}
		t.Logf("%d of %d lines; stderr %q", len(lines), n, stderr.String())
	})
}

// TestSessionJobFollowPartialLine: `job logs -f` shows the start of a line whose end
// has not come (a prompt, a progress bar) once nothing more is written for a moment,
// not only at its newline (the follower holds partial lines since the F5 fix).
func TestSessionJobFollowPartialLine(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r37p")
		r := e.gosbx("exec", "--session", "r37p", "--detach", "--", shellPath, "-c", "printf 'prompt: '; sleep 4; echo done")
		mustSucceed(t, r, "exec --detach")
		cmd := e.rawCommand(e.limitCtx(time.Minute), "job", "logs", "-f", strings.TrimSpace(r.stdout))
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		start := time.Now()
		b := make([]byte, 100)
		n, _ := stdout.Read(b)
		if got := string(b[:n]); got != "prompt: " || time.Since(start) > 3*time.Second {
			t.Errorf("first output %q after %v, want \"prompt: \" before the job's next write at 4 s", got, time.Since(start))
		}
		rest, _ := io.ReadAll(stdout)
		cmd.Wait()
		if string(rest) != "done\n" {
			t.Errorf("then %q, want \"done\\n\"", rest)
		}
	})
}
