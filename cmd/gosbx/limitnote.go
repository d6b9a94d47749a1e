package main

import (
	"fmt"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
)

// limitNote is the stderr line for a limit the sandbox hit, as the status line's
// limit-hit says (cgroup memory.oom_control / memory.events, pids.events): what a
// caller without --status-fd would otherwise only infer from a 137 or a failed fork.
// "" when no limit was hit (or, under RLIMIT_NPROC alone, a hit is not known).
func limitNote(spec *config.Config, r *nsinit.Result) string {
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
			return "gosbx: killed by the memory limit" + limit + ": raise it with --memory"
		}
		return "gosbx: the memory limit" + limit + " killed a process of the sandbox (the OOM killer): raise it with --memory"
	case "pids":
		limit := ""
		if res != nil && res.Pids != nil && res.Pids.Limit != nil {
			limit = fmt.Sprintf(" (%d)", *res.Pids.Limit)
		}
		return "gosbx: the pids limit" + limit + " refused a fork: raise it with --pids"
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
