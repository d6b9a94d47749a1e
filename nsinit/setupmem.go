package nsinit

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// SetupMemory is about what a sandbox's own processes (the init and its Go runtime, the
// fork that becomes the command) need of a memory limit before the command runs:
// measured on Linux 6.18 as the cgroup's peak (memory.max_usage_in_bytes) of sandboxes
// running /bin/true, 0.25-1.3 MiB over 60 launches, with room to spare. The policy
// package refuses a smaller --memory up front.
const SetupMemory = 4 << 20

// setupOOM is the error of an init the sandbox's memory limit killed before the command
// started (the cgroup's OOM counter says so).
func setupOOM(spec *config.Config, ws unix.WaitStatus) error {
	limit := "its memory limit"
	if r := spec.Linux.Resources; r != nil && r.Memory != nil && r.Memory.Limit != nil {
		limit = fmt.Sprintf("its memory limit (%d bytes)", *r.Memory.Limit)
	}
	return fmt.Errorf("the sandbox's own init was killed by %s during setup (%s): the limit is below what the sandbox "+
		"itself needs, about %d MiB before the command's own memory; raise it", limit, describe(ws), SetupMemory>>20)
}
