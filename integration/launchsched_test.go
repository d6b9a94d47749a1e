package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A root caller's gosbx exec gives the Go runtime's sysmon thread a 1 ms timer slack
// (cmd/gosbx/procs.go, slowSysmon), which with one P saves CPU a launch
// (docs/decisions.md "Speed, ninth attempt: the launcher's scheduler"). Checked from
// the host while the command runs: of the launcher's threads, the lowest thread id
// after the main thread's (sysmon, the first thread runtime.main starts) has
// timerslack_ns 1000000 and the main thread its inherited slack. Uid 65534 lacks
// CAP_SYS_NICE: every thread keeps the slack it inherited.
func TestLauncherSysmonSlack(t *testing.T) {
	own, err := os.ReadFile("/proc/self/timerslack_ns")
	must(t, err)
	inherited := strings.TrimSpace(string(own))
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		cmd, _, _ := startTrapping(t, s)
		defer func() {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}()
		pid := cmd.Process.Pid
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		must(t, err)
		slack := map[int]string{}
		first := 0
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", tid))
			if err != nil {
				continue // a thread that has ended since
			}
			slack[tid] = strings.TrimSpace(string(b))
			if tid != pid && (first == 0 || tid < first) {
				first = tid
			}
		}
		if slack[pid] != inherited {
			t.Errorf("the launcher's main thread has timer slack %s ns, want %s (inherited): %v", slack[pid], inherited, slack)
		}
		want := inherited
		if c.uid == 0 {
			want = "1000000"
		}
		if first == 0 || slack[first] != want {
			t.Errorf("the launcher's first thread after its main one (sysmon) has timer slack %q ns, want %s: %v", slack[first], want, slack)
		}
	})
}

// A root caller's session supervisor gives its sysmon the same 1 ms timer slack as the
// launcher (internal/gostart/sysmon): with one P, each request woke it every 20 µs
// while a goroutine waited in a system call (docs/decisions.md, "Speed, fourteenth
// attempt"). Checked from the host on the idle supervisor: the lowest thread id after
// its main thread's has timerslack_ns 1000000 (uid 65534: the slack it inherited).
func TestSupervisorSysmonSlack(t *testing.T) {
	own, err := os.ReadFile("/proc/self/timerslack_ns")
	must(t, err)
	inherited := strings.TrimSpace(string(own))
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("slack")
		pid := e.info("slack").Pid
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		must(t, err)
		first := 0
		for _, task := range tasks {
			if tid, _ := strconv.Atoi(task.Name()); tid != pid && (first == 0 || tid < first) {
				first = tid
			}
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", first))
		must(t, err)
		want := inherited
		if c.uid == 0 {
			want = "1000000"
		}
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("the supervisor's first thread after its main one (sysmon, %d) has timer slack %s ns, want %s", first, got, want)
		}
		mustSucceed(t, e.gosbx("session", "stop", "slack"), "stop")
	})
}
