package nsinit

import (
	"reflect"
	"testing"
)

// pickCPUs takes ceil(--cpus) of the caller's CPUs, never one outside them, and
// spreads sandboxes by their id.
func TestPickCPUs(t *testing.T) {
	own := []int{1, 3, 4, 7}
	for _, tc := range []struct {
		n    int
		id   string
		want []int
	}{
		{1, "a000000000000000", []int{1}},       // offset 0
		{1, "a000000000000001", []int{3}},       // offset 1
		{2, "a000000000000003", []int{1, 7}},    // wraps around
		{3, "a000000000000002", []int{1, 4, 7}}, // ascending
		{4, "a000000000000002", nil},            // the whole mask: not narrowed
		{9, "a000000000000002", nil},            // never widened
	} {
		if got := pickCPUs(own, tc.n, tc.id); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("pickCPUs(%v, %d, %s) = %v, want %v", own, tc.n, tc.id, got, tc.want)
		}
	}
	seen := map[int]bool{}
	for _, id := range []string{"a000000000000000", "a000000000000001", "a000000000000002", "a000000000000003"} {
		seen[pickCPUs(own, 1, id)[0]] = true
	}
	if len(seen) != len(own) {
		t.Errorf("one-CPU sandboxes of four ids land on %d CPUs, want all %d", len(seen), len(own))
	}
}
