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
