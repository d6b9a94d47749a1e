package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestEventFilesReread: a counter's file, kept open, is read anew at each call (a value
// written since is seen, a shorter one too), a missing file reads 0 until it appears, and
// after close every count is 0 and no descriptor is left.
func TestEventFilesReread(t *testing.T) {
	dir := t.TempDir()
	oom, pids := filepath.Join(dir, "memory.events"), filepath.Join(dir, "pids.events")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(oom, "low 0\nhigh 0\nmax 7\noom 2\noom_kill 12\n")
	e := newEventFiles(oom, "oom_kill", pids, "max")
	if a, b := e.counts(); a != 12 || b != 0 {
		t.Fatalf("counts = %d, %d; want 12, 0 (pids.events missing)", a, b)
	}
	write(pids, "max 3\n")
	write(oom, "oom_kill 4\n") // truncated and shorter: the open descriptor sees it
	if a, b := e.counts(); a != 4 || b != 3 {
		t.Fatalf("counts = %d, %d; want 4, 3", a, b)
	}
	fd := e.files[0].fd
	e.close()
	if a, b := e.counts(); a != 0 || b != 0 {
		t.Fatalf("counts after close = %d, %d; want 0, 0", a, b)
	}
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && l == oom {
		t.Fatalf("descriptor %d still open on %s after close", fd, oom)
	}
	var none *eventFiles
	if a, b := none.counts(); a != 0 || b != 0 {
		t.Fatal("a group without counters reads non-zero")
	}
}

func TestCountIn(t *testing.T) {
	for _, c := range []struct {
		in, key string
		want    int64
	}{
		{"oom_kill_disable 0\nunder_oom 0\noom_kill 5\n", "oom_kill", 5},
		{"oom_kill_disable 9\n", "oom_kill", 0},
		{"max 2", "max", 2},
		{"", "max", 0},
	} {
		if got := countIn([]byte(c.in), c.key); got != c.want {
			t.Errorf("countIn(%q, %q) = %d, want %d", c.in, c.key, got, c.want)
		}
	}
}
