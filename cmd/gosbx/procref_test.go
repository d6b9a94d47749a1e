package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gosbx/gosbx/nsinit"
)

// TestWaitGoneKillsOnlyTheCheckedInit: the sweep kills a lingering init only when the
// lock file names it by pid and start time, and through the pidfd it checked (from an
// attack review, F6): a process that set its command line to the init's is left alone
// when the lock file names its pid with another start time or with none (an earlier
// version's lock file), and killed when both match.
func TestWaitGoneKillsOnlyTheCheckedInit(t *testing.T) {
	decoy := func() *exec.Cmd {
		c := exec.Command("/bin/sleep", "100")
		c.Args[0] = nsinit.InitArg // its cmdline starts as an init's does
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	gone := func(c *exec.Cmd) bool {
		done := make(chan struct{})
		go func() { c.Process.Wait(); close(done) }()
		select {
		case <-done:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	lock := filepath.Join(t.TempDir(), "s.lock")
	sweep := func(content string) {
		if err := os.WriteFile(lock, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		lf, err := os.Open(lock)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		waitGone(lf, 100*time.Millisecond)
	}
	const noSupervisor = 4194303 // pid_max's ceiling: no such process
	d := decoy()
	pid := d.Process.Pid
	st, err := startTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	sweep(fmt.Sprintf("%d %d\n", noSupervisor, pid))
	sweep(fmt.Sprintf("%d 1 %d %d\n", noSupervisor, pid, st+1))
	// Still running (a process killed stays a zombie until reaped here: state Z).
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err != nil || strings.Contains(string(b), ") Z ") {
		t.Fatalf("the sweep killed a process it did not check by its start time (pid %d)", pid)
	}
	sweep(fmt.Sprintf("%d 1 %d %d\n", noSupervisor, pid, st))
	if !gone(d) {
		t.Errorf("the sweep left a lingering init named by pid and start time (pid %d)", pid)
	}
}
