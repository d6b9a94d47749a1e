package main

import (
	"sync"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

// repoGuard tells apart the protected paths (a new .git) that appear in a session's
// writable trees while its commands run from those that appear between them. A session's
// mounts are fixed at its start, so neither is bound read-only:
//   - made while a command or job of the session ran (git init, git clone by the
//     command): the command's own, as one-shot leaves a repository its command creates
//     (README, Known limits); taken as known, never refused;
//   - made while none ran since the last search (the user on the host; or a process the
//     session left running in the background, whose refusal is the session's own loss):
//     every request is refused until the session is restarted.
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
}

// prime reads the trees once so that the first request's search reads only what
// changed; what it finds is left for that search to judge.
func (g *repoGuard) prime() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scan.Rescan()
}

// before searches the trees as a request's command is about to start, and refuses it
// (a *nsinit.SetupError at step protected) when a protected path appeared while none of
// the session's commands ran. On nil the caller calls started, then ended once the
// command ended (or ended alone when it did not start).
func (g *repoGuard) before() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.search(); err != nil {
		return err
	}
	g.running++
	g.ran = true
	return nil
}

// ended searches the trees once a command that passed before has ended (after its git
// cleanup): what appeared while it ran is its own.
func (g *repoGuard) ended() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	// an error here (the trees grew past scan_limit) is the next request's refusal
	g.search()
}

// search is the search itself, g.mu held.
func (g *repoGuard) search() error {
	added, err := g.scan.Rescan()
	if err != nil {
		return &nsinit.SetupError{Step: "protected", Err: err}
	}
	if len(added) > 0 {
		if !g.ran && g.running == 0 {
			return &nsinit.SetupError{Step: "protected", Err: policy.NewProtectedError(g.name, added)}
		}
		g.scan.Accept(added)
	}
	g.ran = g.running > 0
	return nil
}
