package integration

import (
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// setFlagsProbe changes the open file description of its stdout, a pipe of the caller:
// O_NONBLOCK|O_APPEND and a one-page capacity, then says what it set.
const setFlagsProbe = `
import fcntl, os, sys
fcntl.fcntl(1, fcntl.F_SETFL, os.O_NONBLOCK | os.O_APPEND)
fcntl.fcntl(1, 1031, 4096)  # F_SETPIPE_SZ
fl = fcntl.fcntl(1, fcntl.F_GETFL)
os.write(1, b"SET %d %d\n" % (fl & (os.O_NONBLOCK | os.O_APPEND), fcntl.fcntl(1, 1032)))
`

// The command shares the caller's open file descriptions of its stdio: what it sets
// there with fcntl(F_SETFL) (O_NONBLOCK made the caller's next write fail with EAGAIN)
// or F_SETPIPE_SZ is put back when the sandbox ends, whether the command exits or is
// killed by --timeout. Checked on a real pipe of this test process. Issue 15, item 8.
func TestSharedFileStatusRestored(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		for _, tc := range []struct {
			name string
			args []string
			code int
		}{
			{"exit", []string{"--", python, "-c", setFlagsProbe}, 0},
			{"timeout", []string{"--timeout", "1s", "--", shellPath, "-c", python + " -c '" + setFlagsProbe + "'; exec sleep 60"}, 124},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var p [2]int
				must(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
				r, w := os.NewFile(uintptr(p[0]), "pipe-r"), os.NewFile(uintptr(p[1]), "pipe-w")
				defer r.Close()
				defer w.Close()
				before, err := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0)
				must(t, err)
				size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
				must(t, err)
				got := make(chan string, 1)
				go func() { b, _ := io.ReadAll(r); got <- string(b) }()
				s := newSandbox(t, c)
				ctx := s.limitCtx(runLimit)
				cmd := s.command(ctx, tc.args...)
				cmd.Stdout = w
				res := s.runCmd(ctx, cmd)
				if res.code != tc.code {
					t.Fatalf("want exit %d\n%v", tc.code, res)
				}
				after, err := unix.FcntlInt(w.Fd(), unix.F_GETFL, 0)
				must(t, err)
				sizeAfter, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
				must(t, err)
				n, werr := unix.Write(p[1], []byte("after\n"))
				w.Close()
				out := <-got
				if !strings.Contains(out, "SET ") || strings.Contains(out, "SET 0 ") {
					t.Fatalf("the command did not change the pipe's flags (the test proves nothing): %q\n%v", out, res)
				}
				if after != before {
					t.Errorf("file status flags of the caller's pipe: %#o after the run, %#o before", after, before)
				}
				if sizeAfter != size {
					t.Errorf("the caller's pipe holds %d bytes after the run, %d before", sizeAfter, size)
				}
				if werr != nil || n != 6 {
					t.Errorf("the caller's next write: %d, %v", n, werr)
				}
			})
		}
	})
}

// A command that changes its terminal's modes (stty raw -echo, as an editor that
// crashes leaves them) has them put back when the sandbox ends, as a shell does after a
// job: gosbx runs here as the terminal's foreground process group.
func TestTerminalModesRestored(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		m, sl := openPty(t)
		go io.Copy(io.Discard, m)
		before, err := unix.IoctlGetTermios(int(sl.Fd()), unix.TCGETS)
		must(t, err)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", shellPath, "-c", "stty raw -echo && stty -a | grep -q -- -echo && echo CHANGED >&2")
		var stderr strings.Builder
		cmd.Stdin, cmd.Stdout = sl, sl
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		if code, ok := waitTimeout(t, cmd, runLimit); !ok || code != 0 {
			t.Fatalf("exit %d (finished %v), stderr %q", code, ok, stderr.String())
		}
		if !strings.Contains(stderr.String(), "CHANGED") {
			t.Fatalf("stty did not change the modes inside (the test proves nothing): %q", stderr.String())
		}
		after, err := unix.IoctlGetTermios(int(sl.Fd()), unix.TCGETS)
		must(t, err)
		if *after != *before {
			t.Errorf("terminal modes after the run: %+v, before: %+v", *after, *before)
		}
	})
}

// A command that sets its terminal's exclusive mode (TIOCEXCL: every later open of the
// terminal fails EBUSY) has it put back when the sandbox ends (attack review 39 F4), and
// cannot set its line discipline at all (TIOCSETD 27, N_NULL: the terminal then
// discards everything; the seccomp filter refuses it with EPERM since attack review
// rstdio F1, where a background gosbx exec left it so): checked on the pty from the
// host, TIOCGETD, TIOCGEXCL and a new open of the terminal's path.
func TestTerminalLineDisciplineRestored(t *testing.T) {
	const py = "/usr/bin/python3" // in the sandbox's /usr (a PATH one may be a user's shim)
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3 to make the ioctls")
	}
	const script = `import fcntl, struct, sys
fcntl.ioctl(0, 0x540c)  # TIOCEXCL
try:
    fcntl.ioctl(0, 0x5423, struct.pack("i", 27))  # TIOCSETD N_NULL
    setd = "ok"
except PermissionError:
    setd = "EPERM"
d = struct.unpack("i", fcntl.ioctl(0, 0x5424, b"\0\0\0\0"))[0]
x = struct.unpack("i", fcntl.ioctl(0, 0x80045440, b"\0\0\0\0"))[0]
sys.stderr.write("CHANGED setd=%s ldisc=%d excl=%d\n" % (setd, d, x))`
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		m, sl := openPty(t)
		go io.Copy(io.Discard, m)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", py, "-c", script)
		var stderr strings.Builder
		cmd.Stdin, cmd.Stdout = sl, sl
		cmd.Stderr = &stderr
		cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		if code, ok := waitTimeout(t, cmd, runLimit); !ok || code != 0 {
			t.Fatalf("exit %d (finished %v), stderr %q", code, ok, stderr.String())
		}
		if !strings.Contains(stderr.String(), "CHANGED setd=EPERM ldisc=0 excl=1") {
			t.Fatalf("want TIOCSETD refused (EPERM) and TIOCEXCL set inside: %q", stderr.String())
		}
		if d, err := unix.IoctlGetInt(int(sl.Fd()), unix.TIOCGETD); err != nil || d != 0 {
			t.Errorf("line discipline after the run: %d (%v), want 0 (N_TTY)", d, err)
		}
		if x, err := unix.IoctlGetInt(int(sl.Fd()), unix.TIOCGEXCL); err != nil || x != 0 {
			t.Errorf("exclusive mode after the run: %d (%v), want 0", x, err)
		}
		f, err := os.OpenFile(sl.Name(), os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			t.Errorf("open %s after the run: %v, want it to open", sl.Name(), err)
		} else {
			f.Close()
		}
	})
}
