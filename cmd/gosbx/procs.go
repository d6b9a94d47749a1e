package main

import (
	"runtime"

	"github.com/gosbx/gosbx/nsinit/config"
)

// oneProc sets GOMAXPROCS to 1 for the commands cobra runs (gosbx exec's one-shot
// launch, the session and job commands, doctor) and returns the setting it replaced.
// Up to Start a launch's goroutines run in turn (each waits for the other: the policy
// step, the clone, the placement, the init's reports), so a second P buys no overlap,
// only the scheduler's work around it: each goroutine started or readied wakes an idle
// thread for the idle P (futex and context switch), which spins, steals (runqgrab's
// usleep) and parks again. The raw init and the sandbox are processes of their own,
// unaffected. Not for exec --session's client (run's fast path), whose call was 0.15
// ms slower so. See docs/decisions.md "Speed, ninth attempt: the launcher's
// scheduler".
func oneProc() (prev int) { return runtime.GOMAXPROCS(1) }

// startProcs is the GOMAXPROCS setting the runtime chose at start, before oneProc.
var startProcs int

// servesNetwork reports whether the launcher serves the sandbox's network while the
// command runs (the egress proxy, published ports, host ports: nsinit's startNet), whose
// goroutines should have the CPUs the runtime would give them.
func servesNetwork(spec *config.Config) bool {
	return spec.Egress != nil || len(spec.Publish) > 0 || len(spec.HostPorts) > 0
}
