package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// faultFromUser are the synchronous signals the Go runtime crashes on when another
// process sends them, and SIGPIPE, which it does not (here to show it).
var faultFromUser = []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL,
	syscall.SIGTRAP, syscall.SIGSYS, syscall.SIGSTKFLT, syscall.SIGPIPE}

// A host process that may signal the init (root, or the caller's uid) sends it
// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGSTKFLT and SIGPIPE with kill(2),
// and SIGSEGV and SIGBUS with tgkill(2) to each of its threads, while its setup waits
// (the prestarted init, waiting for its config while a -tags gosbxfault build's policy
// step pauses): the init drops them, as os/signal's Ignore did, and the launch then
// runs the command (marker on the host, exit 0). Without nsinit's filter
// (initfault.go) the first one crashes the Go runtime and the launch ends with 125.
func TestInitIgnoresFaultSignalsFromHost(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := s.marker("faultsig")
		cmd := s.command(s.limitCtx(runLimit), "--", "touch", marker)
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = s.env("GOSBX_FAULT=policy pause")
		stdin, err := cmd.StdinPipe()
		must(t, err)
		var stderr strings.Builder
		r, w, err := os.Pipe()
		must(t, err)
		cmd.Stderr = w
		must(t, cmd.Start())
		w.Close()
		defer cmd.Process.Kill()
		line := make([]byte, 256)
		n, _ := r.Read(line)
		stderr.Write(line[:n])
		if !strings.Contains(string(line[:n]), "pauses") {
			t.Fatalf("the policy step did not pause: %q", line[:n])
		}
		init := initChild(t, cmd.Process.Pid)
		// the init waits for its config on its main thread: its signals are set up
		waitWchan(t, init, "unix_stream_read_generic")
		for _, sig := range faultFromUser {
			must(t, syscall.Kill(init, sig))
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", init))
		for _, task := range tasks {
			tid, _ := strconv.Atoi(filepath.Base(task))
			for _, sig := range []syscall.Signal{syscall.SIGSEGV, syscall.SIGBUS} {
				if err := unix.Tgkill(init, tid, sig); err != nil && err != unix.ESRCH {
					t.Fatalf("tgkill %d %d %v: %v", init, tid, sig, err)
				}
			}
		}
		waitDelivered(t, init, faultFromUser)
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", init)); procState(st) == 'Z' || len(st) == 0 {
			t.Errorf("the init %d died of a signal another process sent it", init)
		}
		stdin.Write([]byte{'\n'})
		stdin.Close()
		go func() {
			b := make([]byte, 4096)
			for {
				n, err := r.Read(b)
				stderr.Write(b[:n])
				if err != nil {
					return
				}
			}
		}()
		err = cmd.Wait()
		r.Close()
		if err != nil {
			t.Fatalf("gosbx exec after fault signals to its init: %v\n%s", err, stderr.String())
		}
		if _, err := os.Lstat(marker); err != nil {
			t.Errorf("the command did not run: %v", err)
		}
	})
}

// waitWchan waits until pid's main thread sleeps in the kernel function want.
func waitWchan(t *testing.T, pid int, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
		if string(w) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never waited in %s (wchan %q)", pid, want, w)
		}
	}
}

// waitDelivered waits until none of sigs is pending for pid (process-directed, ShdPnd)
// or any of its threads (SigPnd): each was delivered, or the process is gone.
func waitDelivered(t *testing.T, pid int, sigs []syscall.Signal) {
	t.Helper()
	var mask uint64
	for _, s := range sigs {
		mask |= 1 << (uint(s) - 1)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); procState(st) == 'Z' || len(st) == 0 {
			return // it died of one
		}
		pending := uint64(0)
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		for _, f := range append(files, fmt.Sprintf("/proc/%d/status", pid)) {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "ShdPnd:"); ok {
					p, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
					pending |= p
				} else if v, ok := strings.CutPrefix(l, "SigPnd:"); ok {
					p, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
					pending |= p
				}
			}
		}
		if pending&mask == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("signals %#x still pending for %d", pending&mask, pid)
		}
	}
}

// procState is the state letter of a /proc/PID/stat line (after the command's
// parenthesis), or 0.
func procState(stat []byte) byte {
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2]
	}
	return 0
}
