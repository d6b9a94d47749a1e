package nsinit

import (
	"errors"
	"sync/atomic"
)

// rawAllowed and rawTaken: the raw init is this process's to use (AllowRawInit), and
// a launch has taken it; rawLive: that raw init has not been reaped yet.
var rawAllowed, rawTaken, rawLive atomic.Bool

// AllowRawInit lets the next one-shot launch of this process, and only that one, be
// set up by the raw init (the launcher's CLONE_VM child running a plan of raw system
// calls, docs/decisions.md "the raw init") when its config and the build allow it
// (not in a -tags gosbxgoinit build, where this changes nothing); every other
// launch takes the Go init. For a program that launches one sandbox and
// exits, as gosbx exec does: the raw init shares the caller's memory, and
// PR_SET_DUMPABLE (prctl(2)) belongs to that memory, so from the raw init's "set not
// dumpable" step on the calling process is not dumpable either, for good (its
// /proc/PID files become root's and the clone children of its other launches cannot
// have their id maps written) until the raw init is reaped, when it is made dumpable
// again (as it was before the launch: a change the program makes meanwhile is undone).
// A launch that starts while it runs fails at "clone", saying so. A program that
// launches sandboxes concurrently must not call it.
func AllowRawInit() { rawAllowed.Store(true) }

// takeRaw reports whether this launch may take the raw init, and if so marks it
// taken: the first launch after AllowRawInit, one per process.
func takeRaw() bool {
	return rawAllowed.Load() && rawTaken.CompareAndSwap(false, true)
}

// errRawLive is a launch's error while this process's raw init runs: its memory is not
// dumpable, so a new init's id maps could not be written.
var errRawLive = errors.New("this process's raw init is running (nsinit.AllowRawInit: one launch at a time, the memory it shares is not dumpable until it ends)")
