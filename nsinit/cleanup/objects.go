package cleanup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Bounds of the after-run check of loose objects (VerifyObjects): the inflated bytes
// hashed in all, and the entries of one fan-out directory looked at. inflate runs at about 20-30 MB/s here (bits
// decoded one at a time): 256 MiB is some 10 s at worst, a run that wrote that much.
const (
	MaxVerifyBytes   = 256 << 20
	maxFanoutEntries = 1 << 20
	// MaxVerifyObjects bounds the objects checked (some 1.6 s for 100 000 small ones
	// here): past it, or past MaxVerifyBytes, a recent object is reported unchecked.
	MaxVerifyObjects = 100000
)

// errOverBudget is checkObject's error for an object whose header declares more bytes
// than are left to check: not inflated (a zip bomb of 300 KB declaring 300 MB spent
// the whole budget; attack review 31 F1).
var errOverBudget = errors.New("over budget")

// verifyObjects checks the loose objects of the object directory dir (a git dir's
// objects/) that the command may have written: every object file whose ctime or mtime
// is at or after since (ns; a command cannot set a file's ctime back, and writing,
// renaming or linking one moves it), and every object of a fan-out directory whose
// ctime or mtime is (a rename into it). Each is inflated and hashed as git names it
// ("<type> <size>\0<data>", SHA-1 or SHA-256 by hashLen) and moved aside when that is
// not its name, when it is not a regular file, or when it does not parse: git does not
// hash an object when it reads it, so an object rewritten in place would be checked
// out by the host's next git checkout or reset --hard (attack review 29 F15). Packs
// not as they were at launch (packs: name and Stamp each) are verified against their
// indexes (packsChanged), and the caches git derives from packs and commits
// (multi-pack-index, .rev, .bitmap, commit-graph) written since are moved aside. Only
// a proven mismatch is moved aside: an object past the bounds (MaxVerifyBytes read and
// inflated, charged by its header's size before it is inflated; MaxVerifyObjects), or
// one that cannot be read, is reported unchecked and left (attack review 32 F3, F5).
// Each file (st_dev, st_ino) is checked once. It returns "path: object moved aside to
// … (why)" per object moved and, in failed, what it could not check.
func verifyObjects(dir string, hashLen int, since int64, packs []Stamp) (removed, failed []string) {
	dfd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	defer unix.Close(dfd)
	budget, count := int64(MaxVerifyBytes), 0
	run := &verifyRun{budget: &budget, count: &count, hashed: maxPackHashed, loose: map[ID]string{}, packs: map[[2]ID]string{}}
	recent := func(st *unix.Stat_t) bool { return st.Ctim.Nano() >= since || st.Mtim.Nano() >= since }
	for i := 0; i < 256; i++ {
		fan := fmt.Sprintf("%02x", i)
		var dst unix.Stat_t
		if err := unix.Fstatat(dfd, fan, &dst, unix.AT_SYMLINK_NOFOLLOW); err != nil || dst.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue // none; a symlink is RemoveSpecialUnder's
		}
		ffd, err := unix.Openat(dfd, fan, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EACCES) && ownerRWX(dfd, fan) == nil {
			// the command made it unreadable (chmod 0311), which git's own search
			// permission gets through: the owner's (the caller's) rwx back, and
			// checked, not only reported (attack review 31 F3); u+rwx is as git
			// makes a fan-out
			ffd, err = unix.Openat(dfd, fan, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			failed = report(failed, filepath.Join(dir, fan)+": the objects in it are not checked: "+err.Error())
			continue
		}
		f := os.NewFile(uintptr(ffd), fan)
		all := recent(&dst)
		n := 0
		err = eachName(f, func(name string) {
			if n++; n > maxFanoutEntries || len(name) != 2*hashLen-2 || !isHex(name) {
				return
			}
			p := filepath.Join(dir, fan, name)
			var st unix.Stat_t
			if err := unix.Fstatat(ffd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				failed = report(failed, p+": not checked: "+err.Error())
				return
			}
			if !all && !recent(&st) {
				return
			}
			why := ""
			// past a bound, reported unchecked, never moved aside: only a proven
			// mismatch is (attack review 32 F5: the user's own 257 MiB blob, written
			// after a killed launcher, was moved aside unchecked by the replay)
			unchecked := fmt.Sprintf(": not checked: it could not be checked within gosbx's bounds (%d MiB inflated, %d objects a run): run git fsck", MaxVerifyBytes>>20, MaxVerifyObjects)
			id := IDOf(&st)
			sum, seen := run.loose[id]
			if count++; st.Mode&unix.S_IFMT != unix.S_IFREG {
				why = "not a regular file"
			} else if seen && sum != "" && sum != fan+name {
				// a hard link of a file checked once: its content hashes to the other
				// name (attack review 32 F8: links made each a new object to inflate)
				why = "its content does not hash to its name"
			} else if seen {
				if sum == "" {
					failed = report(failed, p+unchecked)
				}
				return
			} else if budget <= 0 || count > MaxVerifyObjects {
				failed = report(failed, p+unchecked)
				return
			} else if why, sum, err = checkObject(ffd, name, fan+name, hashLen, &budget); errors.Is(err, errOverBudget) {
				run.loose[id] = ""
				failed = report(failed, p+unchecked)
				return
			} else if err != nil {
				failed = report(failed, p+": not checked: "+err.Error())
				return
			}
			if !seen {
				run.loose[id] = sum
			}
			if why == "" {
				return
			}
			did, err := moveAside(ffd, name, p)
			if err != nil {
				failed = report(failed, p+": "+why+"; moving it aside: "+err.Error())
				return
			}
			removed = report(removed, p+": object "+did+" ("+why+")")
		})
		if err == nil && n > maxFanoutEntries {
			err = fmt.Errorf("more than %d entries", maxFanoutEntries)
		}
		if err != nil {
			failed = report(failed, filepath.Join(dir, fan)+": not all its objects are checked: "+err.Error())
		}
		f.Close()
	}
	r, f := packsChanged(dfd, dir, packs, hashLen, run)
	removed, failed = append(removed, r...), append(failed, f...)
	r, f = commitGraphsChanged(dfd, dir, recent)
	return append(removed, r...), append(failed, f...)
}

// commitGraphsChanged moves aside the commit-graph files of the object directory dir
// (dfd) that may have been written during the run (recent): info/commit-graph, and the
// files of info/commit-graphs with its chain. They are caches git works without
// (gitformat-commit-graph(5)) and reads before the commits themselves (attack review
// 32 F6's class: a cache the command writes is what the host's git believes).
func commitGraphsChanged(dfd int, dir string, recent func(*unix.Stat_t) bool) (removed, failed []string) {
	ifd, err := unix.Openat(dfd, "info", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	defer unix.Close(ifd)
	aside := func(fd int, name, p string) {
		did, err := moveAside(fd, name, p)
		if err != nil {
			failed = report(failed, p+": a commit-graph, new or changed during the run; moving it aside: "+err.Error())
			return
		}
		removed = report(removed, p+": "+did+" (a commit-graph, new or changed during the run: git works without it, and git commit-graph write makes it anew)")
	}
	var st unix.Stat_t
	if unix.Fstatat(ifd, "commit-graph", &st, unix.AT_SYMLINK_NOFOLLOW) == nil && recent(&st) {
		aside(ifd, "commit-graph", filepath.Join(dir, "info", "commit-graph"))
	}
	if unix.Fstatat(ifd, "commit-graphs", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return removed, failed
	}
	all := recent(&st)
	gfd, err := unix.Openat(ifd, "commit-graphs", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return removed, append(failed, filepath.Join(dir, "info", "commit-graphs")+": not checked: "+err.Error())
	}
	f := os.NewFile(uintptr(gfd), "commit-graphs")
	defer f.Close()
	var moved []string
	n := 0
	err = eachName(f, func(name string) {
		var st unix.Stat_t
		if n++; n <= maxFanoutEntries && (all || unix.Fstatat(gfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || recent(&st)) {
			moved = append(moved, name)
		}
	})
	if err == nil && n > maxFanoutEntries {
		err = fmt.Errorf("more than %d entries", maxFanoutEntries) // the rest is not checked: said
	}
	if err != nil {
		failed = report(failed, filepath.Join(dir, "info", "commit-graphs")+": not all checked: "+err.Error())
	}
	if len(moved) > 0 && !slices.Contains(moved, "commit-graph-chain") {
		moved = append(moved, "commit-graph-chain") // a chain naming a file moved aside
	}
	for _, name := range moved {
		if unix.Fstatat(gfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			aside(gfd, name, filepath.Join(dir, "info", "commit-graphs", name))
		}
	}
	return removed, failed
}

// packsChanged checks the files of dir/pack that are not what packs says they were at
// launch (new, or another file by the name): each such <x>.idx or <x>.pack is verified
// (verifyPack, within run's bounds) and both are moved aside when an object does not
// hash to its name, "path: object moved aside to … (why)" in removed; a changed pack
// cache (isPackCache) is moved aside. What is left unchecked (past the bounds,
// unreadable, a v1 index) is reported as "dir/pack: not checked, new or changed during
// the run: names".
func packsChanged(dfd int, dir string, packs []Stamp, hashLen int, run *verifyRun) (removed, failed []string) {
	pfd, err := unix.Openat(dfd, "pack", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil // none, or a symlink (RemoveSpecialUnder's)
	}
	f := os.NewFile(uintptr(pfd), "pack")
	defer f.Close()
	was := map[string]Stamp{}
	for _, s := range packs {
		was[s.Name] = s
	}
	var changed []string
	err = eachName(f, func(name string) {
		// tmp_* too: git loads any <x>.idx with its <x>.pack, whatever the prefix
		// (attack review 31 F4); one of git's own in-flight temporary files is only
		// left by a git that was interrupted
		var st unix.Stat_t
		if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || was[name] != stampOf(name, &st) {
			changed = append(changed, name)
		}
	})
	if err != nil {
		changed = append(changed, "(the directory could not be read: "+err.Error()+")")
	}
	checked := map[string]bool{}
	var bases []string
	isChanged := map[string]bool{}
	for _, name := range changed {
		isChanged[name] = true
	}
	for _, name := range changed {
		if isPackCache(name) {
			// a cache of the packs, which git reads before them (a multi-pack-index
			// maps an id to any pack's offset: attack review 32 F6) and works without
			p := filepath.Join(dir, "pack", name)
			did, err := moveAside(pfd, name, p)
			if err != nil {
				failed = report(failed, p+": a cache of the packs, new or changed during the run; moving it aside: "+err.Error())
			} else {
				removed = report(removed, p+": "+did+" (a cache of the packs, new or changed during the run: git works without it, and git repack or multi-pack-index write makes it anew)")
			}
			checked[name] = true
			continue
		}
		// a changed .pack is checked against its index even when that is as at launch
		// (attack review 32 F7: a pack rewritten in place, trailer kept)
		if base, ok := strings.CutSuffix(name, ".idx"); ok {
			bases = append(bases, base)
		} else if base, ok := strings.CutSuffix(name, ".pack"); ok && !isChanged[base+".idx"] {
			bases = append(bases, base)
		}
	}
	for _, base := range bases {
		name := base + ".idx"
		p := filepath.Join(dir, "pack", name)
		why, err := checkPack(pfd, name, base+".pack", hashLen, run)
		if err != nil {
			continue
		}
		checked[name], checked[base+".pack"] = true, true
		if why == "" {
			continue
		}
		for _, n := range []string{name, base + ".pack"} {
			did, err := moveAside(pfd, n, filepath.Join(dir, "pack", n))
			if err != nil {
				failed = report(failed, p+": "+why+"; moving it aside: "+err.Error())
				continue
			}
			removed = report(removed, filepath.Join(dir, "pack", n)+": object "+did+" ("+why+")")
		}
	}
	var left []string
	for _, n := range changed {
		if !checked[n] && len(left) <= 20 {
			left = append(left, n)
		}
	}
	if len(left) == 0 {
		return removed, failed
	}
	return removed, append(failed, filepath.Join(dir, "pack")+": not checked, new or changed during the run: "+strings.Join(left, ", "))
}

// isPackCache reports whether name (in objects/pack) is a file git only derives from the
// packs (gitformat-pack(5), gitformat-bitmap): a multi-pack-index (and its .bitmap,
// .rev), a pack's reverse index, bitmap, or cruft mtimes.
func isPackCache(name string) bool {
	return strings.HasPrefix(name, "multi-pack-index") || strings.HasSuffix(name, ".rev") ||
		strings.HasSuffix(name, ".bitmap") || strings.HasSuffix(name, ".mtimes")
}

// maxPackIndex bounds a pack index read whole (MaxVerifyObjects entries of SHA-256
// are some 4 MiB).
const maxPackIndex = 16 << 20

// checkPack verifies the pack index idx of the directory pfd against its pack file
// (verifyPack): why it is bad, or an error when it could not be checked.
func checkPack(pfd int, idx, pack string, hashLen int, run *verifyRun) (string, error) {
	ifd, err := unix.Openat(pfd, idx, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	fi := os.NewFile(uintptr(ifd), idx)
	defer fi.Close()
	var st unix.Stat_t
	if err := unix.Fstat(ifd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxPackIndex {
		return "", errors.New("not a regular file gosbx reads whole")
	}
	idxID := IDOf(&st)
	b := make([]byte, st.Size)
	if _, err := io.ReadFull(fi, b); err != nil {
		return "", err
	}
	pfd2, err := unix.Openat(pfd, pack, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err // no pack: git does not load the index either
	}
	fp := os.NewFile(uintptr(pfd2), pack)
	defer fp.Close()
	if err := unix.Fstat(pfd2, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", errors.New("not a regular file")
	}
	// each pair of files checked once (attack review 32 F4: hard links of one small
	// delta-bomb pack each cost seconds of CPU)
	key := [2]ID{idxID, IDOf(&st)}
	if why, ok := run.packs[key]; ok {
		if why == "\x00" {
			return "", errors.New("a hard link of a pack not checked")
		}
		return why, nil
	}
	why, err := verifyPack(b, fp, st.Size, hashLen, run.budget, run.count, &run.hashed)
	if err != nil {
		why = "\x00"
	}
	run.packs[key] = why
	if err != nil {
		return "", err
	}
	return why, nil
}

// verifyRun is what one VerifyObjects run shares across its loose objects and packs
// (attack review 32 F4, F8): the inflated and read bytes (budget), the objects
// (count), the bytes deltas may rebuild (hashed, maxPackHashed for the whole run), and
// what each file (by st_dev, st_ino) was found to be: a loose object's hash ("" not
// checked), a pack's verdict ("\x00" not checked).
type verifyRun struct {
	budget *int64
	count  *int
	hashed int64
	loose  map[ID]string
	packs  map[[2]ID]string
}

// PackStamps returns the Stamps of the entries of the object directory dir's pack/
// (for VerifyObjects' Was); none when it has none.
func PackStamps(dir string) ([]Stamp, error) {
	f, err := os.Open(filepath.Join(dir, "pack"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Stamp
	err = eachName(f, func(name string) {
		var st unix.Stat_t
		if len(out) < 100000 && unix.Fstatat(int(f.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			out = append(out, stampOf(name, &st))
		}
	})
	return out, err
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// maxHeaderInput bounds the compressed bytes read to find a loose object's header: git's
// zlib puts its first 64 inflated bytes in the first few dozen (attack review 32 F8: a
// file of empty deflate blocks was read whole, for free, by the header pass).
const maxHeaderInput = 64 << 10

// checkObject inflates the loose object name in dir fd and returns why it is bad ("":
// it hashes to hexName) and, when it was hashed whole, its hash in hex; it takes what
// it read (the file's size) and hashed from *budget. An error is a file it could not
// read, or errOverBudget.
func checkObject(fd int, name, hexName string, hashLen int, budget *int64) (string, string, error) {
	ofd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", "", err
	}
	f := os.NewFile(uintptr(ofd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil {
		return "", "", err
	}
	// the header first: the size it declares is charged before the rest is inflated
	h := &objectHash{d: newDigest(hashLen)}
	err = inflate(byteReader(f, min(st.Size, maxHeaderInput)), h, 64)
	switch {
	case h.bad != "":
		return h.bad, "", nil
	case h.head == nil && st.Size > maxHeaderInput:
		return "", "", errOverBudget // not git's zlib: not checked
	case h.head == nil && err != nil && !errors.Is(err, errInflateLimit):
		return "it does not inflate: " + err.Error(), "", nil
	case h.head == nil:
		return "its header is not git's", "", nil
	}
	need := h.want + int64(len(h.head))
	if need+st.Size > *budget {
		return "", "", errOverBudget
	}
	*budget -= st.Size // what is read, as well as what is inflated
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", "", err
	}
	h = &objectHash{d: newDigest(hashLen)}
	err = inflate(byteReader(f, st.Size), h, need)
	*budget -= h.n
	if errors.Is(err, errInflateLimit) {
		return "its size is not the one its header says", "", nil
	}
	if err != nil {
		return "it does not inflate: " + err.Error(), "", nil
	}
	if h.bad != "" {
		return h.bad, "", nil
	}
	if h.want != h.n-int64(len(h.head)) || h.head == nil {
		return "its size is not the one its header says", "", nil
	}
	sum := hex.EncodeToString(h.d.Sum())
	if sum != hexName {
		return "its content does not hash to its name", sum, nil
	}
	return "", sum, nil
}

// objectHash hashes an inflated loose object and reads its header "<type> <size>\0".
type objectHash struct {
	d    *digest
	n    int64
	head []byte // the header with its NUL, once read
	buf  []byte
	want int64
	bad  string
}

func (o *objectHash) Write(p []byte) (int, error) {
	o.d.Write(p)
	o.n += int64(len(p))
	if o.head == nil && o.bad == "" {
		o.buf = append(o.buf, p[:min(len(p), 64)]...)
		if i := bytes.IndexByte(o.buf, 0); i >= 0 {
			o.head = o.buf[:i+1]
			typ, size, _ := strings.Cut(string(o.buf[:i]), " ")
			v, err := strconv.ParseInt(size, 10, 64)
			if (typ != "blob" && typ != "tree" && typ != "commit" && typ != "tag") || err != nil || v < 0 {
				o.bad = "its header is not git's"
			}
			o.want = v
		} else if len(o.buf) >= 64 {
			o.bad = "its header is not git's"
		}
	}
	return len(p), nil
}

var _ io.Writer = (*objectHash)(nil)
