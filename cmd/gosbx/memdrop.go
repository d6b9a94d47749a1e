package main

import (
	"os"
	"time"

	"github.com/gosbx/gosbx/internal/memtrim"
)

// dropAfter is how long a command runs before its launcher lets go of the pages of the
// gosbx binary that only the launcher maps (memtrim.FilePages.Drop): ~0.75 MiB for a
// root caller's launch, ~6.5 MiB for a launch whose raw init shares the launcher's
// memory (docs/decisions.md, "Memory, second pass"). A command that ends sooner pays
// only the open of /proc/self/pagemap; one that runs longer, the drop (~0.1 ms) and the
// minor faults of the launcher's exit path.
const dropAfter = 250 * time.Millisecond

// openPages opens the launcher's pagemap for dropPagesLater; nil when it cannot (a
// procfs without it), or when GOSBX_KEEP_PAGES=1 asks to keep the pages mapped (the
// bench's A/B).
func openPages() *memtrim.FilePages {
	if os.Getenv("GOSBX_KEEP_PAGES") == "1" {
		return nil
	}
	p, _ := memtrim.OpenFilePages()
	return p
}

// dropPagesLater drops p's pages once the command has run dropAfter; the func it
// returns cancels that, for a command that has ended.
func dropPagesLater(p *memtrim.FilePages) (stop func()) {
	if p == nil {
		return func() {}
	}
	t := time.AfterFunc(dropAfter, func() { p.Drop() })
	return func() { t.Stop() }
}
