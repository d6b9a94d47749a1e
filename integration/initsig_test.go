package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// maxInitThreads is the most threads a one-shot init has while its command runs: the
// main thread (in the reaper's poll), the set-ID handler (a root caller's), and the Go
// runtime's own at GOMAXPROCS=1 (sysmon, the template thread of the locked main thread,
// one idle M). Before the init caught its signals by signalfd it had 7-8 (os/signal's
// locked thread, a thread in signal_recv, a second P's); docs/decisions.md, "Speed,
// fourth attempt: the init's signals".
const maxInitThreads = 5

// Seen from the host while the command runs: the init has at most maxInitThreads
// threads, and signals sent to the init itself (process-directed kill(2), as the
// kernel's own SIGHUP to a session leader is) reach the command, SIGABRT is dropped,
// and the init survives all of them. The Go runtime unblocks SIGHUP, SIGINT, SIGTERM,
// SIGQUIT and SIGABRT on its threads: without the init's handler for them (nsinit's
// initsig.go), the first one ends the init and the sandbox.
func TestInitThreadsAndSignals(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		cmd, lines, init := startTrapping(t, newSandbox(t, c))
		defer cmd.Wait()
		defer cmd.Process.Kill()
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", init))
		must(t, err)
		if len(tasks) > maxInitThreads {
			var comms []string
			for _, task := range tasks {
				w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", init, task.Name()))
				comms = append(comms, task.Name()+":"+string(w))
			}
			t.Errorf("the init has %d threads while its command runs, want at most %d: %v", len(tasks), maxInitThreads, comms)
		}
		for _, sig := range []syscall.Signal{syscall.SIGABRT, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT,
			syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
			must(t, syscall.Kill(init, sig))
			want := strings.TrimPrefix(sigName(sig), "SIG") + "\n"
			if sig == syscall.SIGABRT {
				continue // dropped: the next signal's line shows the init still there
			}
			if line, err := lines.ReadString('\n'); line != want {
				t.Fatalf("after %v to the init, the command printed %q (%v), want %q", sig, line, err, want)
			}
		}
		must(t, syscall.Kill(init, syscall.SIGTERM))
		if line, _ := lines.ReadString('\n'); line != "TERM\n" {
			t.Errorf("after SIGTERM to the init, the command printed %q", line)
		}
		err = cmd.Wait()
		if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 3 {
			t.Errorf("gosbx exec: %v, want exit status 3 (the command's)", err)
		}
	})
}

// startTrapping starts, in s, a shell that prints the name of each of SIGHUP, SIGINT,
// SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH it gets and exits 3 on SIGTERM; it returns the
// gosbx exec, the shell's output after its first line and the sandbox's init, waiting in
// its reaper's poll. The caller kills and waits for cmd.
func startTrapping(t *testing.T, s *sandbox) (*exec.Cmd, *bufio.Reader, int) {
	t.Helper()
	script := `for s in HUP INT QUIT USR1 USR2 WINCH; do trap "echo $s" $s; done
trap "echo TERM; exit 3" TERM
echo up
while :; do sleep 1000 & wait $!; done`
	cmd := s.command(s.limitCtx(runLimit), "--", "/bin/sh", "-c", script)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	lines := bufio.NewReader(stdout)
	if line, _ := lines.ReadString('\n'); line != "up\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the command did not start: %q", line)
	}
	init := initOfLauncher(t, cmd.Process.Pid)
	waitInitInPoll(t, init)
	return cmd, lines, init
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGUSR2: "SIGUSR2", syscall.SIGWINCH: "SIGWINCH", syscall.SIGABRT: "SIGABRT"}[s]
}

// Signals a host process sends with tgkill(2) to one thread of the init while its
// command runs reach the command, whichever thread: the main one (which reads them from
// its signalfd) or any other (the Go runtime's, the set-ID handler), where the init's
// handler sends them on to the main thread. Before, SIGUSR1, SIGUSR2 and SIGWINCH sent
// to a thread other than the main one stayed pending there for good (blocked on every
// thread since the init's start): nsinit's initthreads.go unblocks them on the others.
// The init survives all of them.
func TestInitThreadDirectedSignals(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		cmd, lines, init := startTrapping(t, newSandbox(t, c))
		defer cmd.Wait()
		defer cmd.Process.Kill()
		expect := func(what, want string) {
			t.Helper()
			if line, err := lines.ReadString('\n'); line != want {
				t.Fatalf("after %s, the command printed %q (%v), want %q", what, line, err, want)
			}
		}
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", init))
		must(t, err)
		if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", init)); len(tasks) < 2 && strings.HasPrefix(string(argv), "gosbx-init\x00") {
			// (the raw init, a caller other than root's, has its main thread alone)
			t.Fatalf("the Go init has no thread but its main one")
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
				if err := unix.Tgkill(init, tid, sig); err == unix.ESRCH {
					break // a thread the runtime ended meanwhile
				} else if err != nil {
					t.Fatalf("tgkill %d %d %v: %v", init, tid, sig, err)
				}
				expect(fmt.Sprintf("tgkill %v to thread %d", sig, tid), strings.TrimPrefix(sigName(sig), "SIG")+"\n")
			}
		}
		// nothing else reached the command: the next line is the process-directed SIGTERM's
		must(t, syscall.Kill(init, syscall.SIGTERM))
		expect("SIGTERM to the init", "TERM\n")
		err = cmd.Wait()
		if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 3 {
			t.Errorf("gosbx exec: %v, want exit status 3 (the command's)", err)
		}
	})
}

// sigUnblockSignal (64) sent by a host process, to the init or to its main thread, is
// ignored: it no longer unblocks SIGUSR1 and co. on the main thread, where the init's
// redirect would send them back to itself for good (from an attack review: the main
// thread looped at full CPU and never reaped the command). The command still gets
// SIGUSR1, and the process-directed SIGTERM ends it.
func TestInitForeignUnblockSignal(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		cmd, r, init := startTrapping(t, s)
		defer cmd.Wait()
		defer cmd.Process.Kill()
		lines := make(chan string)
		go func() {
			defer close(lines)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				lines <- line
			}
		}()
		expect := func(what, want string) {
			t.Helper()
			select {
			case line := <-lines:
				if line == want {
					return
				}
				t.Errorf("after %s, the command printed %q, want %q", what, line, want)
			case <-time.After(20 * time.Second):
				t.Errorf("after %s, the command printed nothing in 20 s, want %q", what, want)
			}
			// a looping init would outlive the launcher: end it (it is this test's)
			syscall.Kill(init, syscall.SIGKILL)
			t.FailNow()
		}
		must(t, syscall.Kill(init, 64))
		must(t, unix.Tgkill(init, init, 64))
		for i := 0; i < 2; i++ {
			must(t, syscall.Kill(init, syscall.SIGUSR1))
			expect("signal 64 from the host, then SIGUSR1", "USR1\n")
		}
		must(t, syscall.Kill(init, syscall.SIGTERM))
		expect("SIGTERM to the init", "TERM\n")
		err := cmd.Wait()
		if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 3 {
			t.Errorf("gosbx exec: %v, want exit status 3 (the command's)", err)
		}
	})
}
