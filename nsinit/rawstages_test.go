package nsinit

import (
	"fmt"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/seccomp"
)

// The raw init's steps come in the Go init's order for the same config: its build
// steps that act (recorded through the initSys double), the command's start and the
// process stage's steps, against the step names of the raw plan's ops in op order. Left
// out are the raw plan's own steps that the Go init does elsewhere: the clone child's
// (id maps, setsid, capabilities: initclone.go), the holder's (a procPlan of the Go
// init's pid namespace step), the signalfd (catchSignals, before the steps), the fork
// (under the process stage's first step, as startPlan reports it), the exec report
// (no step) and, for a filter that notifies, the set-ID handler's child's (cloned in
// the pid namespace step: its confinement, reported as the Go init's "set-ID thread",
// then its wait, "set-ID handler"; rawsetid.go). Both with a filter that allows and
// with one that notifies (the set-ID procfs, the handler, the listener's steps act).
func TestRawStepOrder(t *testing.T) {
	for _, notify := range []bool{false, true} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			spec := stageSpec()
			if notify {
				spec.Linux.Filter = seccomp.Program{{Code: 6, K: unix.SECCOMP_RET_USER_NOTIF}}
			}
			rawStepOrder(t, spec)
		})
	}
}

func rawStepOrder(t *testing.T, spec *config.Config) {

	// the Go init's
	r := &recorder{spec: spec}
	s := &sandboxInit{sys: r}
	var goSteps []string
	for _, st := range s.buildSteps() {
		n := len(r.calls)
		if err := st.do(s); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if len(r.calls) > n && st.name != "read config" {
			goSteps = append(goSteps, st.name)
		}
	}
	goSteps = append(goSteps, "chdir", "signal dispositions")
	dir, err := r.openDir(nil, spec.Process.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planProcess(spec.Process, spec.Linux.Filter, dir, "/usr/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	dir.Close()
	goSteps = append(goSteps, plan.steps...)

	// the raw plan's
	p, err := rawplan.New(1<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	fds := &rawFds{mapsR: 20, mapsW: 21, holderSend: 22, holderRecv: 23, holderExe: 24, holderRepR: 25, holderRepW: 26, life: 27}
	if spec.Linux.Filter.Notifies() {
		fds.setid = &rawSetIDFds{handler: 31, send: 32, exe: 33, repR: 34, repW: 35}
	}
	built, err := planRawBuild(p, spec, fds)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planRawStart(p, spec, built, rawStartFds{sync: 28, stageRepR: 29, stageRepW: 30, life: 27}); err != nil {
		t.Fatal(err)
	}
	order := p.StepOrder()
	first := slices.Index(order, "pid namespace")
	if first < 0 {
		t.Fatalf("no pid namespace step: %v", order)
	}
	var rawSteps []string
	for i, name := range order[first:] {
		switch name {
		case "pid 1 of the commands", "signals", "exec report", "set-ID handler":
			continue
		case "set-ID thread":
			if i+1 < len(order[first:]) && order[first+i+1] == "set-ID handler" {
				continue // the handler's child's confinement
			}
		}
		if len(rawSteps) == 0 || rawSteps[len(rawSteps)-1] != name {
			rawSteps = append(rawSteps, name)
		}
	}
	// the fork's own ops, after the process stage's, are under its first step (startPlan)
	if n := len(rawSteps); n > 0 && rawSteps[n-1] == "signal mask" {
		rawSteps = rawSteps[:n-1]
	}
	if spec.Linux.Filter.Notifies() && (!slices.Contains(goSteps, "set-ID procfs") || !slices.Contains(goSteps, "set-ID thread")) {
		t.Errorf("the Go init's steps for a filter that notifies lack the set-ID ones: %q", goSteps)
	}
	if !slices.Equal(goSteps, rawSteps) {
		t.Errorf("steps differ:\nGo init:  %q\nraw plan: %q", goSteps, rawSteps)
	}
	if want := []string{"wait for the id maps", "setsid", "ambient capabilities"}; !slices.Equal(order[:first], want) {
		t.Errorf("the clone child's steps %q, want %q", order[:first], want)
	}
}

// BenchmarkRawPlan is the launcher's cost of compiling the agent policy's raw init (no
// kernel call but the arena's mmap and the sources' fstat).
func BenchmarkRawPlan(b *testing.B) {
	ws := b.TempDir()
	spec, err := rawRootConfig(ws)
	if err != nil {
		b.Fatal(err)
	}
	spec.RootID, spec.Linux.Filter = nil, nil
	null, err := mounts.OpenNull("/dev/null")
	if err != nil {
		b.Fatal(err)
	}
	defer null.Close()
	for range b.N {
		p, err := rawplan.New(rawArenaSize(spec), rawOps)
		if err != nil {
			b.Fatal(err)
		}
		fds := &rawFds{null: null, mapsR: 20, mapsW: 21, holderSend: 22, holderRecv: 23, holderExe: 24, holderRepR: 25, holderRepW: 26, life: 27}
		for range mountsBindCount(spec) {
			fds.sources = append(fds.sources, 0) // stdin: fstat succeeds
		}
		built, err := planRawBuild(p, spec, fds)
		if err == nil {
			_, err = planRawStart(p, spec, built, rawStartFds{sync: 28, stageRepR: 29, stageRepW: 30, life: 27})
		}
		if err != nil {
			b.Fatal(err)
		}
		p.Free()
	}
}

func mountsBindCount(spec *config.Config) int {
	n := 0
	for _, m := range spec.Mounts {
		if m.Type == "bind" {
			n++
		}
	}
	return n
}
