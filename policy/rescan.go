package policy

import (
	"slices"
	"strings"
)

// ProtectedScan is what the search for protected paths found in a sandbox's writable
// trees when it was built, kept to search them again while the sandbox runs: a
// session's mounts are fixed at its start, so a repository made in its workspace later
// (by the user on the host, or by a command) has no read-only .git, and the host's git
// would run what a command plants in it. A session's supervisor searches again around each
// request (Rescan) and judges what is new by when it appeared (cmd/gosbx/repoguard.go).
// Patterns are filesystem.protected; Cwd the working directory the workspace's scan
// followed down (repos.go).
type ProtectedScan struct {
	Trees    []string `json:"trees"`
	Cwd      string   `json:"cwd,omitempty"`
	Patterns []string `json:"patterns"`
	Limit    int      `json:"limit,omitempty"`
	Known    []string `json:"known"`
	// cache is what Rescan read last (dircache.go)
	cache *dirCache
}

// ScanProtected searches p's writable trees (the workspace, each read-write bind at its
// own path, canonical, as Build resolves them) for its protected paths now, with cwd the command's working
// directory. It is called before the sandbox is built, so that whatever appears between
// the two is guarded by the build and still taken as new by Added (refused, not missed).
// A tree that cannot be resolved is left out (the build refuses it).
func (p *Policy) ScanProtected(cwd string, h Host) (ProtectedScan, error) {
	s := ProtectedScan{Cwd: cwd, Patterns: p.Filesystem.Protected, Limit: p.Filesystem.ScanLimit}
	if len(s.Patterns) == 0 {
		return s, nil
	}
	r := newResolver()
	if ws, err := r.evalSymlinks(p.Workspace.Path); err == nil {
		s.Trees = append(s.Trees, ws)
	}
	for _, rw := range p.Filesystem.ReadWrite {
		if rw.Dest != "" {
			continue
		}
		if _, c, err := canonical(r, "rw", rw.Path, h.Cwd); err == nil && !slices.Contains(s.Trees, c) {
			s.Trees = append(s.Trees, c)
		}
	}
	known, err := s.scan(nil)
	s.Known = known
	return s, err
}

// scan lists the protected paths of s's trees as they are now; with c, reading only
// the directories changed since c's last search.
func (s ProtectedScan) scan(c *dirCache) ([]string, error) {
	r := newResolver()
	var out []string
	if c != nil {
		c.begin()
	}
	for i, t := range s.Trees {
		cwd := ""
		if i == 0 {
			cwd = s.Cwd
		}
		found, err := scanProtectedCached(r, t, cwd, s.Patterns, s.Limit, c)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	if c != nil {
		c.prune()
	}
	return out, nil
}

// Rescan searches s's trees again and returns the protected paths there that are not
// in s.Known, in the scan's order. It reads only the directories that changed since its
// last call (dircache.go): the first reads them all. Not safe for concurrent use.
func (s *ProtectedScan) Rescan() ([]string, error) {
	if len(s.Patterns) == 0 {
		return nil, nil
	}
	now, err := s.scan(s.cacheOrNew())
	if err != nil {
		return nil, err
	}
	var added []string
	for _, p := range now {
		if !slices.Contains(s.Known, p) {
			added = append(added, p)
		}
	}
	return added, nil
}

// Accept adds paths (from Rescan) to s.Known: Rescan no longer returns them.
func (s *ProtectedScan) Accept(paths []string) {
	s.Known = append(s.Known, paths...)
}

// NewProtectedError is the refusal (a *Error at step protected) of a request of
// session while added (from Rescan) are in its writable trees unguarded: a session's
// mounts are fixed at its start, so only building the sandbox again guards them.
func NewProtectedError(session string, added []string) error {
	return errorf("protected", "", nil, "%s appeared in a writable tree after session %s was started, while none of its commands ran; a session's mounts are fixed at its start, so it is not guarded (git would run what a command put in it); the command was not run. Restart the session to guard it: gosbx session stop %s, then gosbx session start %s again",
		strings.Join(added, ", "), session, session, session)
}

// cacheOrNew is s.cache, made on first use.
func (s *ProtectedScan) cacheOrNew() *dirCache {
	if s.cache == nil {
		s.cache = newDirCache(true)
	}
	return s.cache
}
