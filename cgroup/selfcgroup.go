package cgroup

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// selfCgroupFile is the caller's membership file (cgroups(7) "/proc/[pid]/cgroup"): one
// line "hierarchy-ID:controller-list:cgroup-path" per hierarchy, "0::path" for the
// unified one. A variable so that tests can point it at a file of their own.
var selfCgroupFile = "/proc/self/cgroup"

// readSelfCgroup reads selfCgroupFile whole with read(2) into one buffer: every launch
// reads it (CollectStale), and containerd's parser (an os.File, a bufio.Scanner, a
// string per line and per field, a map) cost it twice what this does (docs/decisions.md
// "Speed, ninth attempt: the launcher's steps"). Errors are open's and read's, naming
// the file.
func readSelfCgroup() ([]byte, error) {
	fd, err := unix.Open(selfCgroupFile, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", selfCgroupFile, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 1024)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", selfCgroupFile, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// v1Paths gives, for each of v1Subsystems, the caller's group path that the
// /proc/self/cgroup text b lists for it ("" and false where no line names the
// controller). As containerd's ParseCgroupFromReaderUnified, whose map it replaces
// here: a controller named on two lines takes the last one's path, and a line with fewer
// than three colon-separated fields is an error naming it.
func v1Paths(b []byte) (paths [len(v1Subsystems)]string, found [len(v1Subsystems)]bool, err error) {
	for len(b) > 0 {
		var line []byte
		line, b = cutField(b, '\n')
		_, rest, ok := bytes.Cut(line, []byte{':'})
		ctrls, path, ok2 := bytes.Cut(rest, []byte{':'})
		if !ok || !ok2 {
			return paths, found, fmt.Errorf("invalid cgroup entry: %q", line)
		}
		for len(ctrls) > 0 {
			var c []byte
			c, ctrls = cutField(ctrls, ',')
			for i, sub := range v1Subsystems {
				if string(c) == sub {
					paths[i], found[i] = string(path), true
				}
			}
		}
	}
	return paths, found, nil
}

// cutField splits b at its first sep: the part before it and the rest after it, or b
// whole and nil without one (lines of a /proc or cgroup file, fields of a list).
func cutField(b []byte, sep byte) (field, rest []byte) {
	if i := bytes.IndexByte(b, sep); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}
