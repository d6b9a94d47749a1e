package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

// The CPU time of a v1 group is cpuacct.usage (ns) in microseconds, split between user
// and system in the ratio of the tick counts usage_user and usage_sys, not
// cpuacct.stat's 10 ms ticks (a short command read 0: trial finding); cpuacct.stat is
// read where cpuacct.usage is absent.
func TestCpuacctUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cpuacct.stat", "user 3\nsystem 1\n")
	if u, s := cpuacctUsage(dir); u != 30000 || s != 10000 {
		t.Errorf("from cpuacct.stat alone: %d, %d µs; want 30000, 10000", u, s)
	}
	write("cpuacct.usage", "1234567\n")
	write("cpuacct.usage_user", "0\n")
	write("cpuacct.usage_sys", "0\n")
	if u, s := cpuacctUsage(dir); u != 1234 || s != 0 {
		t.Errorf("no tick counted: %d, %d µs; want 1234, 0 (all to user, as cputime_adjust)", u, s)
	}
	write("cpuacct.usage_user", "0\n")
	write("cpuacct.usage_sys", "4000000\n")
	if u, s := cpuacctUsage(dir); u != 0 || s != 1234 {
		t.Errorf("system ticks only: %d, %d µs; want 0, 1234", u, s)
	}
	write("cpuacct.usage_user", "12000000\n")
	if u, s := cpuacctUsage(dir); u != 925 || s != 1234-925 {
		t.Errorf("3:1 ticks: %d, %d µs; want 925, %d", u, s, 1234-925)
	}
}
