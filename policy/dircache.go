package policy

import (
	"time"

	"golang.org/x/sys/unix"
)

// dirCache keeps what the search for protected paths read in each directory, with the
// directory's state when it was read, so that searching the same trees again reads only
// the directories that changed: one lstat(2) for each directory that did not, in place
// of open, faccessat2 and getdents64 (docs/decisions.md, "New repositories in a session").
//
// A directory whose entries or mode change gets a new ctime (inode(7): creating,
// removing or renaming an entry sets the directory's mtime and ctime; chmod, chown and
// utimensat set ctime, which no caller can set back). So a directory with the same
// device, inode number, ctime and mtime as when it was read holds the same names, and
// the directories among them are the same ones, each checked the same way in turn.
//
// A file system's timestamps can be coarser than the changes (a tick of the clock):
// a directory changed again within the tick of the read would look unchanged. One whose
// ctime is within racyWindow of the read is not kept, and is read again each time until
// it is older (git's "racily clean" entries, gitformat-index(5), are the same rule).
type dirCache struct {
	dirs map[string]cachedDir
	// seen are the directories this search met (kept or read): the others are dropped
	// once it ends (prune)
	seen map[string]cachedDir
	now  time.Time
	// reads counts the directories read (not found unchanged), for the tests
	reads int
}

type cachedDir struct {
	dev, ino     uint64
	ctime, mtime unix.Timespec
	keep         []scanEntry
}

// racyWindow is how recent a directory's ctime may be for its read to be kept: far more
// than any file system's timestamp granularity (jiffies, or 2 s on FAT's mtime). A
// variable for the unit tests alone.
var racyWindow = 3 * time.Second

func newDirCache() *dirCache { return &dirCache{dirs: map[string]cachedDir{}} }

// begin starts a search: what it meets is kept by prune.
func (c *dirCache) begin() {
	c.seen = map[string]cachedDir{}
	c.now = time.Now()
}

// prune keeps the directories this search met, after it succeeded.
func (c *dirCache) prune() {
	c.dirs, c.seen = c.seen, nil
}

// lookup returns what dir held when it was read, if it is unchanged since (lstat(2):
// dir is the path the search reached it by; its parents were found unchanged first).
func (c *dirCache) lookup(dir string) ([]scanEntry, bool) {
	d, ok := c.dirs[dir]
	if !ok {
		return nil, false
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
		st.Dev != d.dev || st.Ino != d.ino || st.Ctim != d.ctime || st.Mtim != d.mtime {
		return nil, false
	}
	c.seen[dir] = d
	return d.keep, true
}

// store keeps what dir held when it was read, st its state (fstat(2) before the read),
// unless its ctime is too recent to tell a later change from it.
func (c *dirCache) store(dir string, st *unix.Stat_t, keep []scanEntry) {
	c.reads++
	if st.Ino == 0 || c.now.Sub(time.Unix(st.Ctim.Unix())) < racyWindow {
		return
	}
	c.seen[dir] = cachedDir{dev: st.Dev, ino: st.Ino, ctime: st.Ctim, mtime: st.Mtim, keep: keep}
}
