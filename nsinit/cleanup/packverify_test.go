package cleanup

import (
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
			return verifyPack(idx, f, st.Size(), hashLen, &budget, &count)
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
