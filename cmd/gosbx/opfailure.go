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

// notRunning is session stop or kill of a session that is not running: exit 1, with
// the message (tmux kill-session and docker stop exit 1 for a name they do not have),
// not 125: nothing failed, and a caller's idempotent cleanup can tell the two apart.
type notRunning struct{ err error }

func (e *notRunning) Error() string { return e.err.Error() }
func (e *notRunning) Unwrap() error { return e.err }
func (e *notRunning) ExitCode() int { return 1 }
