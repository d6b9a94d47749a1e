package cleanup

import (
	"time"

	"golang.org/x/sys/unix"
)

// Pass is one pass of a session's cleanup (Run over the same entries before and after
// each of its commands, and at its end): what it began from, so that the next pass
// looks only at what was written since (attack review 33 F3: every pass re-verified
// everything since the session's start, some 13-16 s of the supervisor's CPU at every
// request after one 1.1 KB pack). Begin, Run, then Advance.
type Pass struct {
	at    int64           // CLOCK_REALTIME_COARSE when the pass began, ns
	packs map[int][]Stamp // VerifyObjects entries (by index): Path/pack when it began
	host  bool            // FromHost: what changed since the last pass is the host's
}

// FromHost marks p as a pass before which no process of the session ran since the last
// one ended: Advance then takes each index as it is (the host's git wrote it), where it
// otherwise takes only an index that holds what the cleanup leaves (settledIndex).
func (p *Pass) FromHost() { p.host = true }

// Begin notes the state a pass of entries begins from: the coarse clock (a file's
// ctime and mtime come from it, or a finer clock never earlier: current_time(), so a
// file written after Begin has times at or after it), and the packs of each
// VerifyObjects entry (PackStamps).
func Begin(entries []Entry) *Pass {
	p := &Pass{at: coarseNow(), packs: map[int][]Stamp{}}
	for i, e := range entries {
		if e.Kind != VerifyObjects {
			continue
		}
		if packs, err := PackStamps(e.Path); err == nil {
			p.packs[i] = packs
		}
	}
	return p
}

// Advance moves the baselines of entries (just run by Run) to where pass began: a
// VerifyObjects or VerifyLFSObjects entry's Since to the pass's start and its Was to the
// packs then (what was there was checked by the pass, or reported unchecked by it);
// a RemoveIndexBits entry's Was to the index as the pass left it, when it holds what
// the cleanup leaves or the pass is FromHost (so an index no command wrote since is
// not written anew again; one a process of the session wrote after the run keeps the
// old Was, and the next pass writes it anew; an entry with no Was, whose index is
// written anew after every run, keeps none). An entry whose state could not be read
// keeps its old baseline. The kinds whose meaning is "as at launch" (Keep lists,
// RemoveIfCreated) are left.
func (p *Pass) Advance(entries []Entry) {
	for i := range entries {
		e := &entries[i]
		switch e.Kind {
		case VerifyObjects:
			if packs, ok := p.packs[i]; ok {
				e.Since, e.Was = p.at, packs
			}
		case VerifyLFSObjects:
			e.Since = p.at
		case RemoveIndexBits:
			if e.Was == nil {
				continue
			}
			if p.host {
				if was, err := IndexStamps(e.Path, e.HashLen); err == nil {
					e.Was = was
				}
			} else if was, ok := settledIndex(e.Path, e.Keep, e.HashLen); ok {
				e.Was = was
			}
		}
	}
}

// coarseNow is CLOCK_REALTIME_COARSE in ns (clock_gettime(2)), one second early when it
// cannot be read.
func coarseNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().Add(-time.Second).UnixNano()
	}
	return ts.Nano()
}
