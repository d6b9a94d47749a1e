package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stealPy is a session command that leaves a reader of its stdin behind (a session of
// its own, SIGHUP ignored), which logs what it reads to the file argv[1] and ends at
// end of file; the command returns once the reader is reading.
const stealPy = `import os, signal, sys, time
log, ready = sys.argv[1], sys.argv[1] + ".ready"
signal.signal(signal.SIGHUP, signal.SIG_IGN)
if os.fork():
    while not os.path.exists(ready): time.sleep(0.01)
    print("COMMAND-OUT isatty0=%d isatty1=%d" % (os.isatty(0), os.isatty(1)), flush=True)
    os._exit(0)
os.setsid()
f = open(log, "ab", 0)
f.write(b"isatty0=%d\n" % os.isatty(0))
open(ready, "w").close()
while True:
    try:
        d = os.read(0, 100)
    except OSError as e:
        f.write(b"ERR:%d\n" % e.errno); break
    if not d:
        f.write(b"EOF\n"); break
    f.write(b"READ:" + d)
`

// TestSessionTerminalNotLeft: `exec --session` run from a terminal (the caller's shell
// on a pty) gives the command a relay of the terminal, not the terminal: a process the
// command leaves behind reads end of file once the client has returned, and the line
// the user types next reaches the shell (attack review 34 F1: before, the leftover held
// the terminal and read the user's next line, a password, for the session's life).
func TestSessionTerminalNotLeft(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("r34")
		steal := e.writeWS("steal.py", stealPy, 0o644)
		log := filepath.Join(e.ws, "stolen")
		m, sl := openPty(t)
		cmd := e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "r34", "--", "python3", steal, log)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		e.scope.wrap(cmd)
		outer := `"$@"; echo CLIENT_RC=$?; read -r line; echo "SHELL_GOT:[$line]"`
		cmd.Args = append([]string{"sh", "-c", outer, "sh", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/sh"
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		out := &ptyOutput{}
		go func() {
			b := make([]byte, 4096)
			for {
				n, err := m.Read(b)
				out.mu.Lock()
				out.buf.Write(b[:n])
				out.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		if !out.waitFor("CLIENT_RC=", 30*time.Second) {
			t.Fatalf("the client did not return: %q", out.String())
		}
		if !strings.Contains(out.String(), "CLIENT_RC=0") || !strings.Contains(out.String(), "COMMAND-OUT isatty0=0 isatty1=0") {
			t.Errorf("want exit 0 and the command's output (stdin and stdout relayed: no terminal):\n%q", out.String())
		}
		// the user types their next line for the shell
		m.Write([]byte("hunter2-password\n"))
		if !out.waitFor("SHELL_GOT:[hunter2-password]", 10*time.Second) {
			t.Errorf("the line typed after the client returned did not reach the shell: %q", out.String())
		}
		var got []byte
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			got, _ = os.ReadFile(log)
			if strings.Contains(string(got), "EOF") || strings.Contains(string(got), "READ:") {
				break
			}
		}
		if strings.Contains(string(got), "hunter2") || !strings.Contains(string(got), "isatty0=0") || !strings.Contains(string(got), "EOF") {
			t.Errorf("the session's leftover (%s): %q, want no terminal, end of file and nothing of the user's line", log, got)
		}
	})
}

// TestSessionSupervisorInheritsNoFds: a descriptor `gosbx session start` inherited from
// its caller without close-on-exec (fd 7, a file of the host's) is not kept by the
// session's supervisor for the session's life (attack review 34 F3: before, it was).
func TestSessionSupervisorInheritsNoFds(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		secret := filepath.Join(e.base, "callers-file")
		must(t, os.WriteFile(secret, []byte("x"), 0o600))
		f, err := os.Open(secret)
		must(t, err)
		defer f.Close()
		cmd := e.rawCommand(e.limitCtx(runLimit), "session", "start", "fd7", "--workspace", e.ws, "--die-with-owner", strconv.Itoa(os.Getpid()))
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		e.scope.wrap(cmd)
		cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, f} // fd 7
		r := e.runCmd(e.limitCtx(runLimit), cmd)
		mustSucceed(t, r, "session start fd7 7<file")
		pid := e.info("fd7").Pid
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		must(t, err)
		var links []string
		for _, x := range ents {
			l, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + x.Name())
			links = append(links, x.Name()+"->"+l)
			if l == secret {
				t.Errorf("the supervisor (pid %d) holds fd %s -> %s, inherited from session start's caller", pid, x.Name(), l)
			}
		}
		if len(links) == 0 {
			t.Errorf("no descriptor of the supervisor read (pid %d)", pid)
		}
		t.Logf("supervisor's descriptors: %v", links)
	})
}

// TestSandboxHostnameResolves: the sandbox's own hostname resolves inside (`hostname
// -f`, `getent hosts $(hostname)`: 127.0.1.1, from an /etc/hosts of its own holding the
// host's lines), under the default network (none) and strict, one-shot (the raw init)
// and in a session (the Go init), --hostname too; the file cannot be written inside,
// and the host's /etc/hosts is unchanged (attack review 34 F2: before, "Temporary
// failure in name resolution").
func TestSandboxHostnameResolves(t *testing.T) {
	before, err := os.ReadFile("/etc/hosts")
	must(t, err)
	script := `hostname -f; echo "rc=$?"; getent hosts "$(hostname)"; echo "rc=$?"; getent hosts localhost >/dev/null; echo "localhost=$?"
echo planted >> /etc/hosts 2>/dev/null && echo WROTE; cat /etc/hosts`
	check := func(t *testing.T, r result, name string) {
		t.Helper()
		mustSucceed(t, r, "hostname")
		want := []string{name + "\nrc=0\n", "127.0.1.1", "rc=0\n", "localhost=0"}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("output lacks %q:\n%v", w, r)
			}
		}
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "planted") {
			t.Errorf("the sandbox wrote its /etc/hosts:\n%v", r)
		}
		// the host's lines are there
		for _, l := range strings.Split(strings.TrimSpace(string(before)), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(r.stdout, l) {
				t.Errorf("the sandbox's /etc/hosts lacks the host's line %q:\n%v", l, r)
			}
		}
	}
	t.Cleanup(func() { // after the parallel subtests
		if after, err := os.ReadFile("/etc/hosts"); err != nil || string(after) != string(before) {
			t.Errorf("the host's /etc/hosts changed: %q (%v), was %q", after, err, before)
		}
	})
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, pol := range []string{"agent", "strict"} {
			t.Run(pol+"/one-shot", func(t *testing.T) {
				s := newSandbox(t, c)
				check(t, s.sh([]string{"--policy", pol}, script), "gosbx")
				check(t, s.sh([]string{"--policy", pol, "--hostname", "box.example"}, script), "box.example")
			})
			t.Run(pol+"/session", func(t *testing.T) {
				e := newSessionEnv(t, c)
				e.start("h", "--policy", pol)
				check(t, e.in("h", nil, script), "gosbx")
			})
		}
	})
}

// TestSessionTerminalBackground: an `exec --session` run in the background of an
// interactive shell (bash -m on a pty) takes none of the shell's input while its command
// waits for a line: the relay reads the terminal only in the foreground; once `fg`
// brings it there, the next line is the command's, and its exit status is the job's.
// (Before, the command held the terminal itself, with no job control over it, and
// competed with the shell for the line.)
func TestSessionTerminalBackground(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("bg")
		ready := filepath.Join(e.ws, "READY")
		m, sl := openPty(t)
		cmd := e.rawCommand(e.limitCtx(runLimit), "exec", "--session", "bg", "--", shellPath, "-c", `touch "$1"; read -r x; echo "CMD_GOT:[$x]"`, "_", ready)
		cmd.Env = append(cmd.Env, "XDG_RUNTIME_DIR="+e.rt)
		e.scope.wrap(cmd)
		outer := `set -m; "$@" & while [ ! -e ` + ready + ` ]; do sleep 0.05; done; echo BG-STARTED; read -r l; echo "SHELL_GOT:[$l]"; echo FG-NOW; fg >/dev/null; echo "FG-STATUS:$?"`
		cmd.Args = append([]string{"bash", "-c", outer, "bash", cmd.Path}, cmd.Args[1:]...)
		cmd.Path = "/bin/bash"
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		out := &ptyOutput{}
		go func() {
			b := make([]byte, 4096)
			for {
				n, err := m.Read(b)
				out.mu.Lock()
				out.buf.Write(b[:n])
				out.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
		if !out.waitFor("BG-STARTED", 30*time.Second) {
			t.Fatalf("the background command did not start: %q", out.String())
		}
		m.Write([]byte("for-shell\n"))
		if !out.waitFor("SHELL_GOT:[for-shell]", 10*time.Second) {
			t.Fatalf("the shell did not get its line while the session command waited in the background: %q", out.String())
		}
		if !out.waitFor("FG-NOW", 5*time.Second) {
			t.Fatalf("no fg: %q", out.String())
		}
		// bash has given the job the terminal (tcsetpgrp) by the time it continues it;
		// a line typed now is the command's, whichever of the two comes first
		m.Write([]byte("for-command\n"))
		if !out.waitFor("FG-STATUS:", 20*time.Second) {
			t.Fatalf("the job did not end after fg: %q", out.String())
		}
		if got := out.String(); !strings.Contains(got, "CMD_GOT:[for-command]") || !strings.Contains(got, "FG-STATUS:0") || strings.Contains(got, "CMD_GOT:[for-shell]") {
			t.Errorf("want the command to read the line typed after fg, and exit 0: %q", got)
		}
	})
}
