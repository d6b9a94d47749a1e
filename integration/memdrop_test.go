package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// binaryOwnKiB is what pid alone maps of the gosbx binary's read-only and executable
// mappings (Private_Clean + Private_Dirty of /proc/PID/smaps), KiB; -1 when unreadable.
func binaryOwnKiB(pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return -1
	}
	defer f.Close()
	bin, _ := filepath.EvalSymlinks(gosbxBin)
	sum, in, seen := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && fs[5] == bin && fs[1][1] != 'w'
			seen = seen || in
			continue
		}
		if in && len(fs) >= 2 && (fs[0] == "Private_Clean:" || fs[0] == "Private_Dirty:") {
			n, _ := strconv.Atoi(fs[1])
			sum += n
		}
	}
	if !seen {
		return -1
	}
	return sum
}

// TestLauncherDropsBinaryPages: once the command has run a while (dropAfter, 250 ms),
// the launcher no longer holds the pages of the gosbx binary only it maps (read from
// the host's /proc/PID/smaps): with GOSBX_KEEP_PAGES=1 it holds them for the whole
// run. For root (Go init) and uid 65534 (whose raw init shares the launcher's memory).
func TestLauncherDropsBinaryPages(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		// one launcher at a time: two of the same binary share their pages, and own fewer
		dropMu.Lock()
		defer dropMu.Unlock()
		limit := 0 // what the dropped launcher must go under: set from the kept one's
		own := func(keep bool) int {
			t.Helper()
			ctx := s.limitCtx(runLimit)
			cmd := s.command(ctx, "--", "/bin/sleep", "30")
			if keep {
				cmd.Env = append(cmd.Env, "GOSBX_KEEP_PAGES=1")
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			waitSleepChild(t, cmd)
			// the launcher's own pages, polled: no event says they were dropped
			deadline := time.Now().Add(3 * time.Second)
			n := -1
			for time.Now().Before(deadline) {
				n = binaryOwnKiB(cmd.Process.Pid)
				if !keep && n >= 0 && n < limit {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			return n
		}
		kept := own(true)
		// the launcher runs on (its runtime's timers; a raw init's reaper shares its
		// memory), faulting some pages back, 64 KiB at a time (fault-around)
		limit = kept / 3
		dropped := own(false)
		t.Logf("the binary's pages the launcher alone maps: %d KiB kept, %d KiB after the drop", kept, dropped)
		if kept < 256 {
			t.Fatalf("with GOSBX_KEEP_PAGES=1 the launcher holds %d KiB of the binary alone: want the 256 KiB and more this test compares against", kept)
		}
		if dropped < 0 || dropped >= limit {
			t.Errorf("the launcher 3 s into the command holds %d KiB of the binary alone (%d KiB kept with GOSBX_KEEP_PAGES=1): want under a third of that", dropped, kept)
		}
	})
}

var dropMu sync.Mutex

// waitSleepChild waits (10 s at most) until a process running sleep descends from cmd.
func waitSleepChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if hasSleepBelow(cmd.Process.Pid, 4) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no sleep process under the launcher after 10 s")
}

func hasSleepBelow(pid, depth int) bool {
	if depth == 0 {
		return false
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, c := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(c)
			if comm, _ := os.ReadFile("/proc/" + c + "/comm"); strings.TrimSpace(string(comm)) == "sleep" {
				return true
			}
			if hasSleepBelow(n, depth-1) {
				return true
			}
		}
	}
	return false
}
