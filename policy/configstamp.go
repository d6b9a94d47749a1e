package policy

import (
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// ConfigStamp is a file the launch's git guard read (a git config file, an include, a
// legacy remotes/ or branches/ directory) and its state then: whether it existed, and
// its st_dev, st_ino, size and modification and change times (lstat(2), ns). git writes
// a config through a lock file renamed over it, so a change gives a new inode and
// change time.
type ConfigStamp struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists,omitempty"`
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime,omitempty"`
	Ctime  int64  `json:"ctime,omitempty"`
}

// stampOf is p's ConfigStamp now; a path that cannot be inspected for another reason
// than its absence is stamped as an error (Ino ^0), so that it never matches.
func stampOf(p string) ConfigStamp {
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return ConfigStamp{Path: p}
	case err != nil:
		return ConfigStamp{Path: p, Exists: true, Ino: ^uint64(0)}
	}
	return ConfigStamp{Path: p, Exists: true, Dev: st.Dev, Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
}

// stamp records p as read by this launch's git guard (first state kept).
func (rb *readBudget) stamp(p string) {
	if rb == nil {
		return
	}
	if rb.stamps == nil {
		rb.stamps = map[string]ConfigStamp{}
	}
	if _, ok := rb.stamps[p]; !ok {
		rb.stamps[p] = stampOf(p)
	}
}

// configStamps are rb's stamps, by path.
func (rb *readBudget) configStamps() []ConfigStamp {
	if rb == nil {
		return nil
	}
	out := make([]ConfigStamp, 0, len(rb.stamps))
	for _, s := range rb.stamps {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ConfigStamp) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// changedConfigs are the paths of stamps whose file is not as it was.
func changedConfigs(stamps []ConfigStamp) []string {
	var out []string
	for _, s := range stamps {
		if stampOf(s.Path) != s {
			out = append(out, s.Path)
		}
	}
	return out
}

// NewConfigChangedError is the refusal of a request of session while files its start's
// git guard read have changed (attack review 30 F8): the guard of what they name (a
// local remote's repository, a hooks directory) was planned from them and the session's
// mounts are fixed, so a remote added on the host meanwhile is not guarded.
func NewConfigChangedError(session string, changed []string) error {
	return errorf("protected", "", nil, "%s changed after %s was started (a git config file, an include or a legacy remotes/ or branches/ directory the start's guard read: a remote added, a setting changed); the guard of what it names (local remotes' repositories, hooks) is the start's, so it would not cover the change; the command was not run. %s",
		strings.Join(shownAll(changed), ", "), sessionName(session), restartFix(session))
}
