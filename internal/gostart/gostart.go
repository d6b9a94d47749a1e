// Package gostart sets up the Go runtime of gosbx's processes while the packages are
// initialized, before any package that allocates: one P (GOMAXPROCS 1) and the main
// goroutine's stack grown once to what a launch reaches
// (docs/decisions.md "Speed, tenth attempt: the launcher's page faults").
//
// gosbx's processes are one-shot launchers and clients, whose goroutines run in turn:
// a second P only wakes threads for itself. Lowered later (as gosbx exec did, from
// execute), the runtime.GOMAXPROCS call stopped the world and destroyed the second P,
// whose cached spans of the package inits' allocations went back to their size
// classes' span sets: ~50 fresh span-set blocks, page faults and TLB flushes a launch.
// Here the second P has cached nothing yet, so giving it up costs ~15 µs.
//
// Only the gosbx command imports it. The init is this package's whole work, which
// STYLE.md's "no package init work" otherwise forbids: it must happen before the other
// packages' inits run, and a package that imports only runtime is initialized right
// after runtime (the Go spec's initialization order: of the packages whose imports are
// initialized, the one first by import path; TestGoStartInitFirst checks that no
// package that allocates comes before it).
package gostart

import "runtime"

// replaced is the GOMAXPROCS setting the init replaced: the runtime's default (the
// CPUs of the affinity mask, the cgroup's CPU limit) or $GOMAXPROCS.
var replaced = start()

func start() int {
	GrowStack()
	return runtime.GOMAXPROCS(1)
}

// Replaced returns the GOMAXPROCS setting in force before this package's init set 1,
// for a caller that runs goroutines in parallel (a launcher serving a sandbox's
// network) to restore with runtime.GOMAXPROCS.
func Replaced() int { return replaced }
