// Package oneproc sets the Go runtime to one P (GOMAXPROCS 1) while the packages are
// initialized, before any package that allocates: gosbx's processes are one-shot
// launchers and clients, whose goroutines run in turn, and a second P only wakes
// threads for itself. Lowered later (as gosbx exec did, from execute), the
// runtime.GOMAXPROCS call stopped the world and destroyed the second P, whose cached
// spans of the package inits' allocations went back to their size classes' span sets:
// ~50 fresh span-set blocks, page faults and TLB-flush IPIs a launch
// (docs/decisions.md "Speed, tenth attempt: the launcher's page faults"). Here the
// second P has cached nothing yet, so giving it up costs ~15 µs.
//
// Only the gosbx command imports it. The init is this package's whole work, which
// STYLE.md's "no package init work" otherwise forbids: the setting must be made before
// the other packages' inits run, and a package that imports only runtime is
// initialized right after runtime (the Go spec's initialization order: of the packages
// whose imports are initialized, the one first by import path;
// TestOneProcInitFirst checks no package that allocates comes before it).
package oneproc

import "runtime"

// replaced is the GOMAXPROCS setting the init replaced: the runtime's default (the
// CPUs of the affinity mask, the cgroup's CPU limit) or $GOMAXPROCS.
var replaced = runtime.GOMAXPROCS(1)

// Replaced returns the GOMAXPROCS setting in force before this package's init set 1,
// for a caller that runs goroutines in parallel (a launcher serving a sandbox's
// network) to restore with runtime.GOMAXPROCS.
func Replaced() int { return replaced }
