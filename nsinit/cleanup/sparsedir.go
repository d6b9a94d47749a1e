package cleanup

import (
	"encoding/binary"
	"strconv"
)

// modeSparseDir is the mode of a sparse index's directory entry (gitformat-index(5),
// "sparse directory entries": S_IFDIR, no permission bits), which stands for every file
// of a tree git leaves out of the working tree.
const modeSparseDir = 0o40000

// sparseDir reports whether the fixed part e of an index entry (its stat data, mode at
// bytes 24-27) is a sparse-directory entry.
func sparseDir(e []byte) bool {
	return len(e) >= 28 && binary.BigEndian.Uint32(e[24:28]) == modeSparseDir
}

// newSparseDir returns why an index must be moved aside, when one of hs (its entries
// with a hiding bit, sparse-directory entries among them) is a sparse-directory entry
// that was not there at launch (kept: IndexHidden's keys then, where a sparse directory
// counts as skip-worktree), and "" otherwise. Clearing its bit is not enough: a git
// without the sparse index (the host's, no sparse-checkout set) expands the entry into
// every file of its tree with the skip-worktree bit set again (sparse-index.c,
// ensure_full_index), so a change under it is hidden from git status and git diff as a
// bit the command set would be (attack review 33 F7). An index not sparse at launch has
// no such entry, so one there now is always new.
func newSparseDir(hs []hiddenEntry, kept map[string]bool) string {
	for _, h := range hs {
		if h.dir && !kept[h.name+"\x00skip"] {
			return "a sparse-directory entry " + strconv.Quote(h.name) +
				" that was not there at launch: git expands it into the files under it with the skip-worktree bit set, which hides their change"
		}
	}
	return ""
}
