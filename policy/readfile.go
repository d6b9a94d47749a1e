package policy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Every byte the launcher reads from a tree a sandbox could write (a .git file, a git
// dir's commondir, gitdir, config and index, .gitmodules) is read through readRegular:
// an earlier sandbox may have left a FIFO there (open(2) would block without end, deaf
// to signals), a symlink to /dev/zero (a read without end) or a huge sparse file, and
// the next launch must fail fast, naming the file, rather than hang or exhaust memory.

// readRegular reads the regular file p of at most limit bytes without following a
// final symlink (O_NOFOLLOW) or blocking on a FIFO (O_NONBLOCK), checking its type on
// the open descriptor (fstat(2)). It returns os.ErrNotExist when there is none, and an
// error naming p and what it is (a symlink, a FIFO, a socket, a device, a directory, a
// file over limit bytes) otherwise.
func readRegular(p string, limit int64) ([]byte, error) {
	return readBounded(p, limit, unix.O_NOFOLLOW)
}

// readRegularFollow is readRegular for a file the caller named (a policy file), which
// may be a symlink: the final symlink is followed, the rest is the same.
func readRegularFollow(p string, limit int64) ([]byte, error) {
	return readBounded(p, limit, 0)
}

func readBounded(p string, limit int64, flags int) ([]byte, error) {
	fd, st, err := openRegular(p, limit, flags)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b, err := readUpTo(fd, st.Size, limit)
	if err != nil {
		return b, &os.PathError{Op: "read", Path: p, Err: err}
	}
	return b, nil
}

// readUpTo reads fd to its end or limit bytes, as io.ReadAll(io.LimitReader(f, limit))
// would, from a descriptor of size bytes (a hint for the first allocation); EINTR is
// retried. On a read error it returns what was read so far and the error.
func readUpTo(fd int, size, limit int64) ([]byte, error) {
	b := make([]byte, 0, min(size+1, limit))
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):min(int64(cap(b)), limit)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return b, err
		}
		if n <= 0 {
			break
		}
		b = b[:len(b)+n]
	}
	return b, nil
}

// openRegular opens p as readBounded does (O_NONBLOCK, flags), and checks on the
// descriptor that it is a regular file of at most limit bytes. The caller closes fd.
func openRegular(p string, limit int64, flags int) (fd int, st unix.Stat_t, err error) {
	fd, err = unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|flags, 0)
	}
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT):
			return -1, st, os.ErrNotExist
		case errors.Is(err, unix.ELOOP) && flags&unix.O_NOFOLLOW != 0:
			return -1, st, fmt.Errorf("%s is a symlink where git keeps a file; refusing to follow it: %w", p, err)
		case errors.Is(err, unix.ENXIO):
			// a socket, or a FIFO opened for writing only: never a file git wrote
			return -1, st, fmt.Errorf("%s is a socket, not a regular file: %w", p, err)
		}
		return -1, st, fmt.Errorf("open %s: %w", p, err)
	}
	// The descriptor itself, not an *os.File (whose set-up costs more system calls than
	// the read); errors as an *os.File's.
	defer func() {
		if err != nil {
			unix.Close(fd)
			fd = -1
		}
	}()
	for err = unix.Fstat(fd, &st); err == unix.EINTR; err = unix.Fstat(fd, &st) {
	}
	if err != nil {
		return fd, st, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG {
		return fd, st, fmt.Errorf("%s is %s, not a regular file", p, fileKind(t))
	}
	if st.Size > limit {
		return fd, st, fmt.Errorf("%s is %d bytes, more than %d", p, st.Size, limit)
	}
	return fd, st, nil
}

// fileKind names a file type (the S_IFMT bits of st_mode, inode(7)).
func fileKind(t uint32) string {
	switch t {
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return "not a regular file"
}

// maxDirEntries bounds the entries the guard reads from one directory of a git dir:
// a sandbox that could write the git dir (commit mode) could fill one with millions of
// names for the next launch to hold in memory.
const maxDirEntries = 100000

// readDirCapped is os.ReadDir(dir) (entries sorted by name) for a directory of at most
// maxDirEntries entries; more is an error naming it.
func readDirCapped(dir string) ([]os.DirEntry, error) {
	f, err := openNoPoll(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []os.DirEntry
	for {
		ents, err := f.ReadDir(1024)
		out = append(out, ents...)
		if len(out) > maxDirEntries {
			return nil, fmt.Errorf("%s holds more than %d entries; gosbx does not read further", dir, maxDirEntries)
		}
		if err == io.EOF || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return out, err
		}
	}
	slices.SortFunc(out, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// openNoPoll is os.Open(name) (the same flags, the same *PathError) without the
// runtime poller's try: os.Open makes a descriptor non-blocking and offers it to epoll,
// which refuses a directory or a regular file, then makes it blocking again (4 fcntl
// and an epoll_ctl for each; os.NewFile of a blocking descriptor asks one fcntl). Its
// reads block as os.Open's do for what the poller refuses.
func openNoPoll(name string) (*os.File, error) {
	for {
		fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != unix.EINTR {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// launchReadBudget is how many bytes one launch's policy step reads, in all, from the
// repositories' files it parses at length (indexes, configs, .gitmodules): a sandbox
// that could write them (commit mode) may plant large files for every later launch to
// read. Past it the launch stops (125) naming the file. 256 MiB is an index of about
// 2.5 million entries, and about a quarter of a second of reading here.
const launchReadBudget = 256 << 20

// readBudget is what is left of a launch's read budget. A nil *readBudget is
// unbounded (a package's own tests).
type readBudget struct {
	left int64
	// stamps are the files the git guard read, as they were (ConfigStamp): a session
	// refuses its requests once one changed (SessionGuard)
	stamps map[string]ConfigStamp
	// worktrees are the commit-mode git dirs' worktrees/ directories, with their
	// entries and those entries' pointer files as planned (worktreesDir): a session
	// refuses a request once one was added or changed between requests (attack review
	// 33 F2)
	worktrees worktreeStamps
	// checkouts holds the common git dirs (with the git mode) whose recorded checkouts
	// a plan of this launch has guarded (guardCheckouts): the plans are unioned, so each
	// is read once, however many .git files of the scan lead to it.
	checkouts map[string]bool
	// homes are the names of the caller's home ("~/" in git config: Host.homeNames);
	// globals the caller's system and global git config files (gitEnvOf), read for
	// every repository's guard.
	homes   []string
	globals []string
	// env holds the settings the caller's environment carries and its PATH as git's
	// children see it (gitEnvOf); pathDirs caches which PATH directories lie in, or
	// lead into, a writable tree (guardPathProgram).
	env      gitEnv
	pathDirs map[string]pathDir
	// pathSeen holds the lookups guardPathProgram has planned in this launch (program,
	// directory it runs in, whether git's exec path comes first): the plans are unioned,
	// so each is done once however many repositories' configs name it.
	pathSeen map[string]bool
	// trees are the launch's writable trees (their roots are mount points already:
	// keepOrNote); pathNotes the writable PATH entries the launch notes (notePath).
	trees     []string
	pathNotes []pathNote
	// madeHooks are the hooks directories the launch creates empty and read-only
	// (noteMadeHooks), each with the setting that names it, for the launch's note.
	madeHooks [][2]string
	// commitGitDirs are the git dirs the scan's .git entries lead to when the launch's
	// git mode is commit (their objects, refs and HEAD writable, hooks and config not):
	// a local remote there is left to that guard (guardRemoteGitDir), not made
	// read-only whole, which would break commit mode for its checkout.
	commitGitDirs map[string]bool
	// fs remembers the lstat and readlink answers of the git guard's PATH lookups and
	// global config paths over this launch, outside the writable trees (nil: none
	// remembered): git's exec path, /usr and /usr/bin are walked for every program
	// a setting names.
	fs *resolver
	// outsideReads are the config files outside the writable trees the guard read, as
	// read (outsideConfig): the caller's system and global files are read for every
	// repository's guard.
	outsideReads map[string]outsideRead
}

// outsideRead is one config file as outsideConfig read it.
type outsideRead struct {
	b     []byte
	err   error
	empty bool
}

// outsideConfig reads the git config file f outside the writable trees, following
// symlinks (readRegularFollow, at most 1 MiB): its bytes or the error, and empty when
// it could not be read as a regular file but is a character device, which git reads
// as an empty file (GIT_CONFIG_GLOBAL=/dev/null). Each path is read once per launch
// (nil rb: each time). The bytes are shared: not to be changed.
func (rb *readBudget) outsideConfig(f string) (b []byte, empty bool, err error) {
	if rb != nil && memoFS {
		if r, ok := rb.outsideReads[f]; ok {
			return r.b, r.empty, r.err
		}
	}
	b, err = readRegularFollow(f, 1<<20)
	empty = err != nil && charDevice(f)
	if rb != nil && memoFS {
		if rb.outsideReads == nil {
			rb.outsideReads = map[string]outsideRead{}
		}
		rb.outsideReads[f] = outsideRead{b, err, empty}
	}
	return b, empty, err
}

// files is rb's resolver, nil for a nil rb.
func (rb *readBudget) files() *resolver {
	if rb == nil {
		return nil
	}
	return rb.fs
}

// homeDirs are rb's homes, none for a nil rb.
func (rb *readBudget) homeDirs() []string {
	if rb == nil {
		return nil
	}
	return rb.homes
}

// globalFiles is a copy of rb's global git config files, none for a nil rb.
func (rb *readBudget) globalFiles() []string {
	if rb == nil {
		return nil
	}
	return append([]string(nil), rb.globals...)
}

// envEntries are the settings rb's caller's environment carries, none for a nil rb.
func (rb *readBudget) envEntries() []configEntry {
	if rb == nil {
		return nil
	}
	return rb.env.entries
}

func newReadBudget() *readBudget { return &readBudget{left: launchReadBudget} }

// charge takes n bytes read from p out of the budget; an error names p once it is
// spent.
func (rb *readBudget) charge(p string, n int64) error {
	if rb == nil {
		return nil
	}
	rb.left -= n
	if rb.left < 0 {
		return fmt.Errorf("%s: reading it takes this launch past %d MiB read from files a sandbox could have written (indexes, configs, .gitmodules); an earlier sandbox may have planted large files: remove them", p, launchReadBudget>>20)
	}
	return nil
}

// readRegular is readRegular, charged to rb.
func (rb *readBudget) readRegular(p string, limit int64) ([]byte, error) {
	b, err := readRegular(p, limit) // limit is small (1 MiB): charged after

	if err == nil {
		err = rb.charge(p, int64(len(b)))
	}
	return b, err
}

// commitGuarded reports whether d is a git dir the launch's scan guards in commit mode
// (commitGitDirs); false for a nil rb.
func (rb *readBudget) commitGuarded(d string) bool {
	return rb != nil && rb.commitGitDirs[d]
}
