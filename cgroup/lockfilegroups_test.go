package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLockFileGroups lists each group once, under either of its lock file's names,
// from a directory that takes several getdents64 calls, with a handful of allocations
// however many entries there are (a string per entry was ~110 KiB an idle session's
// supervisor kept: docs/decisions.md, "Memory: idle sessions").
func TestLockFileGroups(t *testing.T) {
	dir := t.TempDir()
	for i := range 1500 {
		mk(t, filepath.Join(dir, fmt.Sprintf("swept.%032x", i)))
	}
	for _, n := range []string{"gosbx-a", "record.gosbx-a", "record.gosbx-b", "gosbx-c", "other", "record.other", "xgosbx-d"} {
		mk(t, filepath.Join(dir, n))
	}
	if err := os.Mkdir(filepath.Join(dir, "gosbx-e"), 0o700); err != nil {
		t.Fatal(err)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	for range 2 { // the second from the offset the first left: read from the start again
		got, err := lockFileGroups(dfd)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{"gosbx-a", "gosbx-b", "gosbx-c", "gosbx-e"}; !slices.Equal(got, want) {
			t.Fatalf("lockFileGroups = %q, want %q", got, want)
		}
	}
	// past listedMax groups: each still once
	for i := range 3 * listedMax {
		mk(t, filepath.Join(dir, fmt.Sprintf("gosbx-%03d", i)))
		mk(t, filepath.Join(dir, fmt.Sprintf("record.gosbx-%03d", i)))
	}
	many, err := lockFileGroups(dfd)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(many)
	if len(many) != 4+3*listedMax || len(slices.Compact(slices.Clone(many))) != len(many) {
		t.Fatalf("lockFileGroups of %d groups under two names each: %d names, %q", 4+3*listedMax, len(many), many)
	}
	for _, n := range []string{"gosbx-000", "record.gosbx-000"} {
		os.Remove(filepath.Join(dir, n))
	}
	allocs := testing.AllocsPerRun(5, func() { lockFileGroups(dfd) })
	// one a group's name, not one an entry: 1,500 markers cost none
	if groups := 3 + 3*listedMax - 1; allocs > float64(groups+24) {
		t.Errorf("lockFileGroups of 1,500 markers and %d groups: %.0f allocations, want ≤ %d (one buffer, a string a group, their slice and map)", groups, allocs, groups+24)
	}
}

func mk(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
