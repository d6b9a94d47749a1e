package cleanup

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifyPack passes a pack git wrote (deltas included, SHA-1 and SHA-256) and finds a
// forged index that names an object by another's id (attack review 31 F4's packforge).
func TestVerifyPack(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		dir := t.TempDir()
		gitIn(t, dir, "init", "-q", "--object-format="+format)
		text := strings.Repeat("a line of text that repeats\n", 200)
		for i := 0; i < 5; i++ {
			text += "change " + strings.Repeat("x", i) + "\n"
			os.WriteFile(filepath.Join(dir, "f.txt"), []byte(text), 0o644)
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "c")
		}
		gitIn(t, dir, "repack", "-adfq", "--depth=10", "--window=10")
		idxs, _ := filepath.Glob(filepath.Join(dir, ".git/objects/pack/*.idx"))
		if len(idxs) != 1 {
			t.Fatalf("packs: %v", idxs)
		}
		hashLen := 20
		if format == "sha256" {
			hashLen = 32
		}
		if v := gitIn(t, dir, "verify-pack", "-v", idxs[0]); !strings.Contains(v, "chain length") {
			t.Fatalf("no deltas in the pack:\n%s", v)
		}
		check := func(idx []byte) (string, error) {
			f, err := os.Open(strings.TrimSuffix(idxs[0], ".idx") + ".pack")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			budget, count := int64(MaxVerifyBytes), 0
			hashed := int64(maxPackHashed)
			return verifyPack(idx, f, st.Size(), hashLen, &budget, &count, &hashed)
		}
		idx, err := os.ReadFile(idxs[0])
		if err != nil {
			t.Fatal(err)
		}
		if why, err := check(idx); why != "" || err != nil {
			t.Errorf("%s: git's own pack: %q %v", format, why, err)
		}
		forged := append([]byte(nil), idx...)
		forged[8+1024+hashLen+3] ^= 1 // the second object's name
		if why, err := check(forged); why == "" || err != nil {
			t.Errorf("%s: a forged index passed: %q %v", format, why, err)
		}
	}
}

// Valid packs git writes are never moved aside (attack review 32 F3): a delta chain
// deeper than 64 read once the cache is full (played here by a cache of 0 bytes), and
// a version 1 index (pack.indexVersion=1), which the check does not read: both stay,
// the v1 one reported unchecked; git log still works. Before, both were "forged" and
// moved aside, and git log said "bad object HEAD".
func TestVerifyObjectsValidPacksStay(t *testing.T) {
	for _, c := range []struct {
		name  string
		cache int
		args  []string
	}{
		{"deep chain, full cache", 0, []string{"repack", "-adfq", "--depth=250", "--window=250"}},
		{"v1 index", 64 << 20, []string{"-c", "pack.indexVersion=1", "repack", "-adq"}},
	} {
		dir := t.TempDir()
		gitIn(t, dir, "init", "-q")
		lines := make([]string, 200)
		for j := range lines {
			lines[j] = fmt.Sprintf("line %d of text that repeats\n", j)
		}
		for i := 0; i < 150; i++ { // edits in place: chains of some 110 here
			lines[i*7%200] = fmt.Sprintf("edit %d here\n", i)
			os.WriteFile(filepath.Join(dir, "z_chain"), []byte(strings.Join(lines, "")), 0o644)
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "c")
		}
		gitIn(t, dir, c.args...)
		objs := filepath.Join(dir, ".git", "objects")
		saved := maxPackCache
		maxPackCache = c.cache
		r, f := Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: 0}})
		maxPackCache = saved
		if len(r) != 0 {
			t.Errorf("%s: a valid pack moved aside: %q (failed %q)", c.name, r, f)
		}
		if c.name == "v1 index" && !strings.Contains(strings.Join(f, "\n"), "not checked") {
			t.Errorf("%s: not reported unchecked: %q", c.name, f)
		}
		gitIn(t, dir, "log", "-q", "-1")
	}
}
