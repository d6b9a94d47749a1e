package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The exit status table: pass-through, 128+S, 126, 127.
func TestExitCodes(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.writeWS("not-executable", "#!/bin/sh\necho ran\n", 0o644)
		must(t, os.Mkdir(filepath.Join(s.ws, "a-dir"), 0o755))
		cases := []struct {
			name string
			want int
			cmd  []string
		}{
			{"true", 0, []string{"true"}},
			{"false", 1, []string{"false"}},
			{"exit7", 7, []string{shellPath, "-c", "exit 7"}},
			{"exit255", 255, []string{shellPath, "-c", "exit 255"}},
			{"SIGTERM", 143, []string{shellPath, "-c", "kill -TERM $$"}},
			{"SIGKILL", 137, []string{shellPath, "-c", "kill -KILL $$"}},
			{"SIGSEGV", 139, []string{shellPath, "-c", "kill -SEGV $$"}},
			{"SIGABRT", 134, []string{shellPath, "-c", "kill -ABRT $$"}},
			{"not-found-abs", 127, []string{"/gosbx-it-no-such-command"}},
			{"not-found-path", 127, []string{"gosbx-it-no-such-command"}},
			{"not-executable", 126, []string{filepath.Join(s.ws, "not-executable")}},
			{"directory", 126, []string{filepath.Join(s.ws, "a-dir")}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ss := *s
				ss.t = t
				r := ss.run(append([]string{"--"}, tc.cmd...)...)
				if r.code != tc.want {
					t.Errorf("%v: got exit %d, want %d\n%v", tc.cmd, r.code, tc.want, r)
				}
				if strings.Contains(r.stdout, "ran") {
					t.Errorf("a non-executable file was run: %q", r.stdout)
				}
			})
		}
	})
}

// --timeout kills the whole sandbox, a background grandchild included, and
// gosbx exits 124.
func TestTimeoutKillsAll(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		link := s.sleepLink("timeout")
		r := s.sh([]string{"--timeout", "2s"},
			`"$1" 1001 </dev/null >/dev/null 2>&1 & echo $! > "$2/gc.pid"
setsid "$1" 1006 </dev/null >/dev/null 2>&1 &
exec "$1" 1002`, link, s.ws)
		if r.code != 124 {
			t.Errorf("timeout: exit %d, want 124\n%v", r.code, r)
		}
		if r.elapsed < 1500*time.Millisecond || r.elapsed > 20*time.Second {
			t.Errorf("--timeout 2s took %v", r.elapsed)
		}
		if b, err := os.ReadFile(filepath.Join(s.ws, "gc.pid")); err != nil || strings.TrimSpace(string(b)) == "" {
			t.Fatalf("the grandchild never started: %v", err)
		}
		if left := waitHostPIDs(link, time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("processes survived the timeout on the host (a grandchild in its own session included?): pids %v", left)
		}
	})
}

// When the command exits, the processes it left behind are killed.
func TestOrphansKilledOnExit(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		link := s.sleepLink("orphan")
		r := s.sh(nil, `"$1" 1003 </dev/null >/dev/null 2>&1 &
setsid "$1" 1004 </dev/null >/dev/null 2>&1 &
( "$1" 1005 </dev/null >/dev/null 2>&1 & ) 
sleep 0.3; exit 5`, link)
		if r.code != 5 {
			t.Errorf("exit %d, want 5\n%v", r.code, r)
		}
		if r.elapsed > 20*time.Second {
			t.Errorf("gosbx waited %v for the orphans", r.elapsed)
		}
		if left := waitHostPIDs(link, time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("background processes survived the command's exit: pids %v", left)
		}
	})
}
