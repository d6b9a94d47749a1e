package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// A command that leaves a busy process behind: its CPU is not in the command's own rusage
// (what hyperfine counts), and -cpu's subreaper adds it.
func TestRunCountsOrphans(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl PR_SET_CHILD_SUBREAPER: %v", err)
	}
	// the background loop runs after sh has exited: sh never waits for it
	busy := `(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done) >/dev/null 2>&1 & exit 0`
	res, err := run([]string{"/bin/sh", "-c", busy}, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.launcherCPUMs > 20 {
		t.Errorf("sh's own rusage %.2f ms: it should not include the loop it left behind", res.launcherCPUMs)
	}
	if res.cpuMs-res.launcherCPUMs < 50 {
		t.Errorf("the orphaned loop counted %.2f ms (all %.2f, sh %.2f): want its CPU, ≥ 50 ms",
			res.cpuMs-res.launcherCPUMs, res.cpuMs, res.launcherCPUMs)
	}
	// nothing left to reap
	if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); err != unix.ECHILD {
		t.Errorf("wait4 after run: %v, want ECHILD", err)
	}
}
