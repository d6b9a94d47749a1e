package policy

import (
	"path/filepath"
	"slices"
	"strings"
)

// pathNote is one PATH entry in a writable tree that the host's git or shell searches
// for programs before (or where) it finds them: entry as the caller's PATH writes it,
// dir resolved, progs the programs in the order first looked up.
type pathNote struct {
	entry, dir string
	progs      []string
}

// notePath records that the command could put its own prog in the PATH entry e
// (resolved d). A nil rb records nothing.
func (rb *readBudget) notePath(e, d, prog string) {
	if rb == nil {
		return
	}
	for i := range rb.pathNotes {
		if n := &rb.pathNotes[i]; n.entry == e && n.dir == d {
			if !slices.Contains(n.progs, prog) {
				n.progs = append(n.progs, prog)
			}
			return
		}
	}
	rb.pathNotes = append(rb.pathNotes, pathNote{entry: e, dir: d, progs: []string{prog}})
}

// pathNoteText is the launch's note for rb.pathNotes ("" when none): which PATH
// entries and programs, and the fix, the caller's PATH without its entries that are
// relative or lie in a writable tree (inWritable), "/usr/bin:/bin" when none is left.
// The entries are checked by their text only (no lookup): the note names the ones the
// guard resolved.
func pathNoteText(rb *readBudget, inWritable func(string) bool) string {
	if rb == nil || len(rb.pathNotes) == 0 {
		return ""
	}
	var where []string
	for _, n := range rb.pathNotes {
		// entries, directories and programs are the caller's PATH and words of config
		// files the sandbox may have written: each shown as text (attack review 30 F3)
		e := Shown(n.entry)
		if n.entry == "" {
			e = `""` // an empty entry: the current directory
		}
		if n.entry != n.dir {
			e += " (" + Shown(n.dir) + ")"
		}
		progs := make([]string, len(n.progs))
		for i, p := range n.progs {
			progs[i] = Shown(p)
		}
		where = append(where, e+": "+strings.Join(progs, ", "))
	}
	var keep []string
	for _, e := range rb.env.path {
		noted := slices.ContainsFunc(rb.pathNotes, func(n pathNote) bool { return n.entry == e })
		if e == "" || !filepath.IsAbs(e) || noted || inWritable(filepath.Clean(e)) {
			continue
		}
		if pd, ok := rb.pathDirs[filepath.Clean(e)]; ok && pd.writable {
			continue
		}
		keep = append(keep, e)
	}
	if len(keep) == 0 {
		keep = []string{"/usr/bin", "/bin"}
	}
	return "PATH searches directories the sandbox can write before (or where) it finds programs the host's git and shell run: " +
		strings.Join(where, "; ") + ". The command can put its own program of these names there, and it runs on the host " +
		"the next time git or your shell looks one up outside the sandbox (not guarded: see README, Known limits). " +
		"To close this, take the workspace's directories out of PATH for the launch: env PATH=" + Shown(strings.Join(keep, ":")) + " gosbx …"
}
