package cleanup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rundir"
)

// The after-run cleanup must not depend on the process that launched the sandbox
// surviving it (a harness's SIGKILL, the OOM killer), nor on the sandbox's own init
// (which the command may have crippled). Before the command may run, the launcher writes
// a journal of the cleanup it owes: the entries, the trees they lie in, and who owes
// them (its own pid and start time, and the sandbox init's). The journal is removed
// once the launcher has run the cleanup, whatever it reported; the next launch by the
// same user (any workspace) and `gosbx doctor` complete, once, every journal whose
// launcher and init are both gone, as far as it stays true (replay.go).
//
// A journal names paths to delete and symlinks to make, as the caller: it is carried
// out only when nothing a sandbox wrote can have made it. The directories are the
// caller's alone and outside every writable tree (dirs.go); each journal file must be
// the caller's, mode 0600, with one link, not a symlink; a copy of it, its seal, must
// lie in the seal directory (KeyDir()/sealed: root's is /run/gosbx/sealed whatever
// the environment, which no sandbox can reach), byte for byte; and each entry must lie
// in a tree the journal names, a real directory of the caller's. A seal, not a MAC:
// the hash would link the FIPS crypto module into every start (TestStartPathDeps), and
// a sandbox that can read neither directory can forge neither.

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

// Journal is one launch's record of the cleanup it owes: the journal file and its seal.
type Journal struct{ path, seal string }

var journalSeq atomic.Uint64

// sealDir is the directory of the caller's journal seals (not created).
func sealDir() string { return filepath.Join(canonical(KeyDir()), "sealed") }

// openSealDir opens the seal directory (and the key directory above it, created when
// create is set), checked as openJournalDir checks. -1 and no error: there is none.
func openSealDir(create bool) (int, error) {
	kfd, err := openJournalDir(KeyDir(), create)
	if err != nil || kfd < 0 {
		return -1, err
	}
	unix.Close(kfd)
	return openJournalDir(sealDir(), create)
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
		return nil, fmt.Errorf("owned by %s, not the caller", rundir.Owner(st.Uid))
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

// BeginJournal records, atomically (temporary files renamed into place), that this
// process owes entries for the sandbox whose init is initPid: the journal, and its
// seal. writable are the host trees the sandbox can write: a journal or key directory
// in one is refused (CheckOutside). Only entries inside one of them are journaled (a
// sandbox changes nothing elsewhere; the launcher and the init still carry out all).
func BeginJournal(entries []Entry, initPid int, writable []string) (*Journal, error) {
	if err := CheckOutside(writable); err != nil {
		return nil, err
	}
	var trees []string
	for _, w := range writable {
		trees = append(trees, canonical(w))
	}
	var owed []Entry
	for _, e := range entries {
		if inTrees(e.Path, trees) {
			owed = append(owed, e)
		}
	}
	if len(owed) == 0 {
		return nil, nil
	}
	sfd, err := openSealDir(true)
	if err != nil {
		return nil, err
	}
	defer unix.Close(sfd)
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
	rec := record{Owner: self, Init: init, Trees: trees, Entries: owed}
	mapStrings(&rec, func(s string) (string, bool) { return journalString(s), true })
	b, _ := json.Marshal(rec)
	name := fmt.Sprintf("%d-%d-%d.json", self.Pid, self.Start, journalSeq.Add(1))
	// the seal first: a journal without one is never carried out
	for _, d := range []struct {
		fd  int
		dir string
	}{{sfd, sealDir()}, {dfd, dir}} {
		tmp := "." + name + ".tmp"
		werr := writeAt(d.fd, tmp, b)
		if werr == nil {
			if werr = unix.Renameat(d.fd, tmp, d.fd, name); werr != nil {
				unix.Unlinkat(d.fd, tmp, 0)
			}
		}
		if werr != nil {
			unix.Unlinkat(sfd, name, 0)
			return nil, fmt.Errorf("write the cleanup journal in %s: %w", d.dir, werr)
		}
	}
	return &Journal{path: filepath.Join(dir, name), seal: filepath.Join(sealDir(), name)}, nil
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

// Done removes the journal and its seal: its cleanup was carried out. A nil *Journal
// is none.
func (j *Journal) Done() {
	if j != nil {
		os.Remove(j.path)
		os.Remove(j.seal)
	}
}

// CompleteJournals completes, once, the cleanup of every journal in the caller's journal
// directory whose launcher and init are both gone (killed before their after-run
// cleanup): it removes the journal and its seal, then carries out what stays true of it
// (replay) and reports the rest as not completed.
// writable are the host trees the launch that calls it will let its sandbox write (nil
// for none): a journal or key directory in one is refused with an error, and nothing is
// done. It returns the paths removed and what could not be ("path: reason", including
// journals refused: not the caller's, hard-linked, without their seal, naming a path
// outside their trees; those are removed). A journal whose name (PID-START-SEQ.json)
// names a launcher that still runs is not read: it is checked, and refused or
// completed, once that process is gone.
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
	if testHookListed != nil {
		testHookListed(names)
	}
	sfd := -2 // not opened yet
	defer func() {
		if sfd >= 0 {
			unix.Close(sfd)
		}
	}()
	for _, n := range names {
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") {
			continue
		}
		if o, ok := ownerOfName(n); ok && alive(o) {
			// its launcher still runs (the name says who wrote it, as BeginJournal names
			// it): nothing is owed yet, and its file is not read (every launch paid a
			// JSON decoding and its checks for each live sandbox). A forged name, made by
			// this user's own processes (no sandbox reaches this directory), only delays
			// its refusal until the process it names is gone.
			continue
		}
		if sfd == -2 {
			if sfd, err = openSealDir(false); err != nil {
				return nil, nil, err
			}
		}
		rec, err := readJournal(dfd, sfd, n)
		if err != nil && gone(dfd, n) {
			// its launcher's Done, or another launch's CompleteJournals, removed it since
			// the listing (the journal goes before its seal): nothing is owed, nothing to say
			continue
		}
		if err != nil {
			// not as this user's launches wrote it: never carried out, removed so that
			// it is reported once
			unix.Unlinkat(dfd, n, 0)
			if sfd >= 0 {
				unix.Unlinkat(sfd, n, 0)
			}
			failed = append(failed, filepath.Join(dir, n)+": refused and removed: "+err.Error())
			continue
		}
		if alive(rec.Owner) || alive(rec.Init) {
			continue
		}
		// at most once: removed before its replay, so that a replay that fails, or
		// is killed, is never run again against a later state (attack review 31 F2)
		unix.Unlinkat(dfd, n, 0)
		unix.Unlinkat(sfd, n, 0)
		r, fl := replay(rec.Entries)
		removed, failed = append(removed, r...), append(failed, fl...)
	}
	return removed, failed, nil
}

// ownerOfName is the launcher a journal's name PID-START-SEQ.json (BeginJournal)
// names; ok is false for any other name.
func ownerOfName(name string) (p proc, ok bool) {
	rest, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return p, false
	}
	pid, rest, ok1 := strings.Cut(rest, "-")
	start, seq, ok2 := strings.Cut(rest, "-")
	if !ok1 || !ok2 {
		return p, false
	}
	n, err1 := strconv.Atoi(pid)
	st, err2 := strconv.ParseUint(start, 10, 64)
	_, err3 := strconv.ParseUint(seq, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n <= 0 {
		return p, false
	}
	return proc{Pid: n, Start: st}, true
}

// testHookListed, when set by a test, runs between the listing of the journal
// directory and the reading of its journals (where a concurrent launch's Done lands).
var testHookListed func(names []string)

// gone reports whether name no longer exists in the directory dfd.
func gone(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == unix.ENOENT
}

// readJournal reads and checks the journal file name of the directory dfd (readSmall:
// the caller's, mode 0600, one link, at most 4 MiB): its seal in sfd (-1: none) holds
// the same bytes; its entries' paths are absolute and clean, each in one of its trees;
// and each tree is a real directory (no symlink on its path) of the caller's (any
// owner for root, whose workspaces may be its users').
func readJournal(dfd, sfd int, name string) (record, error) {
	var rec record
	b, err := readSmall(dfd, name, 4<<20)
	if err != nil {
		return rec, err
	}
	var seal []byte
	if sfd >= 0 {
		seal, err = readSmall(sfd, name, 4<<20)
	}
	if sfd < 0 || err != nil || !bytes.Equal(b, seal) {
		why := "none"
		if err != nil {
			why = err.Error()
		} else if seal != nil {
			why = "different content"
		}
		return rec, fmt.Errorf("no launch of this user wrote it: its seal in %s: %s", sealDir(), why)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, err
	}
	if !mapStrings(&rec, fromJournal) {
		return rec, fmt.Errorf("a name's bytes (base64 after a NUL) do not decode")
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
			return rec, fmt.Errorf("tree %s belongs to %s, not the caller", t, rundir.Owner(st.Uid))
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
	b, err := readProcStat("/proc/" + strconv.Itoa(pid) + "/stat")
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

// readProcStat is os.ReadFile(name) for a /proc/PID/stat file (same bytes, same
// errors), without os.File's fstat and poller try: every launch reads one for each
// journal whose launcher may be gone.
func readProcStat(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	for err == unix.EINTR {
		fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512) // a stat line is ~300 bytes
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
