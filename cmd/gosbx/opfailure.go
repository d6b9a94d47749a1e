package main

import "github.com/gosbx/gosbx/nsinit"

// opFailure is a gosbx command that builds no sandbox (cache ls/rm, job, session
// ls/stop/kill) failing: exit 125 as gosbx's own failures are, with its error as it is,
// not "sandbox setup failed at": no sandbox setup was involved (the trial's `cache rm`
// of an entry already gone).
type opFailure struct{ err error }

func (e *opFailure) Error() string { return e.err.Error() }
func (e *opFailure) Unwrap() error { return e.err }
func (e *opFailure) ExitCode() int { return nsinit.ExitSetup }
