package cleanup

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MaxLFSBytes bounds the bytes of Git LFS objects hashed by one VerifyLFSObjects pass
// (this package's SHA-256 ran at 128 MB/s here, 2 shared cores under load: some 4 s);
// past it, a file is reported unchecked.
const MaxLFSBytes = 512 << 20

// verifyLFS checks the Git LFS store dir (<gitdir>/lfs/objects: <aa>/<bb>/<oid>, oid
// the SHA-256 of the file's bytes, 64 hex digits; git-lfs's spec, "The Git LFS local
// storage") for files written since since (ns; ctime or mtime, or a directory on the
// way that was): each is hashed whole and moved aside when its hash is not its name.
// git-lfs's smudge filter copies a local object into the working tree without hashing
// it, so one rewritten by the command would be what the host's next git checkout
// writes (attack review 33 F4). Only a proven mismatch is moved aside: a file past
// MaxLFSBytes (for the pass, charged by its size before it is read) or unreadable is
// reported unchecked. Names that are not an oid, and what is not a regular file (the
// git dir's RemoveSpecialUnder entry removes a symlink or FIFO), are left.
func verifyLFS(dir string, since int64) (removed, failed []string) {
	dfd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	defer unix.Close(dfd)
	budget := int64(MaxLFSBytes)
	recent := func(st *unix.Stat_t) bool { return st.Ctim.Nano() >= since || st.Mtim.Nano() >= since }
	seen := map[ID]string{} // each file's hash, "" not checked
	var walk func(fd int, rel string, depth int, all bool)
	walk = func(fd int, rel string, depth int, all bool) {
		f := os.NewFile(uintptr(fd), rel)
		defer f.Close()
		n := 0
		err := eachName(f, func(name string) {
			if n++; n > maxFanoutEntries {
				return
			}
			p := filepath.Join(dir, rel, name)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				failed = report(failed, p+": not checked: "+err.Error())
				return
			}
			if depth < 2 {
				if len(name) != 2 || !isHex(name) || st.Mode&unix.S_IFMT != unix.S_IFDIR {
					return
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if errors.Is(err, unix.EACCES) && ownerRWX(fd, name) == nil {
					sub, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				}
				if err != nil {
					failed = report(failed, p+": the Git LFS objects in it are not checked: "+err.Error())
					return
				}
				walk(sub, filepath.Join(rel, name), depth+1, all || recent(&st))
				return
			}
			if len(name) != 64 || !isHex(name) || st.Mode&unix.S_IFMT != unix.S_IFREG || (!all && !recent(&st)) {
				return
			}
			why := "its content does not hash to its name"
			id := IDOf(&st)
			sum, ok := seen[id]
			switch {
			case ok && sum == "":
				failed = report(failed, p+": not checked: a hard link of a Git LFS object not checked")
				return
			case ok:
				// a hard link of a file hashed once (its bytes hash to one name only)
			case st.Size > budget:
				seen[id] = ""
				failed = report(failed, fmt.Sprintf("%s: not checked: a Git LFS object past gosbx's bound (%d MiB hashed a run): run git lfs fsck", p, MaxLFSBytes>>20))
				return
			default:
				budget -= st.Size
				var err error
				if sum, err = hashFile(fd, name, st.Size); err != nil {
					seen[id] = ""
					failed = report(failed, p+": not checked: "+err.Error())
					return
				}
				seen[id] = sum
			}
			if sum == name {
				return
			}
			did, err := moveAside(fd, name, p)
			if err != nil {
				failed = report(failed, p+": "+why+"; moving it aside: "+err.Error())
				return
			}
			removed = report(removed, p+": Git LFS object "+did+" ("+why+")")
		})
		if err == nil && n > maxFanoutEntries {
			err = fmt.Errorf("more than %d entries", maxFanoutEntries)
		}
		if err != nil {
			failed = report(failed, filepath.Join(dir, rel)+": not all its Git LFS objects are checked: "+err.Error())
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	fd, err := unix.Dup(dfd)
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	walk(fd, "", 0, recent(&st))
	return removed, failed
}

// hashFile is the SHA-256, in hex, of the first size bytes of the regular file name of
// the directory fd (a file that changed size meanwhile does not hash to its name).
func hashFile(fd int, name string, size int64) (string, error) {
	ofd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(ofd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", errors.New("not a regular file")
	}
	d := newDigest(32)
	n, err := io.Copy(d, io.LimitReader(f, size+1))
	if err != nil {
		return "", err
	}
	if n != size {
		return "", errors.New("its size changed while it was read")
	}
	return hex.EncodeToString(d.Sum()), nil
}
