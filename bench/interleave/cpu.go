package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// result is one run: its wall time from fork to reaping, the CPU time (user + system) of
// the command with the children it waited for (what hyperfine's user and system count), and
// with the processes it left behind, all in ms.
type result struct {
	wallMs, launcherCPUMs, cpuMs float64
}

// run starts argv (stdio /dev/null), times it until it is reaped, and with cpu also reaps
// the processes it left behind, which must have been reparented to this process (a child
// subreaper), adding their CPU time. The error is the command's failure or wait4's.
func run(argv []string, cpu bool) (result, error) {
	c := exec.Command(argv[0], argv[1:]...)
	t := time.Now()
	err := c.Run()
	d := time.Since(t)
	if err != nil {
		return result{}, err
	}
	res := result{wallMs: float64(d.Microseconds()) / 1000}
	if !cpu {
		return res, nil
	}
	user, sys := rusageMs(c.ProcessState.SysUsage().(*syscall.Rusage))
	res.launcherCPUMs = user + sys
	ou, osy, err := reapOrphans()
	if err != nil {
		return res, err
	}
	res.cpuMs = res.launcherCPUMs + ou + osy
	return res, nil
}

// rusageMs is the user and system time of ru, in ms.
func rusageMs(ru *syscall.Rusage) (user, sys float64) {
	return float64(ru.Utime.Nano()) / 1e6, float64(ru.Stime.Nano()) / 1e6
}

// reapOrphans waits (wait4(2)) for every child left, the processes a run's command left
// behind and the kernel reparented to this subreaper, until ECHILD, and returns the sum of
// their user and system time, in ms.
func reapOrphans() (user, sys float64, err error) {
	for {
		var ws unix.WaitStatus
		var ru unix.Rusage
		_, err := unix.Wait4(-1, &ws, 0, &ru)
		switch err {
		case nil:
			user += float64(ru.Utime.Nano()) / 1e6
			sys += float64(ru.Stime.Nano()) / 1e6
		case unix.EINTR:
		case unix.ECHILD:
			return user, sys, nil
		default:
			return user, sys, fmt.Errorf("wait4 for the run's orphans: %w", err)
		}
	}
}
