package policy

import (
	"bytes"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dirCache keeps what the search for protected paths read in each directory, so that
// searching the same trees again reads only the directories that changed
// (docs/decisions.md, "New repositories in a session"). A directory is taken as
// unchanged in one of two ways:
//
//   - watched: an inotify(7) watch on it, added before it was read, has reported no
//     event since (an entry made, removed or renamed in it; its own mode, owner or ACL
//     changed; it moved or was removed). No system call at all for it.
//   - by its state: the same device, inode number, ctime and mtime (lstat(2)) as when it
//     was read, where no watch could be added (max_user_watches), after the watch queue
//     overflowed, or once the mount table changed (a mount over a directory sends no
//     event; the watch sees the covered one). Creating, removing or renaming an entry
//     sets the directory's mtime and ctime; chmod, chown and utimensat set ctime, which
//     no caller can set back (inode(7)). A file system's timestamps can be coarser than
//     the changes (a tick): a directory changed again within the tick of the read would
//     look unchanged, so one whose ctime is within racyWindow of the read is not taken
//     this way (git's "racily clean" entries, gitformat-index(5), are the same rule).
//
// Only local file systems are watched (inotify does not see changes made by another
// client of a network one): elsewhere the state is checked each time.
type dirCache struct {
	dirs map[string]*cachedDir
	// gen counts the searches: a directory this one met (kept or read) has it, the
	// others are dropped once it ends (prune)
	gen uint64
	now time.Time

	// ifd is the inotify instance (-1: none could be made); dirty are the watches
	// that reported an event since the last search; verify: take no watch's word in
	// this search (its queue overflowed, or the mount table changed)
	ifd    int
	dirty  map[int32]bool
	verify bool
	// carry are the watches that reported an event after a search's walk (settle),
	// dirty for the next; carryVerify: the queue overflowed meanwhile
	carry       map[int32]bool
	carryVerify bool
	// mounts is /proc/self/mountinfo, open: poll(2) says a mount table change once
	mounts int
	// watches are the watches held; at most maxWatches (a share of the user's
	// max_user_watches: an editor's or a build tool's file watcher needs them too)
	watches    map[int32]bool
	maxWatches int
	// local caches localFS by device
	local map[uint64]bool

	// walks are what each tree's last walk found, and whether every directory it met
	// was watched (replay); root is the tree being walked, trees those walked (not
	// replayed) in this search
	walks map[string]walkResult
	root  string
	trees map[string]bool

	// reads counts the directories read (not found unchanged), for the tests
	reads int
}

type walkResult struct {
	found   []string
	watched bool
}

type cachedDir struct {
	dev, ino     uint64
	ctime, mtime unix.Timespec
	keep         []scanEntry
	wd           int32 // its watch, -1: none
	racy         bool  // its ctime too recent for the state check
	gen          uint64
	root         string // the tree it is in
}

// racyWindow is how recent a directory's ctime may be for its read to be kept: far more
// than any file system's timestamp granularity (jiffies, or 2 s on FAT's mtime). A
// variable for the unit tests alone.
var racyWindow = 3 * time.Second

// watchMask: the events that change what a search reads in a directory.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// newDirCache makes a cache; watch says whether to use inotify (else the state check
// alone). Its descriptors stay open for the process's life, as the cache's owner (a
// session's supervisor) does.
func newDirCache(watch bool) *dirCache {
	c := &dirCache{dirs: map[string]*cachedDir{}, dirty: map[int32]bool{}, walks: map[string]walkResult{}, trees: map[string]bool{}, watches: map[int32]bool{}, carry: map[int32]bool{}, ifd: -1, mounts: -1, local: map[uint64]bool{}}
	if !watch {
		return c
	}
	m, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return c
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		unix.Close(m)
		return c // max_user_instances: the state check for all
	}
	c.ifd, c.mounts = ifd, m
	c.maxWatches = watchCap(inotifyLimit("max_user_watches", 8192), inotifyLimit("max_user_instances", 128))
	return c
}

// begin starts a search: what it meets is kept by prune. It takes the events the
// watches reported since the last search.
func (c *dirCache) begin() {
	c.gen++
	c.now = time.Now()
	clear(c.dirty)
	clear(c.trees)
	for wd := range c.carry {
		c.dirty[wd] = true
	}
	clear(c.carry)
	c.verify = c.ifd < 0 || c.carryVerify
	c.carryVerify = false
	if c.ifd < 0 {
		return
	}
	// proc_mounts's poll: POLLPRI|POLLERR once for each change since the last poll
	// (proc(5), /proc/pid/mounts); POLLIN always
	fds := []unix.PollFd{{Fd: int32(c.mounts), Events: unix.POLLPRI}}
	if _, err := unix.Poll(fds, 0); err != nil || fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0 {
		c.verify = true
	}
	var buf [4096]byte
	for {
		n, err := unix.Read(c.ifd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err != unix.EAGAIN {
				c.verify = true
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				c.verify = true
			}
			c.dirty[ev.Wd] = true
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// settle reads the events the watches reported while the search walked, keeps them
// for the next search (carry), and reports whether none can have changed what it found:
// an entry that is a directory (IN_ISDIR) or named as the last component of one of
// patterns made, moved or removed, a watched directory's own change (IN_ATTRIB,
// moved, removed), or an overflowed queue. Other files coming and going (a build's
// output, an editor's swap files) do not count.
func (c *dirCache) settle(patterns []string) bool {
	if c.ifd < 0 {
		return true
	}
	quiet := true
	var buf [4096]byte
	for {
		n, err := unix.Read(c.ifd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err != unix.EAGAIN {
				c.carryVerify, quiet = true, false
			}
			return quiet
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_IGNORED != 0 {
				continue // a watch removed (prune), or its directory gone: told by IN_DELETE_SELF
			}
			c.carry[ev.Wd] = true
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				c.carryVerify, quiet = true, false
			case len(name) == 0 || ev.Mask&unix.IN_ISDIR != 0:
				quiet = false
			default:
				for _, p := range patterns {
					if nameMatch(path.Base(p), string(name)) {
						quiet = false
					}
				}
			}
		}
	}
}

// prune drops the directories this search did not meet in the trees it walked, after it succeeded, and
// removes their watches (unless a directory it met has the same one: a bind mount).
func (c *dirCache) prune() {
	if len(c.trees) == 0 {
		return // all replayed
	}
	var gone []int32
	used := map[int32]bool{}
	for dir, d := range c.dirs {
		switch {
		case d.gen != c.gen && c.trees[d.root]:
			delete(c.dirs, dir)
			if d.wd >= 0 {
				gone = append(gone, d.wd)
			}
		case d.wd >= 0:
			used[d.wd] = true
		}
	}
	for _, wd := range gone {
		if !used[wd] {
			unix.InotifyRmWatch(c.ifd, uint32(wd))
			delete(c.watches, wd)
			used[wd] = true // once
		}
	}
}

// lookup returns what dir held when it was read, if it is unchanged since (dir is the
// path the search reached it by), and whether a watch said so. moved: its parent was
// read again in this search, so the path may lead to another directory now (a watch is
// on an inode: a directory renamed over it, or swapped with RENAME_EXCHANGE, sends
// the parent an event, not the watch of the one it replaced), and it is taken only when
// lstat(2) finds the same directory there.
func (c *dirCache) lookup(dir string, moved bool) (keep []scanEntry, watched, ok bool) {
	d, ok := c.dirs[dir]
	if !ok || d.wd >= 0 && c.dirty[d.wd] {
		return nil, false, false
	}
	var st unix.Stat_t
	switch {
	case d.wd < 0 || c.verify:
		if d.racy || unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
			st.Dev != d.dev || st.Ino != d.ino || st.Ctim != d.ctime || st.Mtim != d.mtime {
			return nil, false, false
		}
	case moved:
		if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Dev != d.dev || st.Ino != d.ino {
			return nil, false, false
		}
	}
	d.gen = c.gen
	return d.keep, d.wd >= 0, true
}

// replay returns what root's last walk found, when nothing can have changed since:
// every directory it met was watched, no watch has sent an event since, nothing asks
// for the state check.
func (c *dirCache) replay(root string) ([]string, bool) {
	w, ok := c.walks[root]
	if !ok || !w.watched || len(c.dirty) > 0 || c.verify {
		return nil, false
	}
	return w.found, true
}

// walking starts the walk of root: what store keeps is root's.
func (c *dirCache) walking(root string) {
	c.root = root
	c.trees[root] = true
	delete(c.walks, root) // a walk that fails leaves nothing to replay
}

// walked keeps what root's walk found (for replay), watched whether every directory it
// met was watched.
func (c *dirCache) walked(root string, found []string, watched bool) {
	c.walks[root] = walkResult{found: found, watched: watched}
}

// watch adds a watch on the open directory fd (before it is read) and returns it, or
// -1: no inotify, a file system it does not serve, or the limit of watches reached.
func (c *dirCache) watch(fd int) int {
	if c.ifd < 0 {
		return -1
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return -1
	}
	local, ok := c.local[st.Dev]
	if !ok {
		local = localFS(fd)
		c.local[st.Dev] = local
	}
	if !local || len(c.watches) >= c.maxWatches {
		// none: the state check. (A directory that had one gets none on its next read
		// here; the old watch stays, counted, its events harmless: at most maxWatches.)
		return -1
	}
	wd, err := unix.InotifyAddWatch(c.ifd, "/proc/self/fd/"+strconv.Itoa(fd), watchMask)
	if err != nil {
		return -1
	}
	c.watches[int32(wd)] = true
	delete(c.dirty, int32(wd)) // an event before this read is this read's
	return wd
}

// store keeps what dir held when it was read, st its state (fstat(2) after the watch,
// before the read), wd its watch (-1: none).
func (c *dirCache) store(dir string, st *unix.Stat_t, keep []scanEntry, wd int) {
	c.reads++
	if st.Ino == 0 {
		return
	}
	racy := c.now.Sub(time.Unix(st.Ctim.Unix())) < racyWindow
	if racy && wd < 0 {
		return
	}
	c.dirs[dir] = &cachedDir{dev: st.Dev, ino: st.Ino, ctime: st.Ctim, mtime: st.Mtim, keep: keep, wd: int32(wd), racy: racy, gen: c.gen, root: c.root}
}

// localFS reports whether the directory fd is on a file system whose changes inotify
// sees all of: one that lives on this machine (statfs(2) f_type, linux/magic.h); not
// overlayfs (a change made in a layer's own directory sends no event through it).
func localFS(fd int) bool {
	var fs unix.Statfs_t
	if unix.Fstatfs(fd, &fs) != nil {
		return false
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.F2FS_SUPER_MAGIC:
		return true
	}
	return false
}

// watchCap is how many watches one cache may hold, given the user's
// max_user_watches and max_user_instances (inotify(7)): each cache (a session's
// supervisor) holds one instance, so however many sessions the user runs, up to every
// instance it may have, together they hold at most half its watches (the rest is an
// editor's, a build tool's, systemd's path units'). Past it the state check (lstat)
// stands in for a watch. 32 on the smallest defaults (8192, 128); 752 on this
// machine's 192530.
func watchCap(watches, instances int) int {
	if instances < 1 {
		instances = 1
	}
	return watches / (2 * instances)
}

// inotifyLimit is /proc/sys/fs/inotify/name (inotify(7)), def if it cannot be read.
func inotifyLimit(name string, def int) int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/" + name)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return def
	}
	return n
}
