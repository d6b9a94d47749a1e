package ownmountns

import (
	"os"
	"strings"
)

// Table is this process's mount table, /proc/self/mountinfo (proc(5)) one line per
// mount, in the kernel's order.
func Table() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out, nil
}

// Changes compares two mount tables of the same namespace: added holds the lines of
// after that were not in before; removed the lines of before missing from after whose
// mount point still exists. A mount whose mount point is gone was detached by the
// kernel, not unmounted by the test: since Linux 3.18 removing a directory (rmdir(2),
// rename(2) over it) detaches the mounts on it in every mount namespace, so another
// package's test removing its own temporary mount point takes the private copy away
// here too.
func Changes(before, after []string) (added, removed []string) {
	added = minus(after, before)
	for _, l := range minus(before, after) {
		if _, err := os.Lstat(MountPoint(l)); err == nil {
			removed = append(removed, l)
		}
	}
	return added, removed
}

// MountPoint is field 5 of a mountinfo line, its octal escapes undone.
func MountPoint(line string) string {
	f := strings.Fields(line)
	if len(f) < 5 {
		return ""
	}
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(f[4])
}

// minus is a − b as multisets, in a's order.
func minus(a, b []string) []string {
	n := map[string]int{}
	for _, s := range b {
		n[s]++
	}
	var out []string
	for _, s := range a {
		if n[s] > 0 {
			n[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}
