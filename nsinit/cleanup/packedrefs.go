package cleanup

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// removePackedRefs removes from the packed-refs file p (gitrepository-layout(5)) every
// ref whose name starts with prefix and whose line is not one of keep (the lines
// there at launch), with the peeled line ("^<oid>") that follows it. The file is
// rewritten beside itself and renamed over it, through its directory's descriptor; a
// symlink or anything but a regular file is left to RemoveSpecialUnder. It returns
// "p: <ref>" for each ref removed.
func removePackedRefs(p, prefix string, keep []string) (removed, failed []string) {
	dir, err := openDirNoFollow(filepath.Dir(p))
	if unreachable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	defer unix.Close(dir)
	name := filepath.Base(p)
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	var out bytes.Buffer
	dropping := false
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			text := strings.TrimRight(line, "\n")
			_, ref, _ := strings.Cut(text, " ")
			switch {
			case strings.HasPrefix(text, "^"):
				// the peeled value of the ref before
			case strings.HasPrefix(ref, prefix) && !kept[text]:
				dropping = true
				removed = report(removed, p+": "+ref)
			default:
				dropping = false
			}
			if !dropping {
				out.WriteString(line)
			}
		}
		if err != nil {
			if err != io.EOF {
				return nil, []string{p + ": " + err.Error()}
			}
			break
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	tmp := name + ".gosbx-" + strconv.Itoa(os.Getpid())
	unix.Unlinkat(dir, tmp, 0)
	wfd, err := unix.Openat(dir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, st.Mode&0o666)
	if err != nil {
		return nil, []string{p + ": " + err.Error()}
	}
	w := os.NewFile(uintptr(wfd), tmp)
	unix.Fchown(wfd, int(st.Uid), int(st.Gid)) // as it was; a caller who may not keeps it its own
	_, err = w.Write(out.Bytes())
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dir, tmp, dir, name)
	}
	if err != nil {
		unix.Unlinkat(dir, tmp, 0)
		return nil, []string{p + ": " + err.Error()}
	}
	return removed, nil
}
