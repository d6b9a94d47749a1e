package main

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
)

// limitNote is the stderr line for a limit the sandbox hit, as the status line's
// limit-hit says (cgroup memory.oom_control / memory.events, pids.events): what a
// caller without --status-fd would otherwise only infer from a 137 or a failed fork.
// "" when no limit was hit (or, under RLIMIT_NPROC alone, a hit is not known). For a
// command of a session (session true) the limits are the session's, shared by its
// commands, and set when it starts.
func limitNote(spec *config.Config, r *nsinit.Result, session bool) string {
	the, fix := "the ", ""
	if session {
		the, fix = "the session's ", " on session start"
	}
	var res *specs.LinuxResources
	if spec.Linux != nil {
		res = spec.Linux.Resources
	}
	switch r.LimitHit {
	case "memory":
		limit := ""
		if res != nil && res.Memory != nil && res.Memory.Limit != nil {
			limit = " (" + limitSize(*res.Memory.Limit) + ")"
		}
		if r.ExitCode == 128+int(syscall.SIGKILL) {
			return "gosbx: killed by " + the + "memory limit" + limit + ": raise it with --memory" + fix
		}
		return "gosbx: " + the + "memory limit" + limit + " killed a process of the sandbox (the OOM killer): raise it with --memory" + fix
	case "pids":
		limit := ""
		if res != nil && res.Pids != nil && res.Pids.Limit != nil {
			limit = fmt.Sprintf(" (%d)", *res.Pids.Limit)
		}
		return "gosbx: " + the + "pids limit" + limit + " refused a fork: raise it with --pids" + fix
	}
	return ""
}

// limitSize is n bytes as --memory takes it: "64M", "1G", else bytes.
func limitSize(n int64) string {
	for _, u := range []struct {
		shift uint
		unit  string
	}{{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}} {
		if n > 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// cpusNote is the warning for a CPU limit above the CPUs the caller may run on (its
// affinity mask, sched_getaffinity(2)): the quota is applied, but the sandbox has no
// more CPUs than the caller (nproc says the mask's count). "" otherwise.
func cpusNote(spec *config.Config) string {
	if spec.Linux == nil || spec.Linux.Resources == nil || spec.Linux.Resources.CPU == nil {
		return ""
	}
	c := spec.Linux.Resources.CPU
	if c.Quota == nil || c.Period == nil || *c.Period == 0 || *c.Quota <= 0 {
		return ""
	}
	var own unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		return ""
	}
	return cpusNoteFor(float64(*c.Quota)/float64(*c.Period), own.Count())
}

func cpusNoteFor(cpus float64, have int) string {
	if have <= 0 || cpus <= float64(have) {
		return ""
	}
	return fmt.Sprintf("gosbx: warning: --cpus %v is more than the %d CPUs you may run on: the sandbox runs on those %d", cpus, have, have)
}
