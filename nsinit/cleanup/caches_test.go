package cleanup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cacheRepo makes a repository with run.sh committed and repacked into one pack, and
// returns it (repack: in one pack, else loose), run.sh's blob id and the pack stamps at "launch".
func cacheRepo(t *testing.T, repack bool) (string, string, []Stamp) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo hi\n"), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "c")
	if repack {
		gitIn(t, dir, "repack", "-adq")
	}
	stamps, err := PackStamps(filepath.Join(dir, ".git", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD:run.sh")), stamps
}

// A multi-pack-index the command writes that maps run.sh's id to its own blob in an
// honest pack is moved aside (a cache git works without), and git reads run.sh's blob
// again (attack review 32 F6: before, only reported, git fsck exits 0).
func TestVerifyObjectsMultiPackIndex(t *testing.T) {
	dir, oid, stamps := cacheRepo(t, false)
	since := time.Now().UnixNano()
	if out, err := exec.Command("sh", "-c", "cd "+dir+" && sh "+mustAbs(t, "testdata/midx.sh")+" "+oid).CombinedOutput(); err != nil {
		t.Fatalf("midx.sh: %v\n%s", err, out)
	}
	if got := gitIn(t, dir, "cat-file", "-p", oid); !strings.Contains(got, "FROM-MIDX") {
		t.Fatalf("the multi-pack-index did not take: %q", got)
	}
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: filepath.Join(dir, ".git", "objects"), HashLen: 20, Since: since, Was: stamps}})
	if got := gitIn(t, dir, "cat-file", "-p", oid); got != "echo hi\n" {
		t.Errorf("run.sh's blob reads %q after the cleanup: removed %q, failed %q", got, r, f)
	}
	gitIn(t, dir, "log", "-q", "-1")
}

// An existing pack rewritten in place (its index as at launch, its trailer kept) is
// checked like a new one: its blob no longer hashes to run.sh's id, and it is moved
// aside (attack review 32 F7: before, only reported).
func TestVerifyObjectsPackInPlace(t *testing.T) {
	dir, oid, stamps := cacheRepo(t, true)
	since := time.Now().UnixNano()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command("python3", mustAbs(t, "testdata/inplace.py"), oid)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("inplace.py: %v\n%s", err, out)
	}
	if got := gitIn(t, dir, "cat-file", "-p", oid); !strings.Contains(got, "IN-PLACE") {
		t.Fatalf("the rewrite did not take: %q", got)
	}
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: filepath.Join(dir, ".git", "objects"), HashLen: 20, Since: since, Was: stamps}})
	if !strings.Contains(strings.Join(r, "\n"), ".pack: object moved aside") {
		t.Errorf("the rewritten pack is not moved aside: removed %q, failed %q", r, f)
	}
	if got, _ := exec.Command("git", "-C", dir, "cat-file", "-p", oid).Output(); strings.Contains(string(got), "IN-PLACE") {
		t.Errorf("git still reads the command's blob for run.sh")
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A commit-graph written during the run (one file, and a split chain) is moved aside:
// a cache git reads before the commits and works without.
func TestVerifyObjectsCommitGraph(t *testing.T) {
	dir, _, stamps := cacheRepo(t, true)
	since := time.Now().UnixNano()
	gitIn(t, dir, "commit-graph", "write", "--reachable")
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "d")
	gitIn(t, dir, "commit-graph", "write", "--reachable", "--split")
	info := filepath.Join(dir, ".git", "objects", "info")
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: filepath.Join(dir, ".git", "objects"), HashLen: 20, Since: since, Was: stamps}})
	for _, p := range []string{"commit-graph", "commit-graphs/commit-graph-chain"} {
		if _, err := os.Lstat(filepath.Join(info, p)); err == nil {
			t.Errorf("%s is left: removed %q, failed %q", p, r, f)
		}
	}
	gitIn(t, dir, "log", "-q", "-1")
}

// A new pack whose first object declares 100 MiB (over maxPackObject, never read by
// git) and whose second is the command's content named as run.sh's blob: the second
// is still checked, proven forged, and the pack moved aside (attack review 32 F1:
// before, the whole pack was left unchecked, with a warning).
func TestVerifyObjectsBigFirst(t *testing.T) {
	dir, oid, stamps := cacheRepo(t, false)
	since := time.Now().UnixNano()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	cmd := exec.Command("python3", mustAbs(t, "testdata/bigfirst.py"), oid)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bigfirst.py: %v\n%s", err, out)
	}
	if got := gitIn(t, dir, "cat-file", "-p", oid); !strings.Contains(got, "BIGFIRST") {
		t.Fatalf("the forged pack did not take: %q", got)
	}
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: filepath.Join(dir, ".git", "objects"), HashLen: 20, Since: since, Was: stamps}})
	if got := gitIn(t, dir, "cat-file", "-p", oid); got != "echo hi\n" {
		t.Errorf("run.sh's blob reads %q after the cleanup: removed %q, failed %q", got, r, f)
	}
}
