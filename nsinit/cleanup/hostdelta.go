package cleanup

import (
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// State is what the "as at launch" paths of a session's entries (Baselined) held when
// one of its passes ended with no process of it left (Snapshot): Retake adopts what
// changed since, never the state itself (attack review 36 F1: adopting the state a
// pass left made a linked-worktree entry a command made "known", so its
// config.worktree then survived every later request).
type State struct {
	of []entryState // one per entry, by index
}

// entryState is one entry's part of a State.
type entryState struct {
	ok    bool     // read whole; else nothing of the entry is retaken
	names []string // RemoveNewEntries, RemoveStrayCommondirs: the directory's names, sorted
	ids   []ID     // one per name
	lines []string // RemovePackedRefs, RemoveChangedRefs, RestoreRefs: as Keep holds them
	stamp *Stamp   // RemoveIfCreated: the path's, nil when it is absent
}

// StateNotRead starts the cause of a Snapshot failure line ("path: StateNotRead<cause>").
const StateNotRead = "state not read after the request: "

// Snapshot reads the state of entries' "as at launch" paths. failed names, as
// "path: cause", each entry whose state could not be read: its baseline is then not
// retaken at the next Retake, so what the host's git makes there before it is judged
// as the session's.
func Snapshot(entries []Entry) (st *State, failed []string) {
	st = &State{of: make([]entryState, len(entries))}
	for i, e := range entries {
		if !Baselined(e) {
			continue
		}
		var err error
		st.of[i], err = stateOf(e)
		if err != nil {
			failed = append(failed, e.Path+": "+StateNotRead+err.Error())
		}
	}
	return st, failed
}

// stateOf reads e's state (e Baselined).
func stateOf(e Entry) (entryState, error) {
	var s entryState
	var err error
	switch e.Kind {
	case RemoveIfCreated:
		var st unix.Stat_t
		switch err = unix.Lstat(e.Path, &st); {
		case err == nil:
			stamp := stampOf("", &st)
			s.stamp = &stamp
		case errors.Is(err, unix.ENOENT):
			err = nil
		}
	case RemoveNewEntries, RemoveStrayCommondirs:
		s.names, s.ids, err = entriesNow(e.Path, true)
	case RemovePackedRefs:
		// as Keep holds them: the prefixes left alone (a repository's many branches
		// and tags) are not held, nor counted against maxRetaken
		s.lines, err = PackedRefLines(e.Path, maxRetaken, func(ref string) bool {
			if !strings.HasPrefix(ref, e.Prefix) {
				return false
			}
			for _, k := range e.Skip {
				if strings.HasPrefix(ref, k) {
					return false
				}
			}
			return true
		})
	case RemoveChangedRefs:
		s.lines, err = LooseRefs(e.Path, maxRetaken)
	case RestoreRefs:
		s.lines, err = refValuesNow(e.Path)
	}
	s.ok = err == nil
	return s, err
}

// Retake moves the "as at launch" baselines of entries (Baselined) by what changed
// since left (Snapshot of the same entries, taken when the last pass ended with no
// process of the session left): a session calls it before a request when no process
// of it ran since, so that what the host's own git made meanwhile (a merge in
// progress, a fetch, a tag, a tool's directory in .git) is the next pass's baseline,
// never undone as the session's (attack review 35 F3), while what a command made and
// the pass left (a linked worktree's entry, a tag of its own, what a pass failed to
// remove) stays judged as the command's (attack review 36 F1). A name or line that
// appeared or changed since left is adopted, one that went away is dropped; a
// RemoveIfCreated path made or changed since is stamped (Was: removed only once it
// changes again). retaken tells, per entry, that its baseline was moved (or had no
// need to be); an entry whose state could not be read, then or now, keeps its baseline
// and is false.
func Retake(entries []Entry, left *State) (retaken []bool) {
	retaken = make([]bool, len(entries))
	for i := range entries {
		e := &entries[i]
		if !Baselined(*e) {
			retaken[i] = true
			continue
		}
		if left == nil || i >= len(left.of) || !left.of[i].ok {
			continue
		}
		now, err := stateOf(*e)
		if err != nil {
			continue
		}
		retaken[i] = retakeOne(e, left.of[i], now)
	}
	return retaken
}

// retakeOne moves e's baseline by the change from was to now; false when the result
// would pass maxRetaken (the old baseline stays).
func retakeOne(e *Entry, was, now entryState) bool {
	switch e.Kind {
	case RemoveIfCreated:
		switch {
		case now.stamp == nil:
			e.Was = nil
		case was.stamp == nil || *was.stamp != *now.stamp:
			e.Was = []Stamp{*now.stamp}
		}
	case RemoveNewEntries, RemoveStrayCommondirs:
		return retakeNames(e, was, now)
	case RemovePackedRefs, RemoveChangedRefs:
		keep, before, after := setOf(e.Keep), setOf(was.lines), setOf(now.lines)
		for l := range before {
			if !after[l] {
				delete(keep, l)
			}
		}
		for l := range after {
			if !before[l] {
				keep[l] = true
			}
		}
		if len(keep) > maxRetaken {
			return false
		}
		e.Keep = sortedKeys(keep)
	case RestoreRefs:
		keep, before, after := refMap(e.Keep), refMap(was.lines), refMap(now.lines)
		for rel, v := range before {
			if _, ok := after[rel]; !ok || after[rel] != v {
				delete(keep, rel)
			}
		}
		for rel, v := range after {
			if b, ok := before[rel]; !ok || b != v {
				keep[rel] = v
			}
		}
		if len(keep) > maxRetaken {
			return false
		}
		e.Keep = e.Keep[:0:0]
		for rel, v := range keep {
			e.Keep = append(e.Keep, rel+"\x00"+v)
		}
		slices.Sort(e.Keep)
	}
	return true
}

// retakeNames moves the names (and identities, when e keeps them) of a
// RemoveNewEntries or RemoveStrayCommondirs entry: a name new since was, or now another
// object (the host replaced it), is kept; one gone since is dropped.
func retakeNames(e *Entry, was, now entryState) bool {
	withIDs := len(e.KeepIDs) > 0
	keep := map[string]ID{}
	for i, n := range e.Keep {
		var id ID
		if withIDs {
			id = e.KeepIDs[i]
		}
		keep[n] = id
	}
	before := map[string]ID{}
	for i, n := range was.names {
		before[n] = was.ids[i]
	}
	after := map[string]ID{}
	for i, n := range now.names {
		after[n] = now.ids[i]
		if id, ok := before[n]; !ok || id != now.ids[i] {
			keep[n] = now.ids[i]
		}
	}
	for n := range before {
		if _, ok := after[n]; !ok {
			delete(keep, n)
		}
	}
	if len(keep) > maxRetaken {
		return false
	}
	names := make([]string, 0, len(keep))
	for n := range keep {
		names = append(names, n)
	}
	slices.Sort(names)
	e.Keep, e.KeepIDs = names, nil
	if withIDs {
		e.KeepIDs = make([]ID, len(names))
		for i, n := range names {
			e.KeepIDs[i] = keep[n]
		}
	}
	return true
}

// refMap reads RestoreRefs' Keep lines ("<path>\x00<value>").
func refMap(lines []string) map[string]string {
	m := make(map[string]string, len(lines))
	for _, l := range lines {
		rel, v, _ := strings.Cut(l, "\x00")
		m[rel] = v
	}
	return m
}

// setOf returns the set of ls.
func setOf(ls []string) map[string]bool {
	m := make(map[string]bool, len(ls))
	for _, l := range ls {
		m[l] = true
	}
	return m
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
