package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Attacks found by review, each proved from the host side.

// The command joins a fresh session keyring: a key the caller holds in its session
// keyring can be neither read nor listed, and a key the command adds does not reach the
// caller's keyring.
func TestSessionKeyringIsolated(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		probe := s.writeWS("keys.py", `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_keyctl, SYS_add_key, SYS_request_key = 250, 248, 249
SESSION = ctypes.c_long(-3)
mode = sys.argv[1]
if mode == "add":
    kid = libc.syscall(SYS_add_key, b"user", sys.argv[2].encode(), sys.argv[3].encode(), len(sys.argv[3]), SESSION)
    assert kid > 0, ctypes.get_errno()
    sys.stdout.write(str(libc.syscall(SYS_keyctl, 0, SESSION, 0)))
    import subprocess
    sys.exit(subprocess.call(sys.argv[4:]))
if mode == "probe":
    print("session", libc.syscall(SYS_keyctl, 0, SESSION, 0))
    kid = libc.syscall(SYS_request_key, b"user", sys.argv[2].encode(), None, 0)
    print("found" if kid > 0 else "absent")
    libc.syscall(SYS_add_key, b"user", b"planted-" + sys.argv[2].encode(), b"x", 1, SESSION)
`, 0o644)
		desc := "gosbx-it-" + s.id
		ctx := s.limitCtx(runLimit)
		// As the caller: add a key to the session keyring, print the keyring's id, then
		// run gosbx, whose command looks for the key, prints its own keyring's id and
		// plants a key.
		args := []string{python, probe, "add", desc, "secret-" + s.id,
			gosbxBin, "exec", "--workspace", s.ws, "--", python, probe, "probe", desc}
		if c.uid != 0 {
			args = append([]string{"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}, args...)
		}
		outer := exec.CommandContext(ctx, args[0], args[1:]...)
		outer.Env, outer.Dir = s.env(), s.base
		out, err := outer.CombinedOutput()
		text := string(out)
		if err != nil {
			t.Fatalf("keyring probe: %v\n%s", err, text)
		}
		hostRing := strings.SplitN(text, "session", 2)[0]
		if !strings.Contains(text, "absent") {
			t.Errorf("the command found the caller's session key %s:\n%s", desc, text)
		}
		if strings.Contains(text, "session "+hostRing+"\n") {
			t.Errorf("the command shares the caller's session keyring %s:\n%s", hostRing, text)
		}
	})
}

// A terminal that is nobody's controlling terminal (an agent server's pty started with
// a new session) cannot be taken by the command with TIOCSCTTY and used to push input
// with TIOCSTI: the sandbox's init holds it as its own controlling terminal.
func TestTerminalCannotBeStolen(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		push := s.writeWS("push.py", `
import fcntl, termios
try:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    print("took the terminal")
except OSError as e:
    print("TIOCSCTTY", e.errno)
n = 0
for ch in b"echo GOSBX_INJECTED\n":
    try:
        fcntl.ioctl(0, termios.TIOCSTI, bytes([ch])); n += 1
    except OSError:
        pass
print("pushed", n)
`, 0o644)
		_, sl := openPty(t)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", python, push)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // a new session, no controlling terminal
		must(t, cmd.Start())
		code, ok := waitTimeout(t, cmd, runLimit)
		if !ok {
			t.Fatal("gosbx did not finish")
		}
		// Whatever TIOCSTI pushed sits in the terminal's input queue: read it from the slave.
		fd := int(sl.Fd()) // once: each Fd call puts the file back in blocking mode
		must(t, syscall.SetNonblock(fd, true))
		buf := make([]byte, 4096)
		n, _ := syscall.Read(fd, buf)
		if n > 0 && strings.Contains(string(buf[:n]), "GOSBX_INJECTED") {
			t.Fatalf("the command injected input into the caller's terminal (exit %d): %q", code, buf[:n])
		}
	})
}

// Signals the command sends to pid 1 cannot crash the init (those it forwards, such as
// SIGUSR1, come back to the command; the others are ignored) (a Go runtime would dump and
// exit on SIGABRT, SIGSEGV, SIGBUS, SIGTRAP, SIGSYS or a real-time signal), so the
// command's own status is reported, without a traceback.
func TestInitSurvivesSignals(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `for sig in ABRT SEGV BUS TRAP SYS ILL FPE PIPE ALRM STKFLT 34 50; do kill -s $sig 1 2>/dev/null || kill -$sig 1; done; sleep 0.3; exit 7`)
		if r.code != 7 {
			t.Errorf("want the command's exit 7\n%v", r)
		}
		if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "SIG") {
			t.Errorf("the init crashed or printed a trace:\n%v", r)
		}
	})
}

// Nor can signals the Go runtime would take for a fault of its own (any si_code but
// SI_USER and SI_TKILL: rt_sigqueueinfo with SI_QUEUE, pidfd_send_signal with a
// siginfo, a file's F_SETOWN 1 with F_SETSIG), which used to crash pid 1 with a
// traceback once the command ran, so that the launcher reported it had not (125), and
// skipped the cleanup after the run.
func TestInitSurvivesQueuedSignals(t *testing.T) {
	const probe = `
import ctypes, fcntl, os, signal, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_rt_sigqueueinfo, SYS_pidfd_open, SYS_pidfd_send_signal = 129, 434, 424
SI_QUEUE, F_SETSIG = -1, 10
sent = 0
for sig in (4, 5, 7, 8, 11, 16, 31):  # ILL TRAP BUS FPE SEGV STKFLT SYS
    info = struct.pack("iii", sig, 0, SI_QUEUE) + bytes(116)
    if libc.syscall(SYS_rt_sigqueueinfo, 1, sig, info) == 0:
        sent += 1
    pfd = libc.syscall(SYS_pidfd_open, 1, 0)
    if pfd >= 0 and libc.syscall(SYS_pidfd_send_signal, pfd, sig, info, 0) == 0:
        sent += 1
    r, w = os.pipe()
    try:
        fcntl.fcntl(r, fcntl.F_SETOWN, 1)
        fcntl.fcntl(r, F_SETSIG, sig)
        fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
        os.write(w, b"x")
        sent += 1
    except OSError:
        pass
time.sleep(0.3)
print("sent", sent)
sys.exit(7)
`
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := s.writeWS("probe.py", probe, 0o644)
		r := s.run("--", python, marker)
		if r.code != 7 {
			t.Errorf("want the command's exit 7\n%v", r)
		}
		if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "SIG") {
			t.Errorf("the init crashed or printed a trace:\n%v", r)
		}
		if !strings.Contains(r.stdout, "sent") || strings.Contains(r.stdout, "sent 0") {
			t.Logf("no signal could be sent at all (filtered): %v", r)
		}
	})
}

// The device nodes bound into /dev are read-only mounts: the command can use them but
// cannot change the host inode (mode, owner, times), even as a root caller.
func TestDeviceInodesReadOnly(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		before, err := os.Stat("/dev/full")
		must(t, err)
		r := s.sh(nil, `echo x > /dev/null || exit 3; head -c 1 /dev/zero | wc -c | grep -q 1 || exit 4
chmod 0600 /dev/full 2>/dev/null && exit 5; touch -d 2001-01-01 /dev/full 2>/dev/null && exit 6; exit 0`)
		after, err := os.Stat("/dev/full")
		must(t, err)
		if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
			os.Chmod("/dev/full", before.Mode().Perm())
			t.Fatalf("the host's /dev/full changed: %v %v -> %v %v", before.Mode(), before.ModTime(), after.Mode(), after.ModTime())
		}
		if r.code != 0 {
			t.Errorf("want devices usable and their inodes unchangeable\n%v", r)
		}
	})
}

// Repository metadata nested in the workspace (a vendored repo) and on the way from the
// workspace to the working directory is protected too; the rest stays writable.
func TestNestedRepositoriesProtected(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, d := range []string{"vendor/lib/.git", "a/b/.git", "a/b/c/d/e/.git"} {
			s.writeWS(filepath.Join(d, "config"), "[core]\n", 0o644)
		}
		filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		r := s.sh([]string{"--chdir", "a/b/c/d/e"}, `
for f in "$1/vendor/lib/.git/config" "$1/a/b/.git/config" "$1/a/b/c/d/e/.git/config"; do
  echo '[core] fsmonitor = touch /tmp/pwned' >> "$f" 2>/dev/null && echo "WROTE $f"
done
echo ok > "$1/a/b/plain.txt" || echo "WORKSPACE NOT WRITABLE"`, s.ws)
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "NOT WRITABLE") {
			t.Errorf("nested repository metadata:\n%v", r)
		}
		for _, d := range []string{"vendor/lib/.git", "a/b/.git", "a/b/c/d/e/.git"} {
			b, err := os.ReadFile(filepath.Join(s.ws, d, "config"))
			must(t, err)
			if string(b) != "[core]\n" {
				t.Errorf("host %s/config changed: %q", d, b)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "a/b/plain.txt")); string(b) != "ok\n" {
			t.Errorf("a workspace write did not land: %q", b)
		}
	})
}

// A host without user namespaces: the launch fails with 125 naming the step, and the
// command does not run. Simulated by a user namespace whose own user.max_user_namespaces
// is 0 (a per-namespace limit: the machine's sysctl is untouched).
func TestNoUserNamespaces(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	marker := filepath.Join(s.ws, "ran")
	ctx := s.limitCtx(runLimit)
	cmd := exec.CommandContext(ctx, "unshare", "--user", "--map-root-user", "sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces || exit 99; exec "$0" exec --workspace "$1" -- touch "$2"`,
		gosbxBin, s.ws, marker)
	cmd.Dir = s.base
	out, err := cmd.CombinedOutput()
	code := exitCode(err, cmd.ProcessState)
	if code == 99 {
		t.Skip("cannot lower user.max_user_namespaces in a child user namespace here")
	}
	if code != 125 {
		t.Fatalf("exit %d, want 125\n%s", code, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a user namespace")
	}
	if !strings.Contains(string(out), "clone") || !strings.Contains(string(out), "user namespace") {
		t.Errorf("the message does not name the step and the cause: %s", out)
	}
}

// A caller's command can make a directory of its workspace unreadable to the caller
// (chmod 000: it owns it). The next launch's scan cannot look inside, so the directory
// is protected as a whole (read-only, so it cannot be made readable again from inside):
// a repository hidden in it stays out of reach, and so does the rest of it.
func TestUnreadableDirectoryProtected(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		if c.uid == 0 {
			t.Skip("root reads every directory")
		}
		// 000: cannot be listed; 0400 and 0600: listed (a .git among the names) but not
		// searched, so nothing in it can be looked at.
		for _, mode := range []string{"000", "0400", "0600"} {
			s := newSandbox(t, c)
			cfg := s.writeWS("sub/.git/config", "[core]\n", 0o644)
			filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
			r := s.sh(nil, `chmod `+mode+` sub`)
			mustSucceed(t, r, "run 1")
			r = s.sh(nil, `chmod 755 sub 2>/dev/null && echo CHMODDED
echo '[core] fsmonitor = touch /tmp/pwned' >> sub/.git/config 2>/dev/null && echo WROTE
exit 0`)
			os.Chmod(filepath.Join(s.ws, "sub"), 0o755)
			if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "CHMODDED") {
				t.Errorf("chmod %s: the command reopened a directory it had hidden and wrote in its repository:\n%v", mode, r)
			}
			if b, _ := os.ReadFile(cfg); string(b) != "[core]\n" {
				t.Errorf("chmod %s: sub/.git/config changed on the host: %q", mode, b)
			}
			if r.code != 0 {
				t.Errorf("chmod %s: want the launch to run\n%v", mode, r)
			}
		}
	})
}

// A masked file in the workspace stays masked in later launches: its directories are
// pinned (a mount point cannot be renamed), so the command cannot move the file's
// directory where the next launch's mask no longer matches.
func TestMaskedPathParentsPinned(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.writeWS("a/sub/.env", "SECRET=hunter2\n", 0o644)
		filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		pol := s.writePolicy("mask.yaml", "extends: agent\nfilesystem:\n  masked: [\"${workspace}/a/sub/.env\"]\n")
		r := s.sh([]string{"--policy", pol}, `cat a/sub/.env 2>/dev/null
mv a/sub a/sub2 2>/dev/null && echo MOVED-sub
mv a b 2>/dev/null && echo MOVED-a
exit 0`)
		if strings.Contains(r.stdout, "SECRET") || strings.Contains(r.stdout, "MOVED") {
			t.Errorf("run 1 read the masked file or moved its directory:\n%v", r)
		}
		r = s.sh([]string{"--policy", pol}, `cat a/sub2/.env b/sub/.env b/sub2/.env a/sub/.env 2>/dev/null; exit 0`)
		if strings.Contains(r.stdout, "SECRET") {
			t.Errorf("run 2 read the secret:\n%v", r)
		}
		// nor hide it from the next launch's mask by taking its owner's search permission
		// on a directory of it away (a plain path and a glob)
		glob := s.writePolicy("mask-glob.yaml", "extends: agent\nfilesystem:\n  masked: [\"${workspace}/a/sub/*.env\", \"${workspace}/c/d/*.key\"]\n")
		s.writeWS("c/d/k.key", "SECRET=key\n", 0o644)
		filepath.Walk(s.ws, func(p string, _ os.FileInfo, _ error) error { s.chown(p); return nil })
		for _, p := range []string{pol, glob} {
			r = s.sh([]string{"--policy", p}, `chmod 0400 a/sub 2>/dev/null; chmod 000 c/d c 2>/dev/null; exit 0`)
			mustSucceed(t, r, "chmod run")
			r = s.sh([]string{"--policy", p}, `chmod 755 c c/d a/sub 2>/dev/null; cat a/sub/.env c/d/k.key 2>/dev/null; exit 0`)
			os.Chmod(filepath.Join(s.ws, "c"), 0o755)
			os.Chmod(filepath.Join(s.ws, "c/d"), 0o755)
			os.Chmod(filepath.Join(s.ws, "a/sub"), 0o755)
			if c.uid != 0 && strings.Contains(r.stdout, "SECRET=hunter2") {
				t.Errorf("%s: the next run read a masked file its directory's mode hid from the mask:\n%v", filepath.Base(p), r)
			}
			if c.uid != 0 && p == glob && strings.Contains(r.stdout, "SECRET=key") {
				t.Errorf("%s: the next run read a file a masked glob missed:\n%v", filepath.Base(p), r)
			}
		}
	})
}

// Once the command runs, no thread of the sandbox's init holds a capability (they are
// per thread: the Go runtime's other threads kept the init's until the init cleared
// them on every thread, right before the fork).
func TestInitThreadsHoldNoCapabilities(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `held=$(grep -h '^Cap\(Eff\|Prm\|Amb\)' /proc/1/task/*/status | grep -v '0000000000000000$')
[ -z "$held" ] && { echo NONE; exit 0; }
echo "$held"; exit 1`)
		if r.code != 0 || !strings.Contains(r.stdout, "NONE") {
			t.Errorf("threads of pid 1 still hold capabilities:\n%v", r)
		}
	})
}

// A command of a plain exec holds the caller's terminal itself, and the launcher puts a
// line discipline back only from the terminal's foreground group (TIOCSETD from a
// background one would stop it: SIGTTOU). So a `gosbx exec … &` from an interactive
// shell could leave the caller's terminal on N_NULL, every byte in or out discarded,
// for good: the filter refuses TIOCSETD (from an attack review, rstdio F1). gosbx runs
// here as a background job of the terminal it gets (a session leader holds it as its
// controlling terminal; gosbx is in a process group of its own).
func TestLineDisciplineStays(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		setd := s.writeWS("setd.py", `
import fcntl, struct, termios
try:
    fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 27))
    print("SET")
except OSError as e:
    print("TIOCSETD", e.errno)
`, 0o644)
		_, sl := openPty(t)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", python, setd)
		bg := `import fcntl, os, sys, termios
os.setsid(); fcntl.ioctl(0, termios.TIOCSCTTY, 0)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.execv(sys.argv[1], sys.argv[1:])
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))`
		cmd.Args = append([]string{python, "-c", bg, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = python
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		must(t, cmd.Start())
		if _, ok := waitTimeout(t, cmd, runLimit); !ok {
			t.Fatal("gosbx did not finish")
		}
		d, err := unix.IoctlGetInt(int(sl.Fd()), unix.TIOCGETD)
		must(t, err)
		if d != 0 {
			t.Fatalf("the caller's terminal was left on line discipline %d (N_TTY is 0)", d)
		}
	})
}
