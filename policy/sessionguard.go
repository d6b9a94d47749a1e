package policy

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// SessionGuard tells apart the protected paths (a new .git) that appear in a session's
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
// A change to a file the start's git guard read (ProtectedScan.Configs: a remote the
// host adds to a repository's config) refuses every request, as a new .git does: the
// guard of local remotes and hooks is planned from them once (attack review 30 F8).
//
// Known paths are kept by identity (KnownPath): a start-time repository removed
// and made again at its path (the start's read-only bind covered the old one) is new.
// Each request's search also follows the chain from the workspace down to its working
// directory, as the start's does for its own: a protected path there that no search
// found (deeper than the scan, off the start's chain) refuses that request.
//
// The trees are searched before each request's command starts and after each command
// or job ends (its git cleanup done), reading only the directories that changed
// (ProtectedScan.Rescan). What appears while a command runs, even by the host's
// hand, counts as the command's (README, Sessions).
//
// Build puts one in every config it makes (config.Config.Guard), from its own search,
// and nsinit.Session calls it around each command: a library session refuses what the
// CLI's refuses (the CLI's supervisor sets its own, NewSessionGuard, from the search it
// made before the build). Its refusals are *Error at field "protected"; nsinit gives
// them as a *SetupError at step "protected".
type SessionGuard struct {
	// name is the CLI session's name, "" for a library session (the refusals' fix)
	name string

	mu   sync.Mutex
	scan ProtectedScan
	// running counts the commands and jobs started and not yet ended
	running int
	// ran: a command ran since the last search
	ran bool
	// since is when the last search that began while no command ran ended (the
	// coarse clock file system timestamps are taken from): only a path born at or after
	// it can be a command's
	since time.Time
}

// NewSessionGuard is the guard of session name ("" for a library session) over the
// trees scan searched before the sandbox was built (Policy.ScanProtected).
func NewSessionGuard(name string, scan ProtectedScan) *SessionGuard {
	return &SessionGuard{name: name, scan: scan}
}

// Prime reads the trees once so that the first request's search reads only what
// changed; what it finds is left for that search to judge.
func (g *SessionGuard) Prime() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scan.Rescan()
	g.since = coarseNow()
}

// Before searches the trees (and the chain down to cwd, the command's working
// directory) as a request's command is about to start, and refuses it (an *Error at
// field protected) when a protected path appeared while none of the session's commands
// ran. On nil the caller calls Ended once the command ended, or did not start.
func (g *SessionGuard) Before(cwd string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.search(cwd); err != nil {
		return err
	}
	g.running++
	g.ran = true
	return nil
}

// Ended searches the trees once a command that passed Before has ended (after its git
// cleanup), cwd its working directory: what appeared meanwhile is its own.
func (g *SessionGuard) Ended(cwd string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	// an error here (the trees grew past scan_limit, a directory changed while it was
	// read) is the next request's refusal
	g.search(cwd)
}

// search is the search itself, g.mu held.
func (g *SessionGuard) search(cwd string) error {
	idle := g.running == 0
	if changed := changedConfigs(g.scan.Configs); len(changed) > 0 {
		return NewConfigChangedError(g.name, changed)
	}
	if changed := changedWorktreeFiles(g.scan.WorktreeFiles); len(changed) > 0 {
		return NewWorktreeChangedError(g.name, changed)
	}
	var cwds []string
	if cwd != "" {
		cwds = []string{cwd}
	}
	added, err := g.scan.Rescan(cwds...)
	if err != nil {
		return err
	}
	var fresh, old, chain []Found
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
			return NewProtectedError(g.name, Paths(old))
		}
		return NewProtectedBornError(g.name, Paths(old))
	}
	if len(chain) > 0 {
		// not the session's end: the request's own directory, refused each time
		return NewChainError(g.name, Paths(chain))
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

// Session is a guard of its own (its own copy of the trees' search) for one session
// built from the config g is in, its first search begun in the background: the session
// guard of config.Guard.
func (g *SessionGuard) Session() config.SessionGuard {
	g.mu.Lock()
	scan := g.scan
	g.mu.Unlock()
	scan.Known = slices.Clone(scan.Known)
	scan.cache = nil
	s := &SessionGuard{name: g.name, scan: scan}
	go s.Prime()
	return s
}
