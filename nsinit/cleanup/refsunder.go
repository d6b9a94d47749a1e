package cleanup

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MaxLooseRef is the largest loose ref file, in bytes, kept by its content
// (RemoveChangedRefs): an object id or "ref: <name>" and a newline.
const MaxLooseRef = 4096

// removeChangedRefs removes from the directory dir (a git dir's refs/remotes) every
// file that is not one of keep as it was at launch ("<path from dir>\x00<content>"),
// and every directory that held none of them: a ref the command added or moved there,
// which the host's git would take as the remote's (git reset --hard origin/main). A
// ref of keep moved during the run (a git fetch inside, a commit on a branch
// origin/feature) gets its launch content back. It walks by descriptor, never following a symlink (one is removed), at most
// MaxWalkDepth levels (a deeper directory is removed whole). It returns each path
// removed.
func removeChangedRefs(dir string, keep []string) (removed, failed []string) {
	fd, err := openDirNoFollow(dir)
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{dir + ": " + err.Error()}
	}
	top := os.NewFile(uintptr(fd), dir)
	defer top.Close()
	want, dirs := map[string]string{}, map[string]bool{}
	for _, k := range keep {
		rel, content, _ := strings.Cut(k, "\x00")
		want[rel] = content
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var walk func(f *os.File, rel string, depth int)
	walk = func(f *os.File, rel string, depth int) {
		fd := int(f.Fd())
		var names []string
		if err := eachName(f, func(n string) { names = append(names, n) }); err != nil {
			failed = append(failed, filepath.Join(dir, rel)+": "+err.Error())
			return
		}
		for _, n := range names {
			r := path.Join(rel, n)
			p := filepath.Join(dir, r)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				failed = report(failed, p+": "+err.Error())
				continue
			}
			isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
			if isDir && dirs[r] && depth < MaxWalkDepth {
				sub, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err == nil {
					sf := os.NewFile(uintptr(sub), p)
					walk(sf, r, depth+1)
					sf.Close()
					continue
				}
			}
			if !isDir && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size <= MaxLooseRef {
				content, ok := want[r]
				if ok && sameContent(fd, n, content) {
					continue
				}
				// a ref that was there at launch is put back as it was, not deleted
				// (attack review 32 F2: the user's branch origin/feature, committed to)
				if ok {
					if err := rewriteAt(fd, n, content, st.Mode&0o666); err != nil {
						failed = report(failed, p+": putting it back as at launch: "+err.Error())
					} else {
						removed = report(removed, p+" (put back as at launch)")
					}
					continue
				}
			}
			if err := removeAt(fd, n, isDir, 0); err != nil {
				failed = report(failed, p+": "+err.Error())
				continue
			}
			removed = report(removed, p)
		}
	}
	walk(top, ".", 0)
	return removed, failed
}

func sameContent(dir int, name, content string) bool {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	b := make([]byte, MaxLooseRef+1)
	n, err := unix.Read(fd, b)
	return err == nil && bytes.Equal(b[:max(n, 0)], []byte(content))
}

// LooseRefs returns the files under the directory dir (a git dir's refs/remotes) as
// removeChangedRefs' keep: "<path from dir>\x00<content>" each; none when dir is
// missing. A symlink, a file over MaxLooseRef bytes, more than max files or a tree
// deeper than MaxWalkDepth is an error (git makes none of them).
func LooseRefs(dir string, most int) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if p == dir && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.Count(rel, "/") >= MaxWalkDepth {
			return errTooDeep
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return &os.PathError{Op: "read ref", Path: p, Err: errNotRegular}
		}
		if len(out) >= most {
			return errTooMany
		}
		b, err := readRef(p)
		if err != nil {
			return err
		}
		out = append(out, filepath.ToSlash(rel)+"\x00"+string(b))
		return nil
	})
	return out, err
}

func readRef(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	b := make([]byte, MaxLooseRef+1)
	n, err := unix.Read(fd, b)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: p, Err: err}
	}
	if n > MaxLooseRef {
		return nil, &os.PathError{Op: "read", Path: p, Err: errTooBig}
	}
	return b[:n], nil
}

type refError string

func (e refError) Error() string { return string(e) }

const (
	errTooDeep    = refError("a ref directory deeper than gosbx walks")
	errNotRegular = refError("not a regular file")
	errTooMany    = refError("more refs than gosbx keeps")
	errTooBig     = refError("a ref file larger than a ref")
)

// rewriteAt replaces the file name of the directory fd by one holding content (a file
// beside it, renamed over it; never through a symlink).
func rewriteAt(fd int, name, content string, mode uint32) error {
	tmp := name + ".gosbx-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(fd, tmp, 0)
	wfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	_, err = unix.Write(wfd, []byte(content))
	if cerr := unix.Close(wfd); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(fd, tmp, fd, name)
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
	}
	return err
}
