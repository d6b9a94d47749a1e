package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Seen from the host while the command runs: no thread of the sandbox's init holds a
// capability (CapEff, CapPrm, CapAmb of /proc/INIT/task/*/status). The init sends its
// exec report first and then clears every thread's sets (nsinit's reportExec), and its
// main thread waits in the reaper's poll(2) only after that: the check is made from
// then on, while the command still runs. /proc/1 inside the sandbox is the commands'
// pid 1, not the init, so this is checked from outside (TestInitThreadsHoldNoCapabilities
// checks what the commands see).
func TestInitCapabilitiesFromHost(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", "/bin/sh", "-c", "echo up; read x; exit 0")
		stdin, err := cmd.StdinPipe()
		must(t, err)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		defer cmd.Wait()
		defer stdin.Close()
		if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "up\n" {
			t.Fatalf("the command did not start: %q", line)
		}
		init := initOfLauncher(t, cmd.Process.Pid)
		// the main thread waits in the reaper's poll(2) once the report is sent and the
		// sets are cleared (the command printed after the go-ahead was read)
		waitInitInPoll(t, init)
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", init))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("no threads of the init %d: %v", init, err)
		}
		for _, st := range tasks {
			b, err := os.ReadFile(st)
			if err != nil {
				continue // a thread that ended
			}
			for _, l := range strings.Split(string(b), "\n") {
				f := strings.Fields(l)
				if len(f) == 2 && (f[0] == "CapEff:" || f[0] == "CapPrm:" || f[0] == "CapAmb:") && f[1] != "0000000000000000" {
					t.Errorf("%s: %s %s while the command runs", st, f[0], f[1])
				}
			}
		}
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("gosbx exec: %v", err)
		}
	})
}

// initOfLauncher is the pid of the sandbox init the gosbx process launcher started
// (its child whose argv[0] is gosbx-init).
func initOfLauncher(t *testing.T, launcher int) int {
	t.Helper()
	kids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", launcher))
	for _, k := range kids {
		b, _ := os.ReadFile(k)
		for _, p := range strings.Fields(string(b)) {
			if isInitProcess(p) {
				pid, _ := strconv.Atoi(p)
				return pid
			}
		}
	}
	t.Fatalf("no gosbx-init child of the launcher %d", launcher)
	return 0
}

// isInitProcess reports whether the process pid is a sandbox's init: the Go init,
// executed as gosbx-init, or the raw init (nsinit/rawinit.go), a clone of the launcher
// that shares its memory, and so its command line, and names itself gosbx-init.
func isInitProcess(pid string) bool {
	argv, _ := os.ReadFile("/proc/" + pid + "/cmdline")
	comm, _ := os.ReadFile("/proc/" + pid + "/comm")
	return strings.HasPrefix(string(argv), "gosbx-init\x00") || string(comm) == "gosbx-init\n"
}

// waitInitInPoll waits (5 s at most) until the init's main thread waits in the reaper's
// poll(2): the command runs, its exec reported and the init's own setup over.
func waitInitInPoll(t *testing.T, init int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", init))
		if strings.HasPrefix(string(w), "poll_schedule_timeout") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the init's main thread never reached the reaper's poll (wchan %q)", w)
		}
	}
}
