package cleanup

import "github.com/gosbx/gosbx/internal/rawjson"

// encoding/json writes a string that is not valid UTF-8 with each bad byte replaced by
// U+FFFD, so a journal would name another file than the entry's: a branch, a worktree
// or a kept name in Latin-1 (git takes any byte but a few as a ref or a directory name)
// would come back from a killed launch's journal under a name that is not there, and
// the name that is there would be missing from Keep. Such strings are journaled as a
// NUL, a marker no path, name or packed-refs line can hold (the kernel ends names at
// NUL; a ref name with one is refused at launch), then the bytes in standard base64.

// journalString is s as the journal holds it (internal/rawjson).
func journalString(s string) string { return rawjson.Escape(s) }

// fromJournal undoes journalString; ok is false for a marked string whose base64 is bad.
func fromJournal(s string) (string, bool) { return rawjson.Unescape(s) }

// mapStrings applies f to every string of rec that names a file, a ref or a pattern
// (trees, and each entry's path, kept names or lines, skip patterns, symlink text, ref
// prefix and stamp names); false when f refused one.
func mapStrings(rec *record, f func(string) (string, bool)) bool {
	ok := true
	one := func(s *string) {
		v, good := f(*s)
		*s, ok = v, ok && good
	}
	all := func(ss []string) []string {
		out := make([]string, len(ss))
		for i := range ss {
			out[i] = ss[i]
			one(&out[i])
		}
		return out
	}
	rec.Trees = all(rec.Trees)
	entries := make([]Entry, len(rec.Entries))
	for i, e := range rec.Entries {
		one(&e.Path)
		e.Keep = all(e.Keep)
		e.Skip = all(e.Skip)
		one(&e.Target)
		one(&e.Prefix)
		was := make([]Stamp, len(e.Was))
		for j, s := range e.Was {
			one(&s.Name)
			was[j] = s
		}
		if e.Was == nil {
			was = nil
		}
		e.Keep = nilIfEmpty(e.Keep, rec.Entries[i].Keep)
		e.Skip = nilIfEmpty(e.Skip, rec.Entries[i].Skip)
		e.Was = was
		entries[i] = e
	}
	rec.Entries = entries
	return ok
}

// nilIfEmpty keeps a nil list nil (omitempty, and the comparisons that tell nil from
// empty).
func nilIfEmpty(out, in []string) []string {
	if in == nil {
		return nil
	}
	return out
}
