package cleanup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// maxRetaken bounds the names or refs a retaken baseline holds (as policy's launch
// baselines are bounded); past it the old baseline stays.
const maxRetaken = 100000

// Baselined reports whether e's meaning is "as at launch" (a Keep list, a path absent
// at launch): the kinds Retake moves by what the host changed.
func Baselined(e Entry) bool {
	switch e.Kind {
	case RemoveIfCreated:
		return !e.Anytime
	case RemoveNewEntries, RemovePackedRefs, RemoveChangedRefs, RestoreRefs, RemoveStrayCommondirs:
		return true
	}
	return false
}

// createdStill reports whether the RemoveIfCreated path p is the file Retake stamped
// (was), unchanged: then it is the host's, left.
func createdStill(p string, was []Stamp) bool {
	var st unix.Stat_t
	return len(was) == 1 && unix.Lstat(p, &st) == nil && stampOf("", &st) == was[0]
}

// entriesNow lists the names of the directory dir (none when it is gone) and, when
// ids, their identities; more than maxRetaken is an error.
func entriesNow(dir string, ids bool) ([]string, []ID, error) {
	f, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var names []string
	err = eachName(f, func(n string) {
		if len(names) <= maxRetaken {
			names = append(names, n)
		}
	})
	if err == nil && len(names) > maxRetaken {
		err = fmt.Errorf("%s: more than %d entries", dir, maxRetaken)
	}
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(names)
	if !ids {
		return names, nil, nil
	}
	out := make([]ID, len(names))
	for i, n := range names {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, n), &st); err != nil {
			return nil, nil, err
		}
		out[i] = IDOf(&st)
	}
	return names, out, nil
}

// refValuesNow returns the refs under dir (a git dir's refs/tags) as RestoreRefs'
// Keep, as git resolves them now (RefValues: a packed-refs git may read otherwise is
// an error, and the old baseline stays).
func refValuesNow(dir string) ([]string, error) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, errors.New("not a directory") // restoreRefs puts the old ones back
	}
	return RefValues(dir, maxRetaken)
}

// packedLinesUnder returns the lines ("<oid> <ref>") of the packed-refs file p whose
// refs start with prefix; none when p is missing (PackedRefLines' bounds).
func packedLinesUnder(p, prefix string) ([]string, error) {
	return PackedRefLines(p, maxRetaken, func(ref string) bool { return strings.HasPrefix(ref, prefix) })
}
