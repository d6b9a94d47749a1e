package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssAnonKiB is a process's resident anonymous memory (RssAnon of /proc/PID/status,
// proc(5)), KiB; -1 when it cannot be read.
func rssAnonKiB(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssAnon:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// TestSessionTrimsAfterRequests: a session's supervisor and init give the heap their
// requests left behind back to the kernel once the session is idle (internal/memtrim):
// over 100 `exec --session` and the idle seconds after, their resident anonymous
// memory, read from the host after each request, falls by at least 512 KiB in all for
// each (summed, so that trims in gaps a loaded host puts between requests count too).
// Without the trim Go's collector waits for a 4 MiB heap, and nothing falls.
func TestSessionTrimsAfterRequests(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("trim")
		in := e.info("trim")
		pids := [2]int{in.Pid, in.InitPid}
		var last, fell [2]int
		sample := func() {
			for i, pid := range pids {
				n := rssAnonKiB(pid)
				if n <= 0 {
					t.Fatalf("RssAnon of %d (supervisor %d, init %d) unreadable", pid, in.Pid, in.InitPid)
				}
				if last[i] > 0 && n < last[i] {
					fell[i] += last[i] - n
				}
				last[i] = n
			}
		}
		sample()
		first := last
		for i := 0; i < 100; i++ {
			mustSucceed(t, e.gosbx("exec", "--session", "trim", "--", "/bin/true"), "exec --session")
			sample()
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && (fell[0] < 512 || fell[1] < 512) {
			time.Sleep(50 * time.Millisecond) // polling the kernel's count: no event says a trim ran
			sample()
		}
		if fell[0] < 512 || fell[1] < 512 {
			t.Errorf("resident anonymous memory over 100 requests and 10 s idle: supervisor %d → %d KiB, fell %d KiB in all; init %d → %d KiB, fell %d KiB: want each to fall 512 KiB or more",
				first[0], last[0], fell[0], first[1], last[1], fell[1])
		}
		// still serving after the trim
		mustSucceed(t, e.gosbx("exec", "--session", "trim", "--", "/bin/true"), "exec --session after the trim")
		mustSucceed(t, e.gosbx("session", "stop", "trim"), "session stop")
	})
}
