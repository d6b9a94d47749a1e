package cleanup

import (
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=a", "-c", "user.email=a@b"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %.200v: %v\n%.500s", args, err, out)
	}
	return string(out)
}

// RemoveIndexBits clears the assume-unchanged and skip-worktree bits set after launch,
// keeps those there at launch, and leaves an index git reads (git fsck-less check: git
// ls-files -v and git status), for index versions 2, 3 and 4 and SHA-256.
func TestRemoveIndexBits(t *testing.T) {
	long := "d/" + strings.Repeat("l", 200) + "/" + strings.Repeat("m", 200)
	for _, c := range []struct {
		ver, format string
	}{{"2", "sha1"}, {"3", "sha1"}, {"4", "sha1"}, {"4", "sha256"}, {"2", "sha256"}} {
		t.Run(c.ver+c.format, func(t *testing.T) {
			dir := t.TempDir()
			gitIn(t, dir, "init", "-q", "--object-format="+c.format)
			for _, f := range []string{"a.sh", "kept.txt", "sub/b.txt", long} {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte("v1\n"), 0o644)
			}
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "x")
			gitIn(t, dir, "update-index", "--index-version", c.ver)
			gitIn(t, dir, "update-index", "--skip-worktree", "kept.txt")
			hashLen := 20
			if c.format == "sha256" {
				hashLen = 32
			}
			p := filepath.Join(dir, ".git", "index")
			keep, err := IndexHidden(p, hashLen)
			if err != nil || len(keep) != 1 {
				t.Fatalf("IndexHidden: %q %v", keep, err)
			}
			gitIn(t, dir, "update-index", "--skip-worktree", "a.sh", long)
			gitIn(t, dir, "update-index", "--assume-unchanged", "sub/b.txt")
			os.WriteFile(filepath.Join(dir, "a.sh"), []byte("evil\n"), 0o644)
			removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen}})
			if len(failed) != 0 || len(removed) != 3 {
				t.Fatalf("removed %q, failed %q", removed, failed)
			}
			// git checks the index's checksum only in git fsck: checked here
			b, _ := os.ReadFile(p)
			body, sum := b[:len(b)-hashLen], b[len(b)-hashLen:]
			want := fmt.Sprintf("%x", sha1.Sum(body))
			if hashLen == 32 {
				want = fmt.Sprintf("%x", sha256.Sum256(body))
			}
			if fmt.Sprintf("%x", sum) != want {
				t.Errorf("the index's checksum is %x, want %s", sum, want)
			}
			ls := gitIn(t, dir, "ls-files", "-v")
			for _, want := range []string{"H a.sh", "S kept.txt", "H sub/b.txt", "H " + long} {
				if !strings.Contains(ls, want+"\n") {
					t.Errorf("git ls-files -v lacks %q:\n%.300s", want, ls)
				}
			}
			if st := gitIn(t, dir, "status", "--short"); !strings.Contains(st, "a.sh") {
				t.Errorf("git status does not show a.sh's change: %q", st)
			}
			if removed, failed := Run([]Entry{{Kind: RemoveIndexBits, Path: p, Keep: keep, HashLen: hashLen}}); len(removed)+len(failed) != 0 {
				t.Errorf("a second run removed %q, failed %q", removed, failed)
			}
		})
	}
}
