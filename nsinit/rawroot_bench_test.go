package nsinit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
)

// BenchmarkRawRoot measures the kernel work of the raw init's root for the default agent
// policy, nothing else: a raw child in a new mount namespace runs PlanSetupTrees and
// PlanPivotRoot (a root caller's plan) and exits, and the mount namespace goes with it.
// It reports the child's CPU (utime+stime from wait4(2), its exit's teardown included)
// per launch as cpu-µs/op; the plan is compiled outside the timer. Needs root.
func BenchmarkRawRoot(b *testing.B) {
	if os.Getuid() != 0 {
		b.Skip("needs root: the raw child here makes a mount namespace without a user namespace")
	}
	ws, err := os.MkdirTemp("/var/tmp", "gosbx-nsinit-bench-")
	if err != nil {
		b.Skipf("need a directory under /var/tmp: %v", err)
	}
	defer os.RemoveAll(ws)
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		b.Fatal(err)
	}
	spec, err := rawRootConfig(ws)
	if err != nil {
		b.Fatal(err)
	}
	null, err := mounts.OpenNull("/dev/null")
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	var cpu int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		srcs, err := mounts.CloneSources(spec)
		if err != nil {
			b.Fatal(err)
		}
		var fds []int
		for _, s := range srcs {
			fds = append(fds, s.Fd())
		}
		p, err := rawplan.New(1<<20, 4096)
		if err != nil {
			b.Fatal(err)
		}
		var rep [2]int
		if err := unix.Pipe2(rep[:], unix.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		s := p.Begin("mount")
		proc := p.Reg()
		p.Call(s, nil, unix.SYS_FSOPEN, rawplan.Lit(p.Str("proc")), rawplan.Lit(unix.FSOPEN_CLOEXEC)).Into(proc)
		rr, err := mounts.PlanSetupTrees(p, s, spec, fds, null, proc)
		if err != nil {
			b.Fatal(err)
		}
		if err := rr.PlanPivotRoot(p.Begin("pivot_root")); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		pid, err := rawplan.Start(p, unix.CLONE_NEWNS, rep[1])
		if err != nil {
			b.Fatal(err)
		}
		var st unix.WaitStatus
		var ru unix.Rusage
		if _, err := unix.Wait4(pid, &st, 0, &ru); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		unix.Close(rep[1])
		if err := readRawReport(p, rep[0]); err != nil {
			b.Fatalf("the raw child failed: %v", err)
		}
		unix.Close(rep[0])
		cpu += ru.Utime.Nano() + ru.Stime.Nano()
		for _, s := range srcs {
			s.Close()
		}
		p.Free()
		b.StartTimer()
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e3, "cpu-µs/op")
}
