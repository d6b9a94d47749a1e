// Package cleanup runs the after-run cleanup of a sandbox on the host: generic entries
// (a path and a kind), handed to it by whoever knows why (the policy's repository
// guard), executed without following a symlink anywhere (openat2 RESOLVE_NO_SYMLINKS or
// O_NOFOLLOW component by component, then descriptors only, never a path resolved
// twice). It knows nothing of what the entries protect.
package cleanup

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Kind is what an Entry asks for.
type Kind string

const (
	// RemoveIfCreated: Path did not exist at launch; whatever is there after the run
	// (a file or a whole tree) is removed. For a file the command can create but a
	// mount cannot keep it from creating.
	RemoveIfCreated Kind = "remove-if-created"
	// RemoveNewEntries: the entries of the directory Path whose names are not in Keep
	// (each with everything in it) are removed, and so is a kept name that is no longer
	// the object it was at launch (KeepIDs: another type, device or inode).
	RemoveNewEntries Kind = "remove-new-entries"
	// RemoveSpecialUnder: every symlink, FIFO, socket and device under the directory
	// Path is removed, not descending into directories that match Skip; a directory
	// deeper than MaxWalkDepth levels is removed whole (nothing is left unwalked).
	RemoveSpecialUnder Kind = "remove-special-under"
	// RestoreSymlink: Path must be a symlink whose text is Target; whatever else is
	// there after the run (another symlink, a file, a tree) is removed and the symlink
	// made again. For a symlink no mount can make read-only.
	RestoreSymlink Kind = "restore-symlink"
	// RemovePackedRefs: the refs of the packed-refs file Path whose names start with
	// Prefix and whose lines are not in Keep (as they were at launch) are removed from
	// it, and a second line of a name in Keep. For replace refs (refs/replace/), which make the host's git show other
	// objects than it pushes, and which no mount can keep out of packed-refs.
	RemovePackedRefs Kind = "remove-packed-refs"
	// RemoveIndexBits: the assume-unchanged and skip-worktree bits of the entries of the
	// index file Path that are not in Keep (IndexHidden at launch) are cleared; HashLen
	// is the repository's object name length (20: SHA-1, 32: SHA-256). For bits that
	// hide a tracked file's change from the host's git status and diff.
	RemoveIndexBits Kind = "remove-index-bits"
	// VerifyObjects: the loose objects of the object directory Path that may have been
	// written since Since (ns, CLOCK_REALTIME, before the command started) are
	// inflated and hashed (HashLen: 20 SHA-1, 32 SHA-256), and moved aside when they do
	// not hash to their names; packs not as they were (Was) are verified against their
	// indexes, and pack caches and commit-graphs written since moved aside. What cannot
	// be verified is reported, never moved. For objects rewritten in place, which git
	// reads without hashing.
	VerifyObjects Kind = "verify-objects"
	// VerifyLFSObjects: the files of the Git LFS store Path (<gitdir>/lfs/objects) that
	// may have been written since Since are hashed (SHA-256, their name) and moved
	// aside when they do not hash to their names; what cannot be checked is reported.
	// For LFS objects, which git-lfs copies into the working tree without hashing.
	VerifyLFSObjects Kind = "verify-lfs-objects"
	// RemoveStrayCommondirs: in each entry of the directory Path (a git dir's
	// worktrees/), a commondir that does not name Path's parent as git writes it
	// ("../..") is removed, and in an entry not named in Keep (those at launch) its
	// config.worktree and a gitdir that does not lead back to it. For a linked
	// worktree's git dir, whose commondir sends the host's git in that checkout to
	// another git dir's config and hooks.
	RemoveStrayCommondirs Kind = "remove-stray-commondirs"
	// RestoreMode: the directory Path gets back its permission bits Mode (as at launch)
	// when they differ after the run: a git dir the command made unsearchable, which
	// the cleanup gives u+rwx to reach (ownerRWX), is left as the user had it.
	RestoreMode Kind = "restore-mode"
	// RemoveChangedRefs: the files under the directory Path (a git dir's refs/remotes)
	// that are not one of Keep ("<path from Path>\x00<content>", LooseRefs at launch)
	// are removed, and the directories that held none. For remote-tracking refs, which
	// the host's git trusts as the remote's.
	RemoveChangedRefs Kind = "remove-changed-refs"
	// RestoreRefs: the refs under the directory Path (a git dir's refs/tags) named in
	// Keep (RefValues: "<path from Path>\x00<value at launch>", and "\x00<peel>" for
	// a packed one whose peel git took from the file) that git would resolve or peel
	// otherwise after the run, or read ambiguously (loose, or in the packed-refs of
	// Path's grandparent, as git reads it) are written back as loose refs with their
	// launch values, and their packed lines removed; refs Keep does not name are left.
	// For tags, which git keeps no reflog of.
	RestoreRefs Kind = "restore-refs"
)

// Entry is one step of the after-run cleanup. Path is absolute and canonical (no
// symlink in it as the launcher saw it); a component that became a symlink since leads
// nowhere and nothing is removed.
type Entry struct {
	Kind Kind   `json:"kind"`
	Path string `json:"path"`
	// Keep (RemoveNewEntries, RemoveStrayCommondirs) are the names of Path's entries
	// that stay (as at launch); for
	// RemovePackedRefs, the lines ("<oid> <ref>") that stay.
	Keep []string `json:"keep,omitempty"`
	// KeepIDs (RemoveNewEntries), one per Keep name when given, are what each name was
	// at launch; a name whose entry differs after the run (replaced: a stray file made
	// into a git dir with hooks) is removed as a new one.
	KeepIDs []ID `json:"keep_ids,omitempty"`
	// Skip (RemoveSpecialUnder) are directories not descended into, as path.Match
	// patterns of their whole path from Path ("objects/??" is Path/objects/ab only); for
	// RemoveNewEntries, the names (patterns) of entries that may be added (git's own);
	// for RemovePackedRefs, the ref prefixes under Prefix left alone ("refs/heads/").
	Skip []string `json:"skip,omitempty"`
	// Target (RestoreSymlink) is the symlink's text.
	Target string `json:"target,omitempty"`
	// Prefix (RemovePackedRefs) is the start of the ref names removed ("refs/replace/");
	// "" is every name, refs/… or not (git's lookup reads a packed "<oid> main" as
	// $GIT_DIR/main, before refs/heads/main: attack review 36 F3).
	Prefix string `json:"prefix,omitempty"`
	// HashLen (RemoveIndexBits) is the object name length in bytes, 20 or 32.
	HashLen int `json:"hash_len,omitempty"`
	// Was (RemoveIndexBits) is what the index (and its shared index) was at launch
	// (IndexStamps): an index still so is left as it is; none: it is written anew.
	// For VerifyObjects, the entries of Path/pack at launch.
	Was []Stamp `json:"was,omitempty"`
	// Since (VerifyObjects, VerifyLFSObjects) is when the launch began (or, in a
	// session, the last pass: Advance), in ns since the epoch.
	Since int64 `json:"since,omitempty"`
	// Mode (RestoreMode) is the permission bits (0o7777) Path had at launch.
	Mode uint32 `json:"mode,omitempty"`
	// Anytime (RemoveIfCreated) says the path stays wrong whenever it is found, not only
	// right after the run (a main git dir's commondir, which git never makes): a journal
	// whose launcher was killed removes it at a later launch; without it, that launch
	// only reports it (replay).
	Anytime bool `json:"anytime,omitempty"`
}

// ID is a file's identity as lstat(2) gives it: st_dev, st_ino and the S_IFMT bits of
// st_mode.
type ID struct {
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Type uint32 `json:"type"`
}

// IDOf returns st's identity.
func IDOf(st *unix.Stat_t) ID {
	return ID{Dev: uint64(st.Dev), Ino: st.Ino, Type: st.Mode & unix.S_IFMT}
}

// Check refuses an entry of an unknown kind, or whose path is not absolute, clean and
// below /. config.Validate calls it for each of a config's entries.
func (e Entry) Check() error {
	switch {
	case e.Kind != RemoveIfCreated && e.Kind != RemoveNewEntries && e.Kind != RemoveSpecialUnder && e.Kind != RestoreSymlink && e.Kind != RemovePackedRefs &&
		e.Kind != RemoveIndexBits && e.Kind != VerifyObjects && e.Kind != RestoreMode &&
		e.Kind != RemoveChangedRefs && e.Kind != RestoreRefs && e.Kind != VerifyLFSObjects && e.Kind != RemoveStrayCommondirs:
		return fmt.Errorf("cleanup of %s: unknown kind %q", e.Path, e.Kind)
	case !filepath.IsAbs(e.Path) || filepath.Clean(e.Path) != e.Path || e.Path == "/":
		return fmt.Errorf("cleanup %s: %q is not an absolute, clean path below /", e.Kind, e.Path)
	case (e.Kind == RemoveIndexBits || e.Kind == VerifyObjects) && e.HashLen != 20 && e.HashLen != 32:
		return fmt.Errorf("cleanup %s of %s: object name length %d is neither 20 (SHA-1) nor 32 (SHA-256)", e.Kind, e.Path, e.HashLen)
	case e.Kind == RestoreMode && (e.Mode&^0o7777 != 0 || e.Mode&0o700 != 0o700):
		return fmt.Errorf("cleanup %s of %s: mode %o is not a directory's its owner can use", e.Kind, e.Path, e.Mode)
	case e.Kind == RemovePackedRefs && e.Prefix != "" && !strings.HasPrefix(e.Prefix, "refs/"):
		return fmt.Errorf("cleanup %s of %s: prefix %q is neither empty nor below refs/", e.Kind, e.Path, e.Prefix)
	case len(e.KeepIDs) != 0 && len(e.KeepIDs) != len(e.Keep):
		return fmt.Errorf("cleanup %s of %s: %d identities for %d kept names", e.Kind, e.Path, len(e.KeepIDs), len(e.Keep))
	}
	return nil
}

// Run carries out entries, RestoreSymlink first, then RemoveIfCreated,
// RemoveNewEntries, RemoveSpecialUnder, RemoveStrayCommondirs, RemoveChangedRefs,
// RemovePackedRefs, RestoreRefs, RemoveIndexBits, VerifyObjects, VerifyLFSObjects and RestoreMode. It returns the paths removed and, for what could not be
// removed, "path: reason". Entries whose path is gone, or is no longer a directory
// reached without a symlink, are skipped: nothing of them can be reached by that name.
func Run(entries []Entry) (removed, failed []string) {
	removed, failed, _ = RunEach(entries)
	return removed, failed
}

// RunEach is Run, and tells which entries reported a failure (bad, one per entry): a
// session runs those again before its next request (attack review 36 F2: one
// session-wide mark made every entry's host-made state judged as the session's).
func RunEach(entries []Entry) (removed, failed []string, bad []bool) {
	bad = make([]bool, len(entries))
	for _, kind := range []Kind{RestoreSymlink, RemoveIfCreated, RemoveNewEntries, RemoveSpecialUnder, RemoveStrayCommondirs, RemoveChangedRefs, RemovePackedRefs, RestoreRefs, RemoveIndexBits, VerifyObjects, VerifyLFSObjects, RestoreMode} {
		for i, e := range entries {
			if e.Kind != kind {
				continue
			}
			var r, f []string
			switch kind {
			case RemoveIfCreated:
				if createdStill(e.Path, e.Was) {
					continue // there when no command ran (Retake): the host's
				}
				switch gone, err := removeNoFollow(e.Path); {
				case err != nil:
					f = []string{e.Path + ": " + err.Error()}
				case gone:
					r = []string{e.Path}
				}
			case RemoveNewEntries:
				r, f = removeNewEntries(e.Path, e.Keep, e.KeepIDs, e.Skip)
			case RemoveSpecialUnder:
				r, f = removeSpecial(e.Path, e.Skip)
			case RemovePackedRefs:
				r, f = removePackedRefs(e.Path, e.Prefix, e.Keep, e.Skip)
			case RemoveChangedRefs:
				r, f = removeChangedRefs(e.Path, e.Keep)
			case RestoreRefs:
				r, f = restoreRefs(e.Path, e.Keep)
			case RemoveIndexBits:
				r, f = clearIndexBits(e.Path, e.Keep, e.HashLen, e.Was)
			case VerifyObjects:
				r, f = verifyObjects(e.Path, e.HashLen, e.Since, e.Was)
			case VerifyLFSObjects:
				r, f = verifyLFS(e.Path, e.Since)
			case RemoveStrayCommondirs:
				r, f = removeStrayCommondirs(e.Path, e.Keep)
			case RestoreMode:
				if err := restoreMode(e.Path, e.Mode); err != nil {
					f = []string{e.Path + ": restoring its mode: " + err.Error()}
				}
			case RestoreSymlink:
				switch replaced, err := restoreSymlink(e.Path, e.Target); {
				case err != nil:
					f = []string{e.Path + ": " + err.Error()}
				case replaced:
					r = []string{e.Path}
				}
			}
			removed, failed = append(removed, r...), append(failed, f...)
			bad[i] = bad[i] || len(f) > 0
		}
	}
	return removed, failed, bad
}

// unreachable reports an error of opening a directory by name that means it is gone or
// was replaced by something else (a symlink, a file).
func unreachable(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)
}

// removeNewEntries removes every entry of dir not named in keep nor matching one of
// the patterns skip (path.Match), and, when ids holds one identity per name, every kept
// name whose entry is no longer that object.
func removeNewEntries(dir string, keep []string, ids []ID, skip []string) (removed, failed []string) {
	kept := map[string]*ID{}
	for i, k := range keep {
		kept[k] = nil
		if len(ids) == len(keep) {
			kept[k] = &ids[i]
		}
	}
	fd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	err = eachName(f, func(n string) {
		id, isKept := kept[n]
		var st unix.Stat_t
		if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				failed = report(failed, filepath.Join(dir, n)+": "+err.Error())
			}
			return
		}
		if isKept && (id == nil || *id == IDOf(&st)) {
			return
		}
		if !isKept && matchesAny(skip, n) {
			return
		}
		if err := removeAt(fd, n, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
			failed = report(failed, filepath.Join(dir, n)+": "+err.Error())
		} else {
			removed = report(removed, filepath.Join(dir, n))
		}
	})
	if err != nil {
		failed = append(failed, dir+": "+err.Error())
	}
	return removed, failed
}

// maxReported bounds the paths one cleanup reports (a command can make millions).
const maxReported = 1000

func report(list []string, s string) []string {
	switch {
	case len(list) < maxReported:
		return append(list, s)
	case len(list) == maxReported:
		return append(list, "(and more, not listed)")
	}
	return list
}

// eachName calls fn with each name in the directory f, read 1024 at a time (a
// directory of millions of names is never held whole).
func eachName(f *os.File, fn func(string)) error {
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			fn(n)
		}
		if err == io.EOF || (err == nil && len(names) == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// MaxWalkDepth is how many directory levels below its Path a RemoveSpecialUnder entry
// walks (the launch refuses a git dir deeper than that: policy's gitDirAccessible). A
// directory below it is removed whole rather than left unwalked: a symlink 40 levels
// down (a deep branch's reflog) would be followed by the host's next git commit.
const MaxWalkDepth = 32

// removeSpecial removes every symlink, FIFO, socket and device under dir, and every
// directory deeper than MaxWalkDepth. What it cannot inspect (an entry it cannot stat,
// a directory it cannot open or read) is removed when it can be, else reported.
func removeSpecial(dir string, skip []string) (removed, failed []string) {
	var walk func(fd int, dir, rel string, depth int)
	walk = func(fd int, dir, rel string, depth int) {
		f := os.NewFile(uintptr(fd), dir)
		defer f.Close()
		removeWhole := func(n, p, why string) {
			if err := removeAt(fd, n, true, 0); err != nil {
				failed = report(failed, p+": "+why+"; removing it: "+err.Error())
			} else {
				removed = report(removed, p)
			}
		}
		err := eachName(f, func(n string) {
			p := filepath.Join(dir, n)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if !errors.Is(err, unix.ENOENT) {
					failed = report(failed, p+": "+err.Error())
				}
				return
			}
			switch t := st.Mode & unix.S_IFMT; {
			case t == unix.S_IFLNK || t == unix.S_IFIFO || t == unix.S_IFSOCK || t == unix.S_IFCHR || t == unix.S_IFBLK:
				if err := removeAt(fd, n, false, 0); err != nil {
					failed = report(failed, p+": "+err.Error())
				} else {
					removed = report(removed, p)
				}
			case t != unix.S_IFDIR || skipped(skip, path.Join(rel, n)):
			case depth >= MaxWalkDepth:
				removeWhole(n, p, fmt.Sprintf("a directory more than %d levels deep", MaxWalkDepth))
			default:
				sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if errors.Is(err, unix.EACCES) && ownerRWX(fd, n) == nil {
					sub, err = unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				}
				switch {
				case errors.Is(err, unix.ENOENT):
				case errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
					// replaced meanwhile (a live session's background process): looked at again
					if unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
						if err := removeAt(fd, n, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
							failed = report(failed, p+": "+err.Error())
						} else {
							removed = report(removed, p)
						}
					}
				case err != nil:
					removeWhole(n, p, "cannot open it to look for symlinks: "+err.Error())
				default:
					walk(sub, p, path.Join(rel, n), depth+1)
				}
			}
		})
		if err != nil {
			failed = append(failed, dir+": "+err.Error())
		}
	}
	fd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	walk(fd, dir, "", 0)
	return removed, failed
}

// skipped reports whether rel, a directory's path from the walk's root ("objects/ab"),
// matches one of patterns as a whole: a pattern is anchored at the root, so
// "objects/[0-9a-f][0-9a-f]" skips <root>/objects/ab and never <root>/logs/refs/heads/objects/ab
// (attack review 28 F4: a branch named objects/ab/x kept a symlinked reflog).
func skipped(patterns []string, rel string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, rel); ok {
			return true
		}
	}
	return false
}

// restoreSymlink makes p the symlink target again if it is anything else, through its
// parent's descriptor (opened without following a symlink). It reports whether p had
// been replaced.
func restoreSymlink(p, target string) (bool, error) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return false, nil // its directory is gone or replaced: nothing is reached by that name
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(dir)
	name := filepath.Base(p)
	buf := make([]byte, len(target)+1)
	n, err := unix.Readlinkat(dir, name, buf)
	if err == nil && n == len(target) && string(buf[:n]) == target {
		return false, nil
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if err := removeAt(dir, name, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
			return false, err
		}
	} else if !errors.Is(err, unix.ENOENT) {
		return false, err
	}
	return true, unix.Symlinkat(target, dir, name)
}

// restoreMode gives the directory p the permission bits mode when it has others,
// through a descriptor of that very directory (as ownerRWX), never by name.
func restoreMode(p string, mode uint32) error {
	if mode&0o700 != 0o700 {
		return nil // never a mode that would shut its owner out (Check refuses one)
	}
	parent, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	fd, err := unix.Openat(parent, filepath.Base(p), unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if unreachable(err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&0o7777 == mode {
		return err
	}
	err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
	if errors.Is(err, unix.EPERM) {
		// under a root caller's seccomp filter (as in ownerRWX): without set-ID bits
		err = unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode&0o1777)
	}
	return err
}

// matchesAny reports whether name matches one of the path.Match patterns pats.
func matchesAny(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
