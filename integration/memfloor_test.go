package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --memory below what the sandbox itself needs is refused up front (125), saying so and
// how much to ask for, instead of the init being OOM-killed during setup ("the init stage
// died during setup: signal: killed", from a new user's --memory 1M); at the floor
// (4M) a small command runs.
func TestMemoryBelowSetupFloor(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := filepath.Join(s.ws, "ran")
		for _, m := range []string{"1M", "3M"} {
			r := s.run("--memory", m, "--", shellPath, "-c", `touch "$1"`, "_", marker)
			if r.code != 125 || !strings.Contains(r.stderr, "below what the sandbox itself needs") || !strings.Contains(r.stderr, "at least 4M") {
				t.Errorf("--memory %s: want 125 saying the sandbox needs at least 4M\n%v", m, r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("--memory %s: the command ran", m)
			}
		}
		if c.uid == 0 {
			mustSucceed(t, s.run("--memory", "4M", "--", "/bin/true"), "--memory 4M")
		}
	})
}

// --pids below what the sandbox's own setup needs is refused up front (125), naming the
// floor, instead of the init's Go runtime crashing with a stack dump on the caller's
// stderr (a new user's --pids 8 failed 14 launches in 20 that way); at the floor (16)
// `true` runs every time.
func TestPidsBelowSetupFloor(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		marker := filepath.Join(s.ws, "ran")
		for _, n := range []string{"5", "8", "15"} {
			r := s.run("--pids", n, "--", shellPath, "-c", `touch "$1"`, "_", marker)
			if r.code != 125 || !strings.Contains(r.stderr, "below what the sandbox itself needs") || !strings.Contains(r.stderr, "at least 16") ||
				strings.Contains(r.stderr, "goroutine") {
				t.Errorf("--pids %s: want 125 saying the sandbox needs at least 16\n%v", n, r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("--pids %s: the command ran", n)
			}
		}
		if c.uid == 0 {
			for i := 0; i < 10; i++ {
				mustSucceed(t, s.run("--pids", "16", "--", "/bin/true"), "--pids 16")
			}
		}
	})
}
