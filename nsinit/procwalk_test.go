package nsinit

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDescendantsWalk finds a tree of processes (a shell, its two children and a
// grandchild or two) with a bounded number of allocations, stops at its budget, and reads
// numbers that span its buffer's reads.
func TestDescendantsWalk(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & (sleep 30 & wait) & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	root := cmd.Process.Pid
	// the old walk, by os.ReadFile and strings.Fields, as the reference
	ref := func() []int {
		var out []int
		queue := []int{root}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(p) + "/task")
			for _, tk := range tasks {
				b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/task/" + tk.Name() + "/children")
				for _, f := range strings.Fields(string(b)) {
					n, _ := strconv.Atoi(f)
					out = append(out, n)
					queue = append(queue, n)
				}
			}
		}
		return out
	}
	var want []int
	for deadline := time.Now().Add(10 * time.Second); len(want) < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the shells fork their children
		want = ref()
	}
	if len(want) < 3 {
		t.Fatalf("reference walk found %v, want a child, a grandchild and more", want)
	}
	got := descendants(root)
	if !slices.Equal(got, want) {
		t.Fatalf("descendants = %v, want %v", got, want)
	}
	// ~4.5 a process (the paths, the walk's closure); the old walk, like ref, ~18
	if allocs, limit := testing.AllocsPerRun(10, func() { descendants(root) }), 8*(len(want)+1); allocs > float64(limit) {
		t.Errorf("descendants of %d processes: %.0f allocations, want ≤ %d", len(want)+1, allocs, limit)
	}
	if got, used := descendantsWithin(root, 2); len(got) > 2 || used <= 2 {
		t.Errorf("descendantsWithin(budget 2) = %v, used %d: want it stopped short", got, used)
	}
	if r := residentBytes(os.Getpid(), make([]byte, 256)); r <= 0 {
		t.Errorf("residentBytes(self) = %d", r)
	}

	// numbers split across reads of a 3-byte buffer, junk skipped
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString("12 345 x7 6789\n10")
	w.Close()
	defer r.Close()
	if got := appendNumbers(nil, int(r.Fd()), make([]byte, 3)); !slices.Equal(got, []int{12, 345, 6789, 10}) {
		t.Errorf("appendNumbers = %v", got)
	}
}
