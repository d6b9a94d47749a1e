package main

import (
	"os"
	"strconv"

	"github.com/gosbx/gosbx/internal/gostart"
	_ "github.com/gosbx/gosbx/internal/gostart/prefault"
	"github.com/gosbx/gosbx/internal/gostart/sysmon"
	"github.com/gosbx/gosbx/nsinit/config"
)

// launcherSched sets up the Go scheduler for gosbx exec's one-shot launch (execute): a
// 1 ms timer slack for the runtime's sysmon thread (slowSysmon), with the one P
// (GOMAXPROCS 1) internal/gostart set before the package inits. It returns the
// GOMAXPROCS setting gostart replaced, which execute restores when the launcher serves
// the sandbox's network. Up to Start a launch's goroutines run in turn (each waits for
// the other: the policy step, the clone, the placement, the init's reports), so a
// second P buys no overlap, only the scheduler's work around it: each goroutine started
// or readied wakes an idle thread for the idle P (futex and context switch), which
// spins, steals (runqgrab's usleep) and parks again. The raw init and the sandbox are
// processes of their own, unaffected. One P and the slack each alone saved no CPU a
// launch that could be measured; both together 0.5-0.8 ms of 7.5-8.5, and one P from
// the package inits on another 0.1-0.5 ms (docs/decisions.md "Speed, ninth attempt:
// the launcher's scheduler", "Speed, tenth attempt: the launcher's page faults").
func launcherSched() (prevProcs int) {
	slowSysmon()
	return gostart.Replaced()
}

// slowSysmon gives the runtime's sysmon thread a 1 ms timer slack (proc(5),
// /proc/TID/timerslack_ns) where internal/gostart/sysmon's init did not (the id after
// the pid taken by another task): a launcher's execute and a session's supervisor call it. While any
// P runs, sysmon sleeps 20 µs at a time (~70 µs with the default 50 µs slack) and each
// wake-up is a timer, a context switch away from the launcher's thread on its CPU and
// one back; with one P, that was 40 a launch, 16 with the slack from execute on.
// Sysmon also retakes a P from a thread blocked in a system call and preempts a
// goroutine that ran 10 ms: at most ~1 ms later now, which a launcher that waits in
// the poller does not feel. Sysmon is the first thread runtime.main starts, before any
// package init, so the lowest thread id other than the main thread's (pid) is its own
// unless thread ids wrapped in between; then another idle runtime thread gets the
// slack and sysmon keeps its own: only the saving is lost. Writing another thread's
// slack needs CAP_SYS_NICE: a caller other than root keeps the default (EPERM,
// ignored: a scheduling hint, no isolation step).
func slowSysmon() {
	if sysmon.Slowed() || os.Geteuid() != 0 {
		return // done at init, or no CAP_SYS_NICE: spare the system calls
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	pid, tid := os.Getpid(), 0
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil && t != pid && (tid == 0 || t < tid) {
			tid = t
		}
	}
	if tid == 0 {
		return
	}
	sysmon.OwnThreadSlack(tid, sysmon.Slack)
}

// servesNetwork reports whether the launcher serves the sandbox's network while the
// command runs (the egress proxy, published ports, host ports: nsinit's startNet), whose
// goroutines should have the CPUs the runtime would give them.
func servesNetwork(spec *config.Config) bool {
	return spec.Egress != nil || len(spec.Publish) > 0 || len(spec.HostPorts) > 0
}
