package main

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

// repoGuard tells apart the protected paths (a new .git) that appear in a session's
// writable trees while its commands run from those that appear between them. A session's
// mounts are fixed at its start, so neither is bound read-only:
//   - made while a command or job of the session ran (git init, git clone by the
//     command): the command's own, as one-shot leaves a repository its command creates
//     (README, Known limits); taken as known, never refused. Only one born (statx
//     btime) after the last search that ran while no command did: an older one was
//     kept out of the search's reach (moved into a skipped directory and back), not made;
//   - made while none ran since the last search (the user on the host; or a process the
//     session left running in the background, whose refusal is the session's own loss):
//     every request is refused while it is there (until the session is restarted).
//
// Known paths are kept by identity (policy.KnownPath): a start-time repository removed
// and made again at its path (the start's read-only bind covered the old one) is new.
// Each request's search also follows the chain from the workspace down to its working
// directory, as the start's does for its own: a protected path there that no search
// found (deeper than the scan, off the start's chain) refuses that request.
//
// The trees are searched before each request's command starts and after each command
// or job ends (its git cleanup done), reading only the directories that changed
// (policy.ProtectedScan.Rescan). What appears while a command runs, even by the host's
// hand, counts as the command's (README, Sessions).
type repoGuard struct {
	name string

	mu   sync.Mutex
	scan policy.ProtectedScan
	// running counts the commands and jobs started and not yet ended
	running int
	// ran: a command ran since the last search
	ran bool
	// since is when the last search that began while no command ran ended (the
	// coarse clock file system timestamps are taken from): only a path born at or after
	// it can be a command's
	since time.Time
}

// prime reads the trees once so that the first request's search reads only what
// changed; what it finds is left for that search to judge.
func (g *repoGuard) prime() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scan.Rescan()
	g.since = coarseNow()
}

// before searches the trees (and the chain down to cwd, the command's working
// directory) as a request's command is about to start, and refuses it (a
// *nsinit.SetupError at step protected) when a protected path appeared while none of
// the session's commands ran. On nil the caller calls started, then ended once the
// command ended (or ended alone when it did not start).
func (g *repoGuard) before(cwd string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.search(cwd); err != nil {
		return err
	}
	g.running++
	g.ran = true
	return nil
}

// ended searches the trees once a command that passed before has ended (after its git
// cleanup), cwd its working directory: what appeared meanwhile is its own.
func (g *repoGuard) ended(cwd string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	// an error here (the trees grew past scan_limit, a directory changed while it was
	// read) is the next request's refusal
	g.search(cwd)
}

// search is the search itself, g.mu held.
func (g *repoGuard) search(cwd string) error {
	idle := g.running == 0
	var cwds []string
	if cwd != "" {
		cwds = []string{cwd}
	}
	added, err := g.scan.Rescan(cwds...)
	if err != nil {
		return &nsinit.SetupError{Step: "protected", Err: err}
	}
	var fresh, old, chain []policy.Found
	for _, f := range added {
		switch {
		case (g.ran || g.running > 0) && (!f.Born || !f.BirthTime().Before(g.since)):
			// (a file system without birth times, NFS, some FUSE ones: taken by when it
			// appeared alone, as before; README)
			fresh = append(fresh, f)
		case f.Chain:
			chain = append(chain, f)
		default:
			old = append(old, f)
		}
	}
	if len(old) > 0 {
		if !g.ran && g.running == 0 {
			return &nsinit.SetupError{Step: "protected", Err: policy.NewProtectedError(g.name, policy.Paths(old))}
		}
		return &nsinit.SetupError{Step: "protected", Err: policy.NewProtectedBornError(g.name, policy.Paths(old))}
	}
	if len(chain) > 0 {
		// not the session's end: the request's own directory, refused each time
		return &nsinit.SetupError{Step: "protected", Err: policy.NewChainError(g.name, policy.Paths(chain))}
	}
	g.scan.Accept(fresh)
	g.ran = g.running > 0
	if idle {
		g.since = coarseNow()
	}
	return nil
}

// coarseNow is CLOCK_REALTIME_COARSE (clock_gettime(2)), the clock a new inode's
// timestamps come from (current_time; a multigrain file system's may be finer, never
// earlier): a path born after this read has a birth time at or after it. One born
// within the clock's tick (4 ms at HZ=250) before it may pass as later: out of the
// search's reach at that instant, and still a limit (docs/decisions.md).
func coarseNow() time.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now()
	}
	return time.Unix(ts.Unix())
}
