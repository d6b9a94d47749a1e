package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPty returns the master and slave of a new pseudo-terminal.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatal(e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatal(e)
	}
	sl, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { m.Close(); sl.Close() })
	return m, sl
}

// A terminal on stdio stays a terminal inside, and input typed on it arrives.
func TestTTYPassThrough(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		m, sl := openPty(t)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", shellPath, "-c",
			`test -t 0 && test -t 1 && test -t 2 && echo TTY-OK; stty size; read x; echo "got:$x"`)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		must(t, cmd.Start())
		sl.Close()
		if _, err := m.Write([]byte("abc\n")); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			b := make([]byte, 4096)
			for {
				n, err := m.Read(b)
				out.Write(b[:n])
				if err != nil {
					return
				}
			}
		}()
		code, ok := waitTimeout(t, cmd, 30*time.Second)
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = m.SetReadDeadline(time.Now())
			<-done
		}
		if !ok || code != 0 {
			t.Errorf("exit %d (finished %v), want 0\n%q", code, ok, out.String())
		}
		if !strings.Contains(out.String(), "TTY-OK") || !strings.Contains(out.String(), "got:abc") {
			t.Errorf("terminal output: %q", out.String())
		}
	})
}

// New terminals can be made inside (devpts newinstance, ptmx), e.g. by script(1).
func TestPtyInside(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `script -qec 'test -t 0 && echo inner-pty-ok' /dev/null`)
		mustSucceed(t, r, "script")
		if !strings.Contains(r.stdout, "inner-pty-ok") {
			t.Errorf("script inside:\n%v", r)
		}
	})
}

// tiocstiProbe pushes a line into the input queue of its stdin terminal.
const tiocstiProbe = `
import fcntl, termios
n = 0
for c in b"echo GOSBX_INJECTED\n":
    try:
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c])); n += 1
    except OSError:
        pass
print("pushed", n)
`

// runOnPty runs cmd with the pty as its controlling terminal and returns
// what was left in the terminal's input queue afterwards.
func runOnPty(t *testing.T, cmd *exec.Cmd, sl *os.File) string {
	t.Helper()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sl, sl, sl
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	if _, ok := waitTimeout(t, cmd, 30*time.Second); !ok {
		t.Fatalf("%v did not finish", cmd.Args)
	}
	fd := int(sl.Fd())
	must(t, syscall.SetNonblock(fd, true))
	b := make([]byte, 4096)
	n, _ := syscall.Read(fd, b)
	if n < 0 {
		n = 0
	}
	return string(b[:n])
}

// TIOCSTI from inside cannot push input into the caller's terminal.
func TestNoTIOCSTI(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// Control: the same probe, unsandboxed, does inject on this host.
		_, sl0 := openPty(t) // the master stays open until the cleanup
		ctl := exec.Command(python, "-c", tiocstiProbe)
		if !strings.Contains(runOnPty(t, ctl, sl0), "GOSBX_INJECTED") {
			t.Skip("TIOCSTI does not inject even unsandboxed on this host (dev.tty.legacy_tiocsti=0?)")
		}
		_, sl := openPty(t)
		ctx := s.limitCtx(runLimit)
		if q := runOnPty(t, s.command(ctx, "--", python, "-c", tiocstiProbe), sl); strings.Contains(q, "GOSBX_INJECTED") {
			t.Errorf("the sandboxed command injected input into the caller's terminal: %q", q)
		}
	})
}
