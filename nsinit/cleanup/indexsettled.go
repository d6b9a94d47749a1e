package cleanup

import (
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// settledIndex returns the stamps of the index file p (and of its shared index) when
// what it holds is what clearIndexBits leaves: no assume-unchanged or skip-worktree bit
// (nor sparse-directory entry) outside keep, every entry's cached stat data zero, no
// extension clearIndexBits drops. Each file is stamped before it is read, so content
// written after its read moves its stamp (a later pass then writes it anew); ok is false
// when it is not so, or cannot be read. A missing index is settled ([]Stamp{{}}).
//
// It is what a session's pass may take as its next baseline (Pass.Advance): a process
// of the session left in the background can write the index between the pass's run and
// its Advance, and a stamp taken then, without its content, would have every later pass
// skip that index as unchanged (its hiding bits kept for good).
func settledIndex(p string, keep []string, hashLen int) (stamps []Stamp, ok bool) {
	f, st, err := openIndex(p)
	if errors.Is(err, os.ErrNotExist) {
		return []Stamp{{}}, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	stamps = []Stamp{stampOf(filepath.Base(p), &st)}
	rw := &indexRewrite{w: io.Discard}
	sc, err := scanIndexTo(io.NewSectionReader(f, 0, st.Size), st.Size, hashLen, nil, rw)
	if err != nil || rw.changed {
		return nil, false
	}
	hidden := sc.hidden
	if sc.link != nil {
		// a split index: its shared index read from the descriptor stamped, and every
		// hiding bit in it counted, whether or not the link's bitmaps delete or replace
		// its entry (stricter than git reads it: at worst a later pass writes it anew)
		sp := filepath.Join(filepath.Dir(p), "sharedindex."+hex.EncodeToString(sc.link[:hashLen]))
		sf, sst, err := openIndex(sp)
		if err != nil {
			return nil, false
		}
		defer sf.Close()
		stamps = append(stamps, stampOf(filepath.Base(sp), &sst))
		srw := &indexRewrite{w: io.Discard}
		ssc, err := scanIndexTo(io.NewSectionReader(sf, 0, sst.Size), sst.Size, hashLen, nil, srw)
		if err != nil || srw.changed {
			return nil, false
		}
		hidden = append(hidden, ssc.hidden...)
	}
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		kept[k] = true
	}
	for _, h := range hidden {
		for _, k := range hiddenKeys(h) {
			if !kept[k] {
				return nil, false
			}
		}
	}
	return stamps, true
}
