package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/gostart"
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

// sysmonSlack is the timer slack slowSysmon gives sysmon, in ns (timerslack_ns).
const sysmonSlack = "1000000"

// slowSysmon raises the timer slack (proc(5), /proc/PID/timerslack_ns) of the runtime's
// sysmon thread from the default 50 µs to 1 ms. While any P runs, sysmon sleeps 20 µs
// at a time (~70 µs with the slack) and each wake-up is a timer, a context switch
// away from the launcher's thread on its CPU and one back; with one P, that was 40 a
// launch, 16 with the slack. Sysmon also retakes a P from a thread blocked in a system
// call and preempts a goroutine that ran 10 ms: at most ~1 ms later now, which a
// launcher that waits in the poller does not feel. Sysmon is the first thread
// runtime.main starts, before any package init, so the lowest thread id other than the
// main thread's (pid) is its own unless thread ids wrapped in between; then another
// idle runtime thread gets the slack and sysmon keeps its own: only the saving is
// lost. Writing another thread's slack needs CAP_SYS_NICE: a caller other than root
// keeps the default (EPERM, ignored: a scheduling hint, no isolation step).
func slowSysmon() {
	if os.Geteuid() != 0 {
		return // no CAP_SYS_NICE: spare the system calls
	}
	// Thread ids count up from the pid: when the id after it is a thread of this
	// process, it is the lowest after the main thread's, without listing task/ (an
	// os.File, its entries and their sort: 0.07 ms a launch).
	if ownThreadSlack(os.Getpid()+1, sysmonSlack) == nil {
		return
	}
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return
	}
	pid, sysmon := os.Getpid(), 0
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid && (sysmon == 0 || tid < sysmon) {
			sysmon = tid
		}
	}
	if sysmon == 0 {
		return
	}
	ownThreadSlack(sysmon, sysmonSlack)
}

// ownThreadSlack writes slack (ns, decimal) to the timerslack_ns of thread tid of this
// process (proc(5)). The kernel has that file in /proc/TID only, not in
// /proc/self/task/TID, and tid may have exited since it was listed and its id gone to
// another process's thread: /proc/TID is opened once (O_PATH: the descriptor stays
// with that thread, whatever takes the id later), and written only when its task/
// directory holds this process's pid (proc(5): a thread's task/ lists its own thread
// group). Errors: the open's (ENOENT: gone), ESRCH for another process's thread, the
// write's (EPERM without CAP_SYS_NICE).
func ownThreadSlack(tid int, slack string) error {
	dir, err := unix.Open("/proc/"+strconv.Itoa(tid), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /proc/%d: %w", tid, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, "task/"+strconv.Itoa(os.Getpid()), &st, 0); err != nil {
		return fmt.Errorf("thread %d is not one of process %d's: %w", tid, os.Getpid(), unix.ESRCH)
	}
	fd, err := unix.Openat(dir, "timerslack_ns", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /proc/%d/timerslack_ns: %w", tid, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte(slack)); err != nil {
		return fmt.Errorf("write /proc/%d/timerslack_ns: %w", tid, err)
	}
	return nil
}

// servesNetwork reports whether the launcher serves the sandbox's network while the
// command runs (the egress proxy, published ports, host ports: nsinit's startNet), whose
// goroutines should have the CPUs the runtime would give them.
func servesNetwork(spec *config.Config) bool {
	return spec.Egress != nil || len(spec.Publish) > 0 || len(spec.HostPorts) > 0
}
