package cleanup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tagPutBack ends the Removed line of a ref RestoreRefs wrote back:
// "<path> (a tag put back as at launch)".
const tagPutBack = " (a tag put back as at launch)"

// restoreRefs puts back as at launch the refs under the directory dir (a git dir's
// refs/tags) that keep names (RefValues at launch: "<path from dir>\x00<value>", an
// object id or "ref: <name>", and for a packed one "\x00<peel>"), where git would now
// resolve one to another value or peel, to none, or read it ambiguously: loose
// (dir/<path>, which git reads first) or, with no loose file, in the git dir's
// packed-refs (dir's grandparent), read as git reads it (packedView). Each is written
// back as a loose ref with its launch value, whatever the command left at that name
// (another ref, a directory of refs under it, a symlink) removed first, and then its
// lines in packed-refs removed (git for-each-ref and push --tags would list a second
// one). Refs keep does not name (the command's new tags) are left. git keeps no
// reflog for tags, so a moved tag would otherwise be moved for good, with no trace
// (attack review 33 F11). It returns "<dir>/<path> (a tag put back as at launch)" per
// ref written back.
func restoreRefs(dir string, keep []string) (removed, failed []string) {
	moved, packed, unpeel, err := refsMoved(dir, keep)
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	if len(moved) > 0 {
		what, err := refsDirBack(dir)
		if err != nil {
			return nil, []string{dir + ": not a directory; " + err.Error() + "; its tags are not put back"}
		}
		if what != "" {
			removed = append(removed, dir+" (not a directory): "+what)
		}
	}
	prefix := "refs/" + filepath.Base(dir) + "/"
	drop := map[string]bool{}
	for _, k := range moved {
		rel, rest, _ := strings.Cut(k, "\x00")
		value, _, _ := strings.Cut(rest, "\x00")
		p := filepath.Join(dir, rel)
		if !refPath(rel) {
			failed = report(failed, p+": not put back: not a ref's path")
			continue
		}
		if err := writeRefAt(dir, rel, value+"\n"); err != nil {
			failed = report(failed, p+": putting it back as at launch: "+err.Error())
			continue
		}
		removed = report(removed, p+tagPutBack)
		if packed[prefix+rel] {
			drop[prefix+rel] = true
		}
	}
	if len(drop) > 0 || len(unpeel) > 0 {
		// the loose ref written is what git reads; the lines are the command's. A
		// peeled line no launch line vouches for is dropped, and git told by the
		// header to peel every ref without one itself
		_, f := editPacked(packedRefsOf(dir), func(_, ref string) (bool, string, string) {
			return !drop[ref], "", ref
		}, func(ref string) bool { return !unpeel[ref] })
		failed = append(failed, f...)
	}
	return removed, failed
}

// refsDirBack makes dir a directory again when it is not one (gone, a file, a
// symlink): what is there is moved aside (moveAside) and an empty directory made. It
// returns what was moved, "" when dir was a directory.
func refsDirBack(dir string) (string, error) {
	pfd, err := openDirNoFollow(filepath.Dir(dir))
	if err != nil {
		return "", err
	}
	defer unix.Close(pfd)
	name := filepath.Base(dir)
	var st unix.Stat_t
	what := ""
	switch err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return "", nil
	case err == nil:
		if what, err = moveAside(pfd, name, dir); err != nil {
			return "", fmt.Errorf("moving it aside: %w", err)
		}
	case !errors.Is(err, unix.ENOENT):
		return "", err
	}
	if err := unix.Mkdirat(pfd, name, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return what, fmt.Errorf("making it again: %w", err)
	}
	return what, nil
}

// refsMoved returns the entries of keep (restoreRefs') whose ref git would not resolve
// to its launch value and peel now, or would read from packed-refs ambiguously (on two
// lines, or in lines out of order under a "sorted" header: attack review 36 F4), and
// the names (refs/<x>/<path>) of those with a line in packed-refs. A peel git takes from
// the ref's object (a loose ref, a packed one with no peeled line nor header trait) is
// the object's; one it takes from packed-refs must be the launch's (attack review 36
// F5: git describe took the command's "^<oid>" lines), or, where git peeled the object
// at launch, the ref is in unpeel: its line is as at launch, its peel to be the
// object's again (restoreRefs). A dir that is gone, a file or a
// symlink holds no loose ref (git takes refs/tags/<name>'s ENOENT or ENOTDIR as none,
// and reads packed-refs): every entry is then compared with packed-refs (attack review
// 35 F5). A packed-refs gosbx cannot read (packedView's bounds) is taken as holding
// none of them: each not loose is moved, and written back loose.
func refsMoved(dir string, keep []string) (moved []string, packed, unpeel map[string]bool, err error) {
	if len(keep) == 0 {
		return nil, nil, nil, nil
	}
	fd, err := openDirNoFollow(dir)
	var d *os.File
	switch {
	case unreachable(err):
	case err != nil:
		return nil, nil, nil, err
	default:
		d = os.NewFile(uintptr(fd), dir)
		defer d.Close()
	}
	prefix := "refs/" + filepath.Base(dir) + "/"
	want := map[string]bool{}
	for _, k := range keep {
		rel, _, _ := strings.Cut(k, "\x00")
		want[prefix+rel] = true
	}
	view, verr := readPackedView(packedRefsOf(dir), len(keep)*2+16, func(ref string) bool { return want[ref] })
	if verr != nil {
		view = packedView{}
	}
	// the names at the top of dir: a ref under none of them is not loose, and is not
	// opened (most tags are packed: git pack-refs, gc, a clone)
	top := map[string]bool{}
	if d != nil {
		if err := eachName(d, func(n string) { top[n] = true }); err != nil {
			return nil, nil, nil, err
		}
	}
	packed, unpeel = map[string]bool{}, map[string]bool{}
	for _, k := range keep {
		rel, rest, _ := strings.Cut(k, "\x00")
		value, peel, _ := strings.Cut(rest, "\x00")
		rec := view.recs[prefix+rel]
		if rec.lines > 0 {
			packed[prefix+rel] = true
		}
		first, _, _ := strings.Cut(rel, "/")
		now, loose := "", false
		if top[first] {
			now, loose = looseValue(fd, rel)
		}
		switch {
		case loose && (rec.lines > 1 || rec.nul):
			// git reads the loose one, but lists the second packed line too
		case loose && now == value:
			continue
		case loose:
		case view.blind || rec.lines != 1 || rec.nul:
		case rec.oid == value && (rec.peel == "" || rec.peel == peel):
			continue
		case rec.oid == value && peel == "":
			// git peeled the object at launch (a loose tag, git pack-refs in the
			// run wrote the line): the file's peel is not known to be the object's
			unpeel[prefix+rel] = true
			continue
		}
		moved = append(moved, k)
	}
	return moved, packed, unpeel, nil
}

// looseValue returns the value (trimmed content) of the loose ref rel under the
// directory fd, and whether rel is anything there at all (a directory, a symlink or an
// unreadable file is there, with no value: it shadows the packed ref).
func looseValue(fd int, rel string) (string, bool) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
	f, err := unix.Openat2(fd, rel, how)
	if errors.Is(err, unix.ENOSYS) {
		f, err = unix.Openat(fd, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	}
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return "", false
	}
	if err != nil {
		return "", true
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if unix.Fstat(f, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", true
	}
	b := make([]byte, MaxLooseRef+1)
	n, err := unix.Read(f, b)
	if err != nil || n > MaxLooseRef {
		return "", true
	}
	return strings.TrimSpace(string(b[:n])), true
}

// writeRefAt writes content as the loose ref rel under dir (never through a symlink):
// each directory on the way made when missing, anything else in its place (a ref file
// where a directory must be, a symlink) removed, and a directory or other file at rel
// itself removed first.
func writeRefAt(dir, rel, content string) error {
	fd, err := openDirNoFollow(dir)
	if err != nil {
		return err
	}
	parts := strings.Split(rel, "/")
	for _, c := range parts[:len(parts)-1] {
		sub, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			if err = removeAt(fd, c, false, 0); err == nil {
				err = unix.ENOENT
			}
		}
		if errors.Is(err, unix.ENOENT) {
			if err = unix.Mkdirat(fd, c, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				sub, err = unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = sub
	}
	defer unix.Close(fd)
	name := parts[len(parts)-1]
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		if err := removeAt(fd, name, st.Mode&unix.S_IFMT == unix.S_IFDIR, 0); err != nil {
			return err
		}
	}
	return rewriteAt(fd, name, content, 0o644)
}

// refPath reports whether rel is a path git could give a loose ref below its refs
// directory: components neither empty, "." nor "..", no NUL (git-check-ref-format(1)
// allows none of them).
func refPath(rel string) bool {
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." || c == ".." || strings.ContainsRune(c, 0) {
			return false
		}
	}
	return true
}
