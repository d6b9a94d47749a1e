package nsinit

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestSetIDRaisesProcs: an init at one P (GOMAXPROCS=1, initProcs) whose set-ID handler
// serves a session (more than one thread) has two Ps once it serves a notification;
// with one thread (a one-shot init) it keeps one (review22 F2). Run in a child of the
// test binary started with GOMAXPROCS=1, as an init is.
func TestSetIDRaisesProcs(t *testing.T) {
	if mode := os.Getenv("GOSBX_TEST_SETID_PROCS"); mode != "" {
		setidProcs.two = mode == "session"
		raiseSetIDProcs()
		raiseSetIDProcs()
		os.Stdout.WriteString("procs=" + string(rune('0'+runtime.GOMAXPROCS(0))) + "\n")
		return
	}
	for mode, want := range map[string]string{"session": "procs=2", "oneshot": "procs=1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSetIDRaisesProcs$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GOSBX_TEST_SETID_PROCS="+mode)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s child: %v\n%s", mode, err, out)
		}
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("%s: %s; want %s", mode, out, want)
		}
	}
}
