package nsinit

import (
	"fmt"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
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
	// a caller other than root's config, and a root caller's: a host id (the trees, the
	// credentials set inside with setgroups allowed); each with a filter that allows and
	// one that notifies
	for _, mapped := range []bool{false, true} {
		for _, notify := range []bool{false, true} {
			spec := stageSpec()
			spec.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65534, Size: 1}}
			spec.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65534, Size: 1}}
			if notify {
				spec.Linux.Filter = seccomp.Program{{Code: 6, K: unix.SECCOMP_RET_USER_NOTIF}}
			}
			t.Run(fmt.Sprintf("mapped=%v notify=%v", mapped, notify), func(t *testing.T) { rawStepOrder(t, spec, mapped) })
		}
	}
}

func rawStepOrder(t *testing.T, spec *config.Config, mapped bool) {
	// the Go init's
	r := &recorder{spec: spec}
	s := &sandboxInit{sys: r, trees: mapped}
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
	// its clone child's (forkExecInit's plan for the SysProcAttr the launcher uses),
	// without those the raw child has no use for: it runs no Go handler and executes
	// nothing (its descriptors are moved by its first step, before these)
	sys := initSysAttr(spec, mapped, false, -1)
	ip, err := planInit(initArgs(false, false, mapped), nil, []uintptr{0, 1, 2}, sys, 10, 11, 12, 0)
	if err != nil {
		t.Fatal(err)
	}
	var goClone []string
	for _, op := range ip.ops {
		name := initSteps[op.step]
		switch name {
		case "block signals", "reset signal handlers", "restore the signal mask", "move descriptors", "execve /proc/self/exe":
			continue
		}
		if len(goClone) == 0 || goClone[len(goClone)-1] != name {
			goClone = append(goClone, name)
		}
	}

	// the raw plan's
	p, err := rawplan.New(1<<20, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	fds := &rawFds{mapsR: 20, mapsW: 21, holderSend: 22, holderRecv: 23, holderExe: 24, holderRepR: 25, holderRepW: 26, life: 27,
		trees: mapped, cred: sys.Credential, setgroups: mapped}
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
	// the Go init's build steps begin at its first after read config: pid namespace
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
	if !slices.Equal(order[:first], goClone) {
		t.Errorf("the clone child's steps %q, the Go init's clone %q", order[:first], goClone)
	}
	if want := slices.Contains(goClone, "setuid"); want != mapped {
		t.Errorf("mapped %v: the Go init's clone sets the credentials: %v", mapped, want)
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
