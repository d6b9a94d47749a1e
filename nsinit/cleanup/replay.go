package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// A journal is replayed only when its launcher (and the sandbox's init) died before
// the after-run cleanup ran, and then once (CompleteJournals removes it first), at the
// next launch of the user, which may come long after: the repository has moved on (the
// user's own git rebase, fetch, gc, index writes), and an entry whose meaning is "as at
// launch" (Keep lists, Was stamps, "did not exist at launch") would undo the user's work
// (attack review 31 F2: a later git rebase -i's rebase-merge removed). replay carries
// out only what stays true whoever made the state since, and names the rest as not
// completed, for the user to check.

// RunLasting is replay for a session's init whose supervisor died: the init's entries
// hold the session start's baselines, never moved by the host's work since (Retake
// runs in the supervisor), so only what stays true whoever made the state is carried
// out (attack review 36 F6). It returns what replay returns.
func RunLasting(entries []Entry) (removed, failed []string) { return replay(entries) }

// replay carries out entries of a journal whose launcher was killed: RemoveSpecialUnder
// (no symlink, FIFO, socket or device in a git dir, whoever made it) and VerifyObjects
// (an object that does not hash to its name is bad whoever wrote it; what it cannot
// verify, the user's later work included, is only reported: attack review 32 F5; so
// VerifyLFSObjects), RemoveStrayCommondirs (git writes only "../.."), RemoveIfCreated marked Anytime, and for another
// RemoveIfCreated an empty directory (a mount point the launch made: nothing of
// anyone's is lost). Every other entry, when its path is there and is not seen to be
// as at launch (asAtLaunch: the sandbox's init may have done the cleanup), is reported
// in failed as "path: not completed: <what to check>".
func replay(entries []Entry) (removed, failed []string) {
	var now []Entry
	for _, e := range entries {
		switch e.Kind {
		case RemoveSpecialUnder:
			now = append(now, e)
		case VerifyObjects, VerifyLFSObjects, RemoveStrayCommondirs:
			// a bad hash, or a commondir git never writes, is wrong whoever made it
			now = append(now, e)
		case RemoveIfCreated:
			if e.Anytime {
				now = append(now, e)
				continue
			}
			switch gone, err := removeEmptyDir(e.Path); {
			case gone:
				removed = append(removed, e.Path)
			case err == nil:
				failed = append(failed, e.Path+": not completed: it did not exist when the sandbox started and may be the command's (its launcher was killed before the after-run cleanup): check it, and remove it if it is not yours")
			}
		default:
			if exists(e.Path) && !asAtLaunch(e) {
				failed = append(failed, e.Path+": not completed: "+pendingWhat(e.Kind)+" (its launcher was killed before the after-run cleanup; the repository may have changed since, so it is not redone)")
			}
		}
	}
	r, f := Run(now)
	return append(removed, r...), append(failed, f...)
}

// pendingWhat says what a launch-relative entry of kind k would have undone.
func pendingWhat(k Kind) string {
	switch k {
	case RemoveNewEntries:
		return "entries the command may have added here are not removed: check them"
	case RestoreSymlink:
		return "this symlink is not put back as it was at launch: check where it leads"
	case RestoreMode:
		return "its mode is not put back as it was at launch: check it"
	case RemoveChangedRefs:
		return "remote-tracking refs the command may have changed are not removed: run git fetch to reset them"
	case RemovePackedRefs:
		return "refs the command may have added to packed-refs are not removed: check git for-each-ref"
	case RestoreRefs:
		return "tags the command may have moved are not put back: check git show-ref --tags"
	case RemoveIndexBits:
		return "assume-unchanged/skip-worktree bits and stat data the command may have set are not cleared: run git update-index --really-refresh, or remove the index and run git reset"
	}
	return "not carried out"
}

// asAtLaunch reports whether e's path is, cheaply seen, as the entry wants it (the
// sandbox's init may have done the cleanup itself once the launcher was gone): a
// symlink with its text, a directory with its mode, loose refs or entries as kept, an
// index as its launch stamps.
// Other kinds are never known to be so.
func asAtLaunch(e Entry) bool {
	switch e.Kind {
	case RestoreSymlink:
		t, err := os.Readlink(e.Path)
		return err == nil && t == e.Target
	case RestoreMode:
		var st unix.Stat_t
		return unix.Lstat(e.Path, &st) == nil && st.Mode&0o7777 == e.Mode
	case RemoveChangedRefs:
		now, err := LooseRefs(e.Path, len(e.Keep)+1)
		return err == nil && sameSet(now, e.Keep)
	case RestoreRefs:
		moved, _, _, err := refsMoved(e.Path, e.Keep)
		return err == nil && len(moved) == 0
	case RemoveIndexBits:
		dir, err := openDirNoFollow(filepath.Dir(e.Path))
		if err != nil {
			return false
		}
		defer unix.Close(dir)
		return e.Was != nil && unchanged(dir, e.Was)
	case RemoveNewEntries:
		f, err := os.Open(e.Path)
		if err != nil {
			return false
		}
		defer f.Close()
		// the whole directory: a name past a partial read is as new as any (attack
		// review 35 F8); no more than len(Keep)+1 names are held
		var names []string
		err = eachName(f, func(n string) {
			if len(names) <= len(e.Keep) && (slices.Contains(e.Keep, n) || !matchesAny(e.Skip, n)) {
				names = append(names, n)
			}
		})
		return err == nil && sameSet(names, e.Keep)
	}
	return false
}

// sameSet reports whether a and b hold the same strings (each once).
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range b {
		m[s] = true
	}
	for _, s := range a {
		if !m[s] {
			return false
		}
	}
	return true
}

// exists reports whether p is there (lstat).
func exists(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil
}

// removeEmptyDir removes p when it is an empty directory (rmdir(2), reached without a
// symlink). gone: it was removed; an error: it is there and is something else.
func removeEmptyDir(p string) (gone bool, err error) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return false, errors.New("unreachable")
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, err // gone: nothing to say
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, nil
	}
	if err := unix.Unlinkat(dir, filepath.Base(p), unix.AT_REMOVEDIR); err != nil {
		return false, nil
	}
	return true, nil
}
