package integration

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// maxLauncherThreads bounds the threads of gosbx exec while its command runs, in the
// fewest of up to launcherThreadTries launches (other load on the host can make the
// runtime start one more, now and then), with a raw init: the main thread, sysmon, and
// the two the runtime's own start makes (its first goroutines; gcenable's wait, the main
// goroutine locked during package inits). A Go init (the gosbxgoinit build) is cloned
// from a locked thread (forkExecInit, asHostID), whose first LockOSThread starts the
// runtime's template thread: one more. Before launchthreads the fewest was 6-7 for root
// and uid 65534 (os/signal's locked thread and its thread parked in signal_recv, a P
// handed off from the read of the raw init's reports, the template thread);
// docs/decisions.md, "Speed, seventh attempt: the launcher's threads".
const (
	maxLauncherThreads  = 4
	launcherThreadTries = 10 // under a parallel `go test ./...` the fewest of 4 was once one over; a regression shows in every try
)

// gosbx exec has at most maxLauncherThreads threads while its command runs (one more
// with a Go init), and a
// forwarded signal sent to any one of them (tgkill(2)), or to the process, reaches the
// command: whichever thread takes it, the handler passes it on.
func TestLauncherThreads(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		fewest, where, bound := 0, "", maxLauncherThreads
		for try := 0; try < launcherThreadTries && (try == 0 || fewest > bound); try++ {
			cmd, lines, init := startTrapping(t, s)
			pid := cmd.Process.Pid
			if initTasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", init)); len(initTasks) > 1 {
				bound = maxLauncherThreads + 1 // a Go init (a raw init has one thread)
			}
			tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
			must(t, err)
			if try == 0 || len(tasks) < fewest {
				fewest, where = len(tasks), ""
				for _, task := range tasks {
					w, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/wchan", pid, task.Name()))
					where += " " + task.Name() + ":" + string(w)
				}
			}
			if try == 0 {
				for _, task := range tasks {
					tid, _ := strconv.Atoi(task.Name())
					if err := unix.Tgkill(pid, tid, unix.SIGUSR1); err != nil {
						continue // a thread that has ended since
					}
					if line, err := lines.ReadString('\n'); line != "USR1\n" {
						t.Fatalf("after SIGUSR1 to the launcher's thread %d, the command printed %q (%v)", tid, line, err)
					}
				}
				must(t, syscall.Kill(pid, syscall.SIGHUP))
				if line, err := lines.ReadString('\n'); line != "HUP\n" {
					t.Fatalf("after SIGHUP to the launcher, the command printed %q (%v)", line, err)
				}
			}
			must(t, syscall.Kill(pid, syscall.SIGTERM))
			if line, _ := lines.ReadString('\n'); line != "TERM\n" {
				t.Errorf("after SIGTERM to the launcher, the command printed %q", line)
			}
			if err := cmd.Wait(); err == nil || err.(interface{ ExitCode() int }).ExitCode() != 3 {
				t.Errorf("gosbx exec: %v, want exit status 3 (the command's)", err)
			}
		}
		t.Logf("the launcher's threads while its command runs: %d:%s", fewest, where)
		if fewest > bound {
			t.Errorf("gosbx exec has %d threads while its command runs (the fewest of %d launches), want at most %d:%s",
				fewest, launcherThreadTries, bound, where)
		}
	})
}
