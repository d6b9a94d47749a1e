package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/internal/gostart"
)

// internal/gostart sets GOMAXPROCS 1 before any package init that allocates (whose
// spans a second P's cache would hold, freed into fresh span-set blocks when the P is
// destroyed): in gosbx's init order (this test binary's, which links package main),
// every package initialized before it reports no allocation (GODEBUG=inittrace=1,
// runtime(3)), and the setting it replaced is the runtime's default.
func TestGoStartInitFirst(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -test.run=^$: %v\n%s", os.Args[0], err, out)
	}
	var before []string
	found := false
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line) // init PKG @T ms, C ms clock, B bytes, A allocs
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		if f[1] == "github.com/gosbx/gosbx/internal/gostart" {
			found = true
			break
		}
		if f[9] != "0" {
			before = append(before, f[1]+" ("+f[9]+" allocs)")
		}
	}
	if !found {
		t.Fatalf("no init of internal/gostart in the init trace:\n%s", out)
	}
	if len(before) > 0 {
		t.Errorf("packages that allocate are initialized before internal/gostart sets one P: %v", before)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("GOMAXPROCS is %d after the package inits, want 1", n)
	}
	want := runtime.NumCPU()
	if s, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && s > 0 {
		want = s
	}
	if got := gostart.Replaced(); got > want || got < 1 {
		t.Errorf("gostart replaced GOMAXPROCS %d, want the runtime's default (at most %d CPUs)", got, want)
	}
}
