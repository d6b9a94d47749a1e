package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProtectedScan is what the search for protected paths found in a sandbox's writable
// trees when it was built, kept to search them again while the sandbox runs: a
// session's mounts are fixed at its start, so a repository made in its workspace later
// (by the user on the host, or by a command) has no read-only .git, and the host's git
// would run what a command plants in it. A session searches again around each
// command (Rescan) and judges what is new by when it appeared (SessionGuard, sessionguard.go).
// Patterns are filesystem.protected; Cwd the working directory the workspace's scan
// followed down (repos.go). Known are the protected paths taken as guarded (bound
// read-only at the start) or as a command's own, by identity: a path removed and made
// again (rm -rf dep; git init dep) is another file, so new.
type ProtectedScan struct {
	Trees    []string    `json:"trees"`
	Cwd      string      `json:"cwd,omitempty"`
	Patterns []string    `json:"patterns"`
	Limit    int         `json:"limit,omitempty"`
	Known    []KnownPath `json:"known"`
	// Configs are the files the launch's git guard read (Build's; the CLI copies them
	// from the built config's guard): a change refuses a session's requests
	Configs []ConfigStamp `json:"configs,omitempty"`
	// Worktrees are the worktrees/ directories of the git dirs the launch's guard made
	// writable (commit mode): their entries are searched as protected paths are (a
	// linked worktree the user adds between requests has no read-only commondir);
	// WorktreeFiles are the commondir, gitdir and config.worktree of those there at
	// launch: one changed (and there) refuses a session's requests
	Worktrees     []string      `json:"worktrees,omitempty"`
	WorktreeFiles []ConfigStamp `json:"worktree_files,omitempty"`
	// cache is what Rescan read last (dircache.go)
	cache *dirCache
}

// KnownPath is a protected path with the identity it had when it was found: st_dev,
// st_ino and the birth time (statx(2) stx_btime, zero where the file system keeps
// none): an inode number is reused at once on ext4 (rm -rf dep; git init dep can give
// the new .git the old one's), its birth time is not.
type KnownPath struct {
	Path  string `json:"path"`
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Birth int64  `json:"birth,omitempty"` // ns since the epoch
}

// Found is a protected path a search found and Known does not hold, with whether the
// file system keeps birth times (Born), and whether only the chain down to a request's
// working directory reached it (Chain: no search of the trees does, it lies deeper than
// scanDepth).
type Found struct {
	KnownPath
	Born  bool
	Chain bool
}

// BirthTime is f's birth time (meaningful when f.Born).
func (f Found) BirthTime() time.Time { return time.Unix(0, f.Birth) }

// identify is p's identity now (without following a symlink), and whether its birth
// time is known.
func identify(p string) (KnownPath, bool, error) {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &sx); err != nil {
		return KnownPath{}, false, err
	}
	k := KnownPath{Path: p, Dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), Ino: sx.Ino}
	born := sx.Mask&unix.STATX_BTIME != 0
	if born {
		k.Birth = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	}
	return k, born, nil
}

// ScanProtected searches p's writable trees (the workspace, each read-write bind's
// source, at its own path or moved (--rw SRC:DST: its repositories show at DST
// inside, they are searched and named at SRC), canonical, as Build resolves them) for its protected paths now, with cwd the command's working
// directory. It is called before the sandbox is built, so that whatever appears between
// the two is guarded by the build and still taken as new by Added (refused, not missed).
// A tree that cannot be resolved is left out (the build refuses it).
func (p *Policy) ScanProtected(cwd string, h Host) (ProtectedScan, error) {
	s := p.Trees(cwd, h)
	if len(s.Patterns) == 0 {
		return s, nil
	}
	known, err := s.scan(nil)
	if err != nil {
		return s, err
	}
	return s, s.know(known)
}

// Trees is ScanProtected's search not yet made: p's writable trees (none when p
// protects nothing), cwd, its patterns and limit.
func (p *Policy) Trees(cwd string, h Host) ProtectedScan {
	s := ProtectedScan{Cwd: cwd, Patterns: p.Filesystem.Protected, Limit: p.Filesystem.ScanLimit}
	if len(s.Patterns) == 0 {
		return s
	}
	r := newResolver()
	if ws, err := r.evalSymlinks(p.Workspace.Path); err == nil {
		s.Trees = append(s.Trees, ws)
	}
	for _, rw := range p.Filesystem.ReadWrite {
		if _, c, err := canonical(r, "rw", rw.Path, h.Cwd); err == nil && !slices.Contains(s.Trees, c) {
			s.Trees = append(s.Trees, c)
		}
	}
	return s
}

// know adds found (paths a search found now) to s.Known with their identities.
func (s *ProtectedScan) know(found []string) error {
	for _, p := range found {
		k, _, err := identify(p)
		if err != nil {
			return errorf("protected", p, err, "the protected path changed while it was searched")
		}
		s.Known = append(s.Known, k)
	}
	return nil
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
		// an event on a directory while the trees were walked: what was read of it
		// may be neither its state before nor after
		if !c.settle(s.Patterns) {
			return nil, changedError(s.Trees[0], nil)
		}
	}
	return out, nil
}

// Rescan searches s's trees again, and the chain of directories from the tree that
// holds each of cwds (a request's working directory) down to it, as the start's search
// does for its own (repos.go), and returns the protected paths found there that are
// not in s.Known (the same path and identity), in the scan's order. It forgets the Known
// paths that are gone or are another file now. It reads only the directories that
// changed since its last call (dircache.go): the first reads them all. A path that
// vanishes while it is searched fails the search (a process racing it, refused rather
// than missed). Not safe for concurrent use.
func (s *ProtectedScan) Rescan(cwds ...string) ([]Found, error) {
	if len(s.Patterns) == 0 {
		return nil, nil
	}
	var added []Found
	var err error
	for try := 0; try < searchTries; try++ {
		if added, err = s.rescan(cwds); !errors.Is(err, ErrChangedMidSearch) {
			break
		}
	}
	return added, err
}

// rescan is one try of Rescan.
func (s *ProtectedScan) rescan(cwds []string) ([]Found, error) {
	now, err := s.scan(s.cacheOrNew())
	if err != nil {
		return nil, err
	}
	wts, err := s.worktreeEntries()
	if err != nil {
		return nil, err
	}
	now = append(now, wts...)
	inTrees := len(now)
	for _, cwd := range cwds {
		for _, p := range s.chain(cwd) {
			if !slices.Contains(now, p) {
				now = append(now, p)
			}
		}
	}
	s.Known = slices.DeleteFunc(s.Known, func(k KnownPath) bool {
		now, _, err := identify(k.Path)
		return err != nil || now != k
	})
	var added []Found
	for i, p := range now {
		k, born, err := identify(p)
		if err != nil {
			return nil, changedError(p, err)
		}
		if !slices.Contains(s.Known, k) {
			added = append(added, Found{KnownPath: k, Born: born, Chain: i >= inTrees})
		}
	}
	return added, nil
}

// chain lists the protected paths (the patterns that are plain names) in each directory
// from the tree that holds cwd (canonical) down to cwd, the tree's root left out (the
// search has it).
func (s *ProtectedScan) chain(cwd string) []string {
	c, err := newResolver().evalSymlinks(cwd)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range s.Trees {
		if !strings.HasPrefix(c, t+"/") {
			continue
		}
		for d := c; len(d) > len(t); d = filepath.Dir(d) {
			for _, n := range s.Patterns {
				if strings.Contains(n, "/") || hasGlob(n) {
					continue
				}
				var st unix.Stat_t
				if p := filepath.Join(d, n); unix.Lstat(p, &st) == nil {
					out = append(out, p)
				}
			}
		}
		break
	}
	slices.Reverse(out) // from the tree's root down, as the search names them
	return out
}

// Accept adds found (from Rescan) to s.Known: Rescan no longer returns them while they
// are the same files.
func (s *ProtectedScan) Accept(found []Found) {
	for _, f := range found {
		s.Known = append(s.Known, f.KnownPath)
	}
}

// Paths are the paths of found.
func Paths(found []Found) []string {
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.Path
	}
	return out
}

// ErrChangedMidSearch is why a search failed: a directory vanished, or turned into a
// symlink or a file, between its listing and its open, or a watched directory had an
// entry that matters made, moved or removed while the trees were walked. A process
// moving a repository out of the search's reach and back must not have it skipped.
var ErrChangedMidSearch = errors.New("a directory changed while the trees were searched for protected paths (a process racing the search?)")

// changedError is the search's error for path, which changed (err) while searched.
func changedError(path string, err error) error {
	if err == nil {
		return errorf("protected", path, ErrChangedMidSearch, "refused rather than left unsearched; try again")
	}
	return errorf("protected", path, fmt.Errorf("%w: %w", ErrChangedMidSearch, err), "refused rather than left unsearched; try again")
}

// searchTries is how many times Rescan searches while the trees change under it before
// it fails.
const searchTries = 3

// NewProtectedError is the refusal (a *Error at step protected) of a request of
// session ("" for a library session: nsinit.Session) while added (from Rescan) are in
// its writable trees unguarded: a session's mounts are fixed at its start, so only
// building the sandbox again guards them.
func NewProtectedError(session string, added []string) error {
	return errorf("protected", "", nil, "%s appeared in a writable tree after %s was started, while none of its commands ran; a session's mounts are fixed at its start, so it is not guarded (git would run what a command put in it); the command was not run. %s",
		strings.Join(added, ", "), sessionName(session), restartFix(session))
}

// NewProtectedBornError is the refusal of a request of session while found (from
// Rescan, after a command ran) are in its writable trees unguarded and older than the
// last search that did not find them: moved into the search's reach by a command, or
// made by the host (or a process left in the background) where the search does not read;
// not the command's own.
func NewProtectedBornError(session string, found []string) error {
	return errorf("protected", "", nil, "%s was made before %s's last search yet not found by it (moved into a searched directory from one the search skips, or made outside the session's commands); it is not guarded (git would run what a command put in it). %s",
		strings.Join(found, ", "), sessionName(session), restartFix(session))
}

// NewChainError is the refusal of a request whose working directory lies below
// protected paths that session's start did not search (deeper than its scan, off the
// start's working directory): they were not bound read-only.
func NewChainError(session string, found []string) error {
	fix := "Run it from a directory the start searched (--chdir), or start a session from this directory"
	if session == "" {
		fix = "Run it from a directory the start searched (Process.Cwd), or start a session (NewSession) whose config's working directory is this one"
	}
	return errorf("protected", "", nil, "%s lies on the way to the request's working directory, deeper than %s's start searched, so it is not guarded (git would run what a command put in it); the command was not run. %s",
		strings.Join(found, ", "), sessionName(session), fix)
}

// sessionName names session in a refusal: a CLI session by its name, a library one
// ("") as the session.
func sessionName(session string) string {
	if session == "" {
		return "the session"
	}
	return "session " + session
}

// restartFix is how session is restarted, which guards what appeared.
func restartFix(session string) string {
	if session == "" {
		return "Restart the session to guard it: Session.Close, then policy.Compile and nsinit.NewSession again"
	}
	return fmt.Sprintf("Restart the session to guard it: gosbx session stop %s, then gosbx session start %s again", session, session)
}

// cacheOrNew is s.cache, made on first use.
func (s *ProtectedScan) cacheOrNew() *dirCache {
	if s.cache == nil {
		s.cache = newDirCache(true)
	}
	return s.cache
}
