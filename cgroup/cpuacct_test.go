package cgroup

import (
	"os"
	"path/filepath"
	"testing"
)

// The CPU time of a v1 group is read in nanoseconds (cpuacct.usage_user and
// usage_sys) and given in microseconds, not in cpuacct.stat's 10 ms ticks (a short
// command read 0: trial finding); cpuacct.stat is read where those files are absent.
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
	write("cpuacct.usage_user", "1234567\n")
	write("cpuacct.usage_sys", "890123\n")
	if u, s := cpuacctUsage(dir); u != 1234 || s != 890 {
		t.Errorf("from cpuacct.usage_user and usage_sys: %d, %d µs; want 1234, 890", u, s)
	}
}
