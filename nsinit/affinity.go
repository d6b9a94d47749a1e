package nsinit

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// A CPU limit (spec.Linux.Resources.CPU: quota over period, --cpus N) is a cgroup
// quota over all of the caller's CPUs, which programs that count CPUs do not see:
// coreutils' nproc and glibc's sysconf(_SC_NPROCESSORS_ONLN) users count the affinity
// mask, and Go's runtime sizes GOMAXPROCS from the mask and never lowers it below 2
// from a quota. So the sandbox also runs on ceil(N) CPUs of the caller's own mask
// (sched_setaffinity(2) on the thread the init is cloned from: the init, its threads,
// and every process of the sandbox inherit it), the quota still limiting the time.
// The CPUs are chosen from the caller's mask only, never widening it, starting at an
// offset drawn from the sandbox id so that concurrent sandboxes spread over the CPUs.
// The mask is a placement, not a limit: a command may change its own mask within its
// cpuset, and the quota is what holds. docs/decisions.md, "--cpus: a quota and a
// placement".

// sandboxCPUs returns the CPUs the sandbox of spec, whose id is id, is to run on, and
// their list ("0", "1,3"), or nil and "" when spec has no CPU limit or the limit
// covers the caller's whole mask. Errors come from sched_getaffinity(2).
func sandboxCPUs(spec *config.Config, id string) (*unix.CPUSet, string, error) {
	n := cpuCount(spec)
	if n == 0 {
		return nil, "", nil
	}
	var own unix.CPUSet
	if err := unix.SchedGetaffinity(0, &own); err != nil {
		return nil, "", fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for i := 0; i < len(own)*64; i++ {
		if own.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	pick := pickCPUs(cpus, n, id)
	if pick == nil {
		return nil, "", nil
	}
	var set unix.CPUSet
	names := make([]string, len(pick))
	for i, c := range pick {
		set.Set(c)
		names[i] = strconv.Itoa(c)
	}
	return &set, strings.Join(names, ","), nil
}

// pickCPUs chooses n of the CPUs own (ascending), starting at an offset drawn from
// the sandbox id (hex) and wrapping around; it returns them in ascending order, or nil
// when n covers them all.
func pickCPUs(own []int, n int, id string) []int {
	if n >= len(own) {
		return nil
	}
	start := 0
	if v, err := strconv.ParseUint(id, 16, 64); err == nil {
		start = int(v % uint64(len(own)))
	}
	pick := make([]int, 0, n)
	for i := range n {
		pick = append(pick, own[(start+i)%len(own)])
	}
	slices.Sort(pick)
	return pick
}

// cpuCount is ceil(quota/period) of spec's CPU limit, 0 without one.
func cpuCount(spec *config.Config) int {
	if spec.Linux == nil || spec.Linux.Resources == nil || spec.Linux.Resources.CPU == nil {
		return 0
	}
	c := spec.Linux.Resources.CPU
	if c.Quota == nil || c.Period == nil || *c.Quota <= 0 || *c.Period == 0 {
		return 0
	}
	return int(math.Ceil(float64(*c.Quota) / float64(*c.Period)))
}

// pinThread locks the calling goroutine to its thread and sets the thread's CPU
// affinity to cpus, so that a process cloned from it starts with that mask; restore
// sets the thread's mask back and unlocks it (should that fail, the thread stays
// locked and ends with its goroutine). With nil cpus it does nothing.
func pinThread(cpus *unix.CPUSet) (restore func(), err error) {
	if cpus == nil {
		return func() {}, nil
	}
	runtime.LockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	if err := unix.SchedSetaffinity(0, cpus); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("sched_setaffinity: %w", err)
	}
	return func() {
		if unix.SchedSetaffinity(0, &was) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}
