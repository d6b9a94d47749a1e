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
// after 100 back-to-back `exec --session` their resident anonymous memory, read from
// the host, falls by at least 512 KiB each within seconds. Without the trim Go's
// collector waits for a 4 MiB heap, and nothing falls.
func TestSessionTrimsAfterRequests(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		e.start("trim")
		in := e.info("trim")
		for i := 0; i < 100; i++ {
			mustSucceed(t, e.gosbx("exec", "--session", "trim", "--", "/bin/true"), "exec --session")
		}
		peakSup, peakInit := rssAnonKiB(in.Pid), rssAnonKiB(in.InitPid)
		if peakSup <= 0 || peakInit <= 0 {
			t.Fatalf("RssAnon of supervisor %d / init %d unreadable: %d / %d", in.Pid, in.InitPid, peakSup, peakInit)
		}
		var sup, init int
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			sup, init = rssAnonKiB(in.Pid), rssAnonKiB(in.InitPid)
			if sup <= peakSup-512 && init <= peakInit-512 {
				break
			}
			time.Sleep(50 * time.Millisecond) // polling the kernel's count: no event says a trim ran
		}
		if sup > peakSup-512 || init > peakInit-512 {
			t.Errorf("resident anonymous memory after 100 requests, then idle 10 s: supervisor %d → %d KiB, init %d → %d KiB: want each at least 512 KiB less",
				peakSup, sup, peakInit, init)
		}
		// still serving after the trim
		mustSucceed(t, e.gosbx("exec", "--session", "trim", "--", "/bin/true"), "exec --session after the trim")
		mustSucceed(t, e.gosbx("session", "stop", "trim"), "session stop")
	})
}
