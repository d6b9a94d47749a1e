package policy

import (
	"fmt"
	"math"
	"strings"

	"github.com/gosbx/gosbx/nsinit/config"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Resources are limits on what the sandbox may use. Limits named in a policy file or by
// a flag are required: if one cannot be applied the sandbox is not built (exit 125),
// unless Limits is "best-effort". A built-in profile's own defaults apply wherever the
// host allows, and the result says which did.
type Resources struct {
	// Memory caps RAM, tmpfs pages included ("512M", "2G", bytes; binary units).
	Memory string `json:"memory,omitempty"`
	// MemorySwap is swap allowed beyond Memory ("0", the default: none; "-1": any).
	MemorySwap string `json:"memory_swap,omitempty"`
	// Pids caps the number of processes and threads.
	Pids int64 `json:"pids,omitempty"`
	// CPUs caps CPU time, in cores (0.5 is half of one core), and places the sandbox on
	// ceil(CPUs) of the caller's own CPUs (its affinity mask, which nproc and Go's
	// GOMAXPROCS count).
	CPUs float64 `json:"cpus,omitempty"`
	// NoFile caps open file descriptors (RLIMIT_NOFILE).
	NoFile uint64 `json:"nofile,omitempty"`
	// FSize caps the size of a file the command writes (RLIMIT_FSIZE; "1G").
	FSize string `json:"fsize,omitempty"`
	// Limits is "required" (the default) or "best-effort": run without the cgroup limits
	// that cannot be applied, and say so.
	Limits string `json:"limits,omitempty"`
	// CgroupParent is a cgroup v2 group (relative to /sys/fs/cgroup) the sandbox's group
	// is made in, such as a subtree delegated to the caller.
	CgroupParent string `json:"cgroup_parent,omitempty"`
}

func (r *Resources) validate(field string) error {
	if r == nil {
		return nil
	}
	bad := func(f, format string, a ...any) error {
		return &FileError{Field: field + "." + f, Reason: fmt.Sprintf(format, a...)}
	}
	if m, err := sizeOf(r.Memory, false); err != nil {
		return bad("memory", "%v", err)
	} else if err := checkMinMemory(r.Memory, m); err != nil {
		return bad("memory", "%v", err)
	}
	if _, err := sizeOf(r.MemorySwap, true); err != nil {
		return bad("memory_swap", "%v", err)
	}
	if _, err := sizeOf(r.FSize, false); err != nil {
		return bad("fsize", "%v", err)
	}
	if r.Pids < 0 {
		return bad("pids", "%d: want a positive number", r.Pids)
	}
	if err := checkMinPids(r.Pids); err != nil {
		return bad("pids", "%v", err)
	}
	if r.CPUs < 0 || math.IsNaN(r.CPUs) || math.IsInf(r.CPUs, 0) || (r.CPUs > 0 && r.CPUs < 0.01) {
		return bad("cpus", "%v: want a number of cores, at least 0.01", r.CPUs)
	}
	switch r.Limits {
	case "", "required", "best-effort":
	default:
		return bad("limits", "%q: want required or best-effort", r.Limits)
	}
	if strings.Contains(r.CgroupParent, "..") {
		return bad("cgroup_parent", "%q: no .. components", r.CgroupParent)
	}
	return nil
}

// CPUPlacement says what a CPU limit does besides its quota, for `policy show`: ""
// without one. The CPUs themselves are chosen at launch (nsinit, affinity.go), from
// the launching process's own affinity mask.
func (r *Resources) CPUPlacement() string {
	if r == nil || r.CPUs <= 0 {
		return ""
	}
	n := int(math.Ceil(r.CPUs))
	return fmt.Sprintf("cpus %v: a CPU time quota of %v cores, and the sandbox placed on %d of the caller's CPUs "+
		"(its affinity mask, which nproc and GOMAXPROCS count; the exit status line's cpus names them)", r.CPUs, r.CPUs, n)
}

// MinMemory is the smallest memory limit a sandbox is built with: what its own init
// needs before the command runs (nsinit.SetupMemory, measured there). Below it the init
// was OOM-killed during setup, which read as "the init stage died during setup".
const MinMemory = 4 << 20

// checkMinMemory refuses a memory limit (given as s, n bytes) below MinMemory.
func checkMinMemory(s string, n int64) error {
	if n > 0 && n < MinMemory {
		return fmt.Errorf("%s is below what the sandbox itself needs: its init uses up to about 1.3 MiB before the "+
			"command starts (measured peak); ask for at least %dM, plus what the command needs", s, MinMemory>>20)
	}
	return nil
}

// MinPids is the smallest pids limit a sandbox is built with: the tasks its own setup
// needs before the command's (nsinit.SetupPids, measured there). Below it the init's
// Go runtime crashed, or a fork failed, during setup.
const MinPids = 16

// checkMinPids refuses a pids limit n below MinPids.
func checkMinPids(n int64) error {
	if n > 0 && n < MinPids {
		return fmt.Errorf("%d is below what the sandbox itself needs: its init's threads, pid 1 of the commands and "+
			"the command's first process count against it (measured peak 8-12 for /bin/true); ask for at least %d, "+
			"plus what the command needs", n, MinPids)
	}
	return nil
}

// sizeOf reads a size with binary units ("512M", "2G", "1048576"); "" is 0; with
// allowAny, "-1" means unlimited (-1).
func sizeOf(s string, allowAny bool) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if allowAny && s == "-1" {
		return -1, nil
	}
	n, err := parseSize(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a size such as 512M or 2G", s)
	}
	return n, nil
}

// mergeResources lays the set fields of over on base.
func mergeResources(base, over *Resources) *Resources {
	if base == nil && over == nil {
		return nil
	}
	r := Resources{}
	if base != nil {
		r = *base
	}
	if over == nil {
		return &r
	}
	o := *over
	if o.Memory != "" {
		r.Memory = o.Memory
	}
	if o.MemorySwap != "" {
		r.MemorySwap = o.MemorySwap
	}
	if o.Pids != 0 {
		r.Pids = o.Pids
	}
	if o.CPUs != 0 {
		r.CPUs = o.CPUs
	}
	if o.NoFile != 0 {
		r.NoFile = o.NoFile
	}
	if o.FSize != "" {
		r.FSize = o.FSize
	}
	if o.Limits != "" {
		r.Limits = o.Limits
	}
	if o.CgroupParent != "" {
		r.CgroupParent = o.CgroupParent
	}
	return &r
}

// cpuPeriod is the CFS period the --cpus quota is given in (100 ms, microseconds).
const cpuPeriod = 100000

// limits compiles required (from the policy file and flags) over defaults (the
// profile's) into runtime-spec resources, rlimits and which limits are required.
func limits(required, defaults *Resources) (*specs.LinuxResources, []specs.POSIXRlimit, config.Limits, error) {
	all := mergeResources(defaults, required)
	rl := []specs.POSIXRlimit{{Type: "RLIMIT_CORE", Hard: 0, Soft: 0}}
	if all == nil {
		return nil, rl, config.Limits{}, nil
	}
	info := config.Limits{BestEffort: all.Limits == "best-effort", CgroupParent: all.CgroupParent}
	req := required
	if req == nil {
		req = &Resources{}
	}
	var res specs.LinuxResources
	any := false
	mem, _ := sizeOf(all.Memory, false)
	swap, _ := sizeOf(all.MemorySwap, true)
	if err := checkMinMemory(all.Memory, mem); err != nil {
		return nil, nil, config.Limits{}, errorf("memory", "", nil, "%v", err)
	}
	if mem > 0 {
		total := mem + swap // runtime-spec: memory+swap
		if swap < 0 {
			total = -1
		}
		res.Memory = &specs.LinuxMemory{Limit: &mem, Swap: &total}
		any = true
		if req.Memory != "" || req.MemorySwap != "" {
			info.Required = append(info.Required, "memory")
		}
	} else if req.MemorySwap != "" {
		return nil, nil, config.Limits{}, errorf("memory-swap", "", nil, "a swap limit needs a memory limit")
	}
	if err := checkMinPids(all.Pids); err != nil {
		return nil, nil, config.Limits{}, errorf("pids", "", nil, "%v", err)
	}
	if all.Pids > 0 {
		p := all.Pids
		res.Pids = &specs.LinuxPids{Limit: &p}
		any = true
		if req.Pids > 0 {
			info.Required = append(info.Required, "pids")
		}
	}
	if all.CPUs > 0 {
		quota, period := int64(math.Round(all.CPUs*cpuPeriod)), uint64(cpuPeriod)
		res.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		any = true
		if req.CPUs > 0 {
			info.Required = append(info.Required, "cpu")
		}
	}
	if all.NoFile > 0 {
		rl = append(rl, specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Hard: all.NoFile, Soft: all.NoFile})
	}
	if fs, _ := sizeOf(all.FSize, false); fs > 0 {
		rl = append(rl, specs.POSIXRlimit{Type: "RLIMIT_FSIZE", Hard: uint64(fs), Soft: uint64(fs)})
	}
	if !any {
		return nil, rl, config.Limits{}, nil
	}
	return &res, rl, info, nil
}
