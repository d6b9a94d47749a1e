package cleanup

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
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
// a journal of the cleanup it owes: the entries, the trees they lie in, and who owes
// them (its own pid and start time, and the sandbox init's). The journal is removed
// once the cleanup is done; the next launch by the same user (any workspace) and
// `gosbx doctor` complete every journal whose launcher and init are both gone.
//
// A journal names paths to delete and symlinks to make, as the caller: it is carried
// out only when nothing a sandbox wrote can have made it. The directories are the
// caller's alone and outside every writable tree (dirs.go); each journal file must be
// the caller's, mode 0600, with one link, not a symlink; it must carry an HMAC-SHA256
// of its content under a per-user key (KeyDir()/key, 0600, made by the first launch
// that writes a journal), which no sandbox can read; and each entry must lie in a tree
// the journal names, a real directory of the caller's.

// A proc names a process across pid reuse: its pid and start time (clock ticks after
// boot, proc(5) /proc/PID/stat field 22).
type proc struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

type record struct {
	Owner proc `json:"owner"`
	Init  proc `json:"init"`
	// Trees are the host trees the sandbox could write (canonical): every entry lies
	// in one.
	Trees   []string `json:"trees"`
	Entries []Entry  `json:"entries"`
}

// signed is a journal file: the record's JSON and its HMAC-SHA256 under the key.
type signed struct {
	Record json.RawMessage `json:"record"`
	MAC    string          `json:"mac"`
}

// Journal is one launch's record of the cleanup it owes.
type Journal struct{ path string }

var journalSeq atomic.Uint64

const keyName = "key"

// journalKey reads the caller's journal key, creating it (32 random bytes, mode
// 0600) when create is set and there is none. It returns nil and no error when there
// is none and create is not set.
func journalKey(create bool) ([]byte, error) {
	dir := canonical(KeyDir())
	dfd, err := openJournalDir(dir, create)
	if err != nil || dfd < 0 {
		return nil, err
	}
	defer unix.Close(dfd)
	key, err := readSmall(dfd, keyName, 32)
	if errors.Is(err, unix.ENOENT) && create {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("make the cleanup journal key: %w", err)
		}
		tmp := fmt.Sprintf(".key-%d.tmp", os.Getpid())
		if err := writeAt(dfd, tmp, key); err != nil {
			return nil, fmt.Errorf("write the cleanup journal key in %s: %w", dir, err)
		}
		// linkat, not rename: a key another launch made meanwhile stays
		err = unix.Linkat(dfd, tmp, dfd, keyName, 0)
		unix.Unlinkat(dfd, tmp, 0)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("write the cleanup journal key in %s: %w", dir, err)
		}
		key, err = readSmall(dfd, keyName, 32)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the cleanup journal key %s: %w", filepath.Join(dir, keyName), err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("the cleanup journal key %s is not 32 bytes; remove it", filepath.Join(dir, keyName))
	}
	return key, nil
}

func mac(key, b []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// writeAt writes b to a new file name in dfd (mode 0600, never through a symlink)
// and syncs it.
func writeAt(dfd int, name string, b []byte) error {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = unix.Write(fd, b)
	if err == nil {
		err = unix.Fsync(fd)
	}
	unix.Close(fd)
	if err != nil {
		unix.Unlinkat(dfd, name, 0)
	}
	return err
}

// readSmall reads the file name in dfd: regular, never through a symlink or blocking
// on a FIFO, the caller's, no access for group or others, one link (not a name of a
// file that lives elsewhere too), at most max bytes.
func readSmall(dfd int, name string, max int64) ([]byte, error) {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, errors.New("not a regular file")
	case int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("owned by uid %d, not the caller", st.Uid)
	case st.Mode&0o077 != 0:
		return nil, fmt.Errorf("mode %o gives access to others", st.Mode&0o7777)
	case st.Nlink != 1:
		return nil, fmt.Errorf("has %d hard links", st.Nlink)
	case st.Size > max:
		return nil, fmt.Errorf("larger than %d bytes", max)
	}
	b := make([]byte, st.Size)
	n, err := unix.Pread(fd, b, 0)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// BeginJournal records, atomically (a temporary file renamed into place), that this
// process owes entries for the sandbox whose init is initPid. writable are the host
// trees the sandbox can write: a journal or key directory in one is refused
// (CheckOutside), and so is an entry outside them.
func BeginJournal(entries []Entry, initPid int, writable []string) (*Journal, error) {
	if err := CheckOutside(writable); err != nil {
		return nil, err
	}
	var trees []string
	for _, w := range writable {
		trees = append(trees, canonical(w))
	}
	for _, e := range entries {
		if !inTrees(e.Path, trees) {
			return nil, fmt.Errorf("cleanup entry %s lies in no tree the sandbox can write", e.Path)
		}
	}
	key, err := journalKey(true)
	if err != nil {
		return nil, err
	}
	dir := canonical(JournalDir())
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
	rb, _ := json.Marshal(record{Owner: self, Init: init, Trees: trees, Entries: entries})
	b, _ := json.Marshal(signed{Record: rb, MAC: mac(key, rb)})
	name := fmt.Sprintf("%d-%d-%d.json", self.Pid, self.Start, journalSeq.Add(1))
	tmp := "." + name + ".tmp"
	werr := writeAt(dfd, tmp, b)
	if werr == nil {
		if werr = unix.Renameat(dfd, tmp, dfd, name); werr != nil {
			unix.Unlinkat(dfd, tmp, 0)
		}
	}
	if werr != nil {
		return nil, fmt.Errorf("write the cleanup journal in %s: %w", dir, werr)
	}
	return &Journal{path: filepath.Join(dir, name)}, nil
}

// inTrees reports whether p lies strictly inside one of trees, or is one.
func inTrees(p string, trees []string) bool {
	for _, t := range trees {
		if t != "/" && within(p, t) {
			return true
		}
	}
	return false
}

// Done removes the journal: its cleanup was carried out. A nil *Journal is none.
func (j *Journal) Done() {
	if j != nil {
		os.Remove(j.path)
	}
}

// CompleteJournals carries out the cleanup of every journal in the caller's journal
// directory whose launcher and init are both gone, then removes it. writable are the
// host trees the launch that calls it will let its sandbox write (nil for none): a
// journal or key directory in one is refused with an error, and nothing is done. It
// returns the paths removed and what could not be ("path: reason", including journals
// refused: not the caller's, not authentic, or naming a path outside their trees;
// those are removed).
func CompleteJournals(writable []string) (removed, failed []string, err error) {
	if err := CheckOutside(writable); err != nil {
		return nil, nil, err
	}
	dir := canonical(JournalDir())
	dfd, err := openJournalDir(dir, false)
	if err != nil {
		return nil, nil, err
	}
	if dfd < 0 {
		return nil, nil, nil
	}
	f := os.NewFile(uintptr(dfd), dir)
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	var key []byte
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		if key == nil {
			if key, err = journalKey(false); err != nil {
				return nil, nil, err
			}
		}
		rec, err := readJournal(dfd, n, key)
		if err != nil {
			// not one this user's launches wrote: never carried out, removed so that
			// it is reported once
			unix.Unlinkat(dfd, n, 0)
			failed = append(failed, filepath.Join(dir, n)+": refused and removed: "+err.Error())
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
	return removed, failed, nil
}

// readJournal reads and checks one journal file (readSmall: the caller's, mode 0600,
// one link, at most 4 MiB): its MAC under key, its entries' paths absolute and clean,
// each in one of its trees, and each tree a real directory (no symlink on its path)
// of the caller's (any owner for root, whose workspaces may be its users').
func readJournal(dfd int, name string, key []byte) (record, error) {
	var rec record
	b, err := readSmall(dfd, name, 4<<20)
	if err != nil {
		return rec, err
	}
	var sg signed
	if err := json.Unmarshal(b, &sg); err != nil {
		return rec, err
	}
	if key == nil || !hmac.Equal([]byte(mac(key, sg.Record)), []byte(sg.MAC)) {
		return rec, errors.New("not authentic (its HMAC does not match this user's journal key)")
	}
	if err := json.Unmarshal(sg.Record, &rec); err != nil {
		return rec, err
	}
	for _, t := range rec.Trees {
		var st unix.Stat_t
		switch {
		case !filepath.IsAbs(t) || filepath.Clean(t) != t || t == "/":
			return rec, fmt.Errorf("tree %q is not absolute and clean", t)
		case canonical(t) != t:
			continue // reached through a symlink now: nothing in it is touched
		case unix.Lstat(t, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR:
			continue
		case os.Geteuid() != 0 && int(st.Uid) != os.Geteuid():
			return rec, fmt.Errorf("tree %s belongs to uid %d, not the caller", t, st.Uid)
		}
	}
	for _, e := range rec.Entries {
		if err := e.Check(); err != nil {
			return rec, err
		}
		if !inTrees(e.Path, rec.Trees) {
			return rec, fmt.Errorf("entry path %s lies in none of the journal's trees", e.Path)
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
