package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The group's files are written and read here directly, as containerd/cgroups' cgroup1
// and cgroup2 packages write them for the fields gosbx applies: those packages also
// link protobuf (their stats types), cilium/ebpf (device filters) and godbus (systemd),
// whose package inits every start of gosbx and of its init stage paid
// (docs/decisions.md, "Start path (issue 20)"). The root package
// github.com/containerd/cgroups/v3 (mode detection, /proc/self/cgroup) stays.

// writeFile writes one value to a cgroup control file; errors name the file.
func writeFile(dir, file, value string) error {
	p := filepath.Join(dir, file)
	for {
		err := os.WriteFile(p, []byte(value), 0o644)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write %q to %s: %w", value, p, err)
		}
		return nil
	}
}

// readInt reads a control file holding one number; 0 when it cannot.
func readInt(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// procs lists the pids in dir's cgroup.procs; none when the file is missing.
func procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// removeWithin removes a group's directory (a plain rmdir on a cgroup file system; a
// test's stand-in directory goes with its files). Right after its last process has
// been reaped a group can still be busy for a moment: EBUSY is retried from 100 µs,
// doubling up to 10 ms, until d has passed.
func removeWithin(dir string, d time.Duration) error {
	delay := 100 * time.Microsecond
	deadline := time.Now().Add(d)
	for {
		err := syscall.Rmdir(dir)
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			err = os.RemoveAll(dir) // not a cgroup file system (tests)
		}
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(delay)
		if delay < 10*time.Millisecond {
			delay *= 2
		}
	}
}
