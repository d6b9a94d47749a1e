package policy

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// worktreeStamps is what the launch's git guard saw of the worktrees/ directories of
// the git dirs it made writable: the directories, their entries (by identity) and
// those entries' commondir, gitdir and config.worktree (ConfigStamp).
type worktreeStamps struct {
	dirs    []string
	entries []KnownPath
	files   map[string]ConfigStamp
}

// worktreePointers are the files of a linked worktree's git dir that tell git where its
// common dir and checkout are and what config it reads (gitrepository-layout(5)).
var worktreePointers = []string{"commondir", "gitdir", "config.worktree"}

// worktreesDir records d, a writable git dir's worktrees/, as the guard plans it: a
// session takes an entry it did not see, made while none of its commands ran, as it
// takes a new .git (SessionGuard), and refuses its requests once a pointer file of an
// entry it saw changed. An entry that cannot be identified is left out (the session
// then takes it for new and refuses).
func (rb *readBudget) worktreesDir(d string) {
	if rb == nil || slices.Contains(rb.worktrees.dirs, d) {
		return
	}
	w := &rb.worktrees
	w.dirs = append(w.dirs, d)
	ents, err := readDirCapped(d)
	if err != nil {
		return
	}
	if w.files == nil {
		w.files = map[string]ConfigStamp{}
	}
	for _, e := range ents {
		p := filepath.Join(d, e.Name())
		k, _, err := identify(p)
		if err != nil {
			continue
		}
		w.entries = append(w.entries, k)
		for _, f := range worktreePointers {
			w.files[filepath.Join(p, f)] = stampOf(filepath.Join(p, f))
		}
	}
}

// worktreeFiles are rb's worktree pointer stamps, by path.
func (w worktreeStamps) stamps() []ConfigStamp {
	out := make([]ConfigStamp, 0, len(w.files))
	for _, s := range w.files {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ConfigStamp) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// keepWorktrees puts what rb saw of the worktrees/ directories into s (Build's guard).
func (s *ProtectedScan) keepWorktrees(rb *readBudget) {
	if rb == nil {
		return
	}
	s.Worktrees = slices.Clone(rb.worktrees.dirs)
	s.WorktreeFiles = rb.worktrees.stamps()
	s.Known = append(s.Known, rb.worktrees.entries...)
}

// worktreeEntries lists the entries of s.Worktrees now, each directory whole (a
// directory that is gone or not a directory lists none: a git worktree prune's rmdir;
// a new one made later is listed then). One past maxDirEntries, or unreadable, is an
// error naming it: a new entry is never missed for a listing read in part (attack
// review 35 F8: 30 000 junk names hid one from the first 4096 read).
func (s *ProtectedScan) worktreeEntries() ([]string, error) {
	var out []string
	for _, d := range s.Worktrees {
		ents, err := readDirCapped(d)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, errorf("protected", d, err, "cannot list the linked worktrees' git dirs whole, so cannot tell a new one; the command was not run. Remove what is not a worktree from %s", d)
		}
		for _, e := range ents {
			out = append(out, filepath.Join(d, e.Name()))
		}
	}
	return out, nil
}

// changedWorktreeFiles are the pointer files of the worktrees there at launch that are
// not as they were and are there now (one removed, git worktree remove or prune, leads
// nowhere; its entry made again is a new entry).
func changedWorktreeFiles(stamps []ConfigStamp) []string {
	var out []string
	for _, s := range stamps {
		if now := stampOf(s.Path); now != s && now.Exists {
			out = append(out, s.Path)
		}
	}
	return out
}

// NewWorktreeChangedError is the refusal of a request of session while a linked
// worktree's commondir, gitdir or config.worktree changed since its start (attack review
// 33 F2): the guard of that worktree was planned from them.
func NewWorktreeChangedError(session string, changed []string) error {
	return errorf("protected", "", nil, "%s changed after %s was started (a linked worktree's pointer to its common dir or checkout, or its own config); the session's guard of that worktree is the start's, so it would not cover the change; the command was not run. %s",
		strings.Join(shownAll(changed), ", "), sessionName(session), restartFix(session))
}

// CopyGitStamps puts into s what the git guard of the launch that made g read and saw
// (Build's guard): the config files (Configs) and the writable git dirs' worktrees/
// directories with their entries (Worktrees, WorktreeFiles, Known), for a session's
// own guard.
func (g *SessionGuard) CopyGitStamps(s *ProtectedScan) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s.Configs = slices.Clone(g.scan.Configs)
	s.Worktrees = slices.Clone(g.scan.Worktrees)
	s.WorktreeFiles = slices.Clone(g.scan.WorktreeFiles)
	for _, k := range g.scan.Known {
		for _, d := range g.scan.Worktrees {
			if filepath.Dir(k.Path) == d && !slices.Contains(s.Known, k) {
				s.Known = append(s.Known, k)
			}
		}
	}
}
