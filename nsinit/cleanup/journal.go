package cleanup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The after-run cleanup must not depend on the process that launched the sandbox
// surviving it (a harness's SIGKILL, the OOM killer), nor on the sandbox's own init
// (which the command may have crippled). Before the command may run, the launcher writes
// a journal of the cleanup it owes: the entries, and who owes them (its own pid and
// start time, and the sandbox init's). The journal is removed once the cleanup is done;
// the next launch by the same user (any workspace) and `gosbx doctor` complete every
// journal whose launcher and init are both gone.
//
// The journal directory is the caller's alone, outside every tree a sandbox can write
// (a journal names paths to delete): $XDG_RUNTIME_DIR/gosbx for a caller that has one,
// /run/gosbx for root, else /tmp/gosbx-UID; mode 0700, owned by the caller, never
// reached through a symlink.

// A proc names a process across pid reuse: its pid and start time (clock ticks after
// boot, proc(5) /proc/PID/stat field 22).
type proc struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

type record struct {
	Owner   proc    `json:"owner"`
	Init    proc    `json:"init"`
	Entries []Entry `json:"entries"`
}

// Journal is one launch's record of the cleanup it owes.
type Journal struct{ path string }

var journalSeq atomic.Uint64

// JournalDir is the caller's journal directory (not created).
func JournalDir() string {
	uid := os.Geteuid()
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		var st unix.Stat_t
		if unix.Lstat(x, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == uid && st.Mode&0o077 == 0 {
			return filepath.Join(x, "gosbx")
		}
	}
	if uid == 0 {
		return "/run/gosbx"
	}
	return "/tmp/gosbx-" + strconv.Itoa(uid)
}

// openJournalDir opens dir (creating it, mode 0700, when create is set) and checks that
// it is a directory of the caller's alone: not a symlink, owned by the effective uid,
// no access for group or others. It returns -1 and no error when dir does not exist
// and create is not set.
func openJournalDir(dir string, create bool) (int, error) {
	if create {
		if err := unix.Mkdir(dir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("create the cleanup journal directory %s: %w", dir, err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && !create {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open the cleanup journal directory %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("stat the cleanup journal directory %s: %w", dir, err)
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(fd)
		return -1, fmt.Errorf("the cleanup journal directory %s is not the caller's alone (owner %d, mode %o); remove it", dir, st.Uid, st.Mode&0o7777)
	}
	return fd, nil
}

// BeginJournal records, atomically (a temporary file renamed into place), that this
// process owes entries for the sandbox whose init is initPid. writable are the host
// trees the sandbox can write: a journal directory inside one is refused.
func BeginJournal(entries []Entry, initPid int, writable []string) (*Journal, error) {
	dir := JournalDir()
	for _, w := range writable {
		if dir == w || strings.HasPrefix(dir, w+"/") || w == "/" {
			return nil, fmt.Errorf("the cleanup journal directory %s lies in %s, which the sandbox can write; set XDG_RUNTIME_DIR to a directory of your own outside it", dir, w)
		}
	}
	dfd, err := openJournalDir(dir, true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	self, err := procOf(os.Getpid())
	if err != nil {
		return nil, err
	}
	init, err := procOf(initPid)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(record{Owner: self, Init: init, Entries: entries})
	name := fmt.Sprintf("%d-%d-%d.json", self.Pid, self.Start, journalSeq.Add(1))
	tmp := "." + name + ".tmp"
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write the cleanup journal in %s: %w", dir, err)
	}
	_, werr := unix.Write(fd, b)
	if werr == nil {
		werr = unix.Fsync(fd)
	}
	unix.Close(fd)
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, name)
	}
	if werr != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return nil, fmt.Errorf("write the cleanup journal in %s: %w", dir, werr)
	}
	return &Journal{path: filepath.Join(dir, name)}, nil
}

// Done removes the journal: its cleanup was carried out. A nil *Journal is none.
func (j *Journal) Done() {
	if j != nil {
		os.Remove(j.path)
	}
}

// CompleteJournals carries out the cleanup of every journal in the caller's journal
// directory whose launcher and init are both gone, then removes it. It returns the
// paths removed and what could not be ("path: reason", including journals it could not
// read).
func CompleteJournals() (removed, failed []string) {
	dir := JournalDir()
	dfd, err := openJournalDir(dir, false)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if dfd < 0 {
		return nil, nil
	}
	f := os.NewFile(uintptr(dfd), dir)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		rec, err := readJournal(dfd, n)
		if err != nil {
			failed = append(failed, filepath.Join(dir, n)+": "+err.Error())
			continue
		}
		if alive(rec.Owner) || alive(rec.Init) {
			continue
		}
		r, fl := Run(rec.Entries)
		removed, failed = append(removed, r...), append(failed, fl...)
		if len(fl) == 0 {
			unix.Unlinkat(dfd, n, 0)
		}
	}
	return removed, failed
}

// readJournal reads one journal file: regular, the caller's, at most 4 MiB, never
// through a symlink or blocking on a FIFO.
func readJournal(dfd int, name string) (record, error) {
	var rec record
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return rec, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return rec, err
	}
	if !st.Mode().IsRegular() || st.Size() > 4<<20 {
		return rec, errors.New("not a regular file of at most 4 MiB")
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, err
	}
	for _, e := range rec.Entries {
		if !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path || e.Path == "/" {
			return rec, fmt.Errorf("entry path %q is not absolute and clean", e.Path)
		}
	}
	return rec, nil
}

// procOf reads pid's start time.
func procOf(pid int) (proc, error) {
	start, _, err := procStat(pid)
	if err != nil {
		return proc{}, fmt.Errorf("read the start time of process %d: %w", pid, err)
	}
	return proc{Pid: pid, Start: start}, nil
}

// alive reports whether p still runs: the same pid with the same start time, not a
// zombie. A pid of 0 is nobody.
func alive(p proc) bool {
	if p.Pid <= 0 {
		return false
	}
	start, state, err := procStat(p.Pid)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

// procStat reads the state and start time of pid from /proc/PID/stat (proc(5)); the
// command name, in parentheses, may hold spaces and parentheses itself.
func procStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); field 22 (starttime) is fields[19]
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0, errors.New("malformed /proc stat")
	}
	start, err = strconv.ParseUint(fields[19], 10, 64)
	return start, fields[0][0], err
}
