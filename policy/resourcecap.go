package policy

import (
	"fmt"
	"path"
	"strings"
)

// checkLower refuses a resource flag in over that raises (or lifts) the same limit set
// in base, the policy's resources (a policy file's, those it extends, a session's): a
// flag may only lower a limit the policy names, as --timeout may only shorten
// process.timeout. A built-in profile's defaults are not in base: they are defaults,
// which a flag replaces. The *Error names the flag and both values.
func checkLower(base *Resources, over Resources) error {
	if base == nil {
		return nil
	}
	higher := func(flag, asked, policy, field string) error {
		return errorf(flag, "", nil, "%s is more than the policy's %s (resources.%s): a flag may only lower it", asked, policy, field)
	}
	if over.Memory != "" && base.Memory != "" {
		if raisesSize(over.Memory, base.Memory) {
			return higher("memory", sizeShown(over.Memory), base.Memory, "memory")
		}
	}
	// swap: the policy's is none ("0") unless it says otherwise, wherever it has a
	// memory limit; "-1" is any
	if over.MemorySwap != "" && (base.Memory != "" || base.MemorySwap != "") {
		ps := base.MemorySwap
		if ps == "" {
			ps = "0"
		}
		a, _ := sizeOf(over.MemorySwap, true)
		p, _ := sizeOf(ps, true)
		if p >= 0 && (a < 0 || a > p) {
			return higher("memory-swap", over.MemorySwap, ps, "memory_swap")
		}
	}
	if over.Pids > 0 && base.Pids > 0 && over.Pids > base.Pids {
		return higher("pids", fmt.Sprint(over.Pids), fmt.Sprint(base.Pids), "pids")
	}
	if over.CPUs > 0 && base.CPUs > 0 && over.CPUs > base.CPUs {
		return higher("cpus", fmt.Sprint(over.CPUs), fmt.Sprint(base.CPUs), "cpus")
	}
	if over.NoFile > 0 && base.NoFile > 0 && over.NoFile > base.NoFile {
		return higher("nofile", fmt.Sprint(over.NoFile), fmt.Sprint(base.NoFile), "nofile")
	}
	if over.FSize != "" && base.FSize != "" {
		if raisesSize(over.FSize, base.FSize) {
			return higher("fsize", sizeShown(over.FSize), base.FSize, "fsize")
		}
	}
	// best-effort runs without a limit the host cannot apply: a weaker promise than
	// the policy's required limits
	if over.Limits == "best-effort" && base.Limits != "best-effort" && base.hasLimit() {
		return errorf("limits", "", nil, "best-effort is weaker than the policy's required limits (resources.limits): a flag may only keep them required")
	}
	// a group outside the policy's parent escapes the limits that parent sets
	if over.CgroupParent != "" && base.CgroupParent != "" {
		a, p := path.Clean("/"+over.CgroupParent), path.Clean("/"+base.CgroupParent)
		if a != p && !strings.HasPrefix(a, p+"/") {
			return errorf("cgroup-parent", "", nil, "%s is not under the policy's %s (resources.cgroup_parent): a flag may only choose a group inside it", over.CgroupParent, base.CgroupParent)
		}
	}
	return nil
}

// raisesSize says whether the size asked is more than the policy's, where a size of 0
// is no limit (resources.go applies only sizes > 0): 0 asked over a policy's limit lifts
// it, as an attack review found "--memory 0" did.
func raisesSize(asked, policy string) bool {
	a, _ := sizeOf(asked, false)
	p, _ := sizeOf(policy, false)
	if p == 0 {
		return false
	}
	return a == 0 || a > p
}

// sizeShown is s for a message, saying what a size of 0 means.
func sizeShown(s string) string {
	if n, _ := sizeOf(s, false); n == 0 {
		return s + " (no limit)"
	}
	return s
}

// hasLimit says whether r names any limit.
func (r *Resources) hasLimit() bool {
	return r.Memory != "" || r.MemorySwap != "" || r.Pids > 0 || r.CPUs > 0 || r.NoFile > 0 || r.FSize != ""
}
