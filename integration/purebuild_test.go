package integration

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fullDigest maps every path under root to its type, mode, owner, size, mtime (ns) and
// content hash or link target: equal digests mean a tree unchanged byte for byte.
func fullDigest(t *testing.T, root string) map[string]string {
	t.Helper()
	d := map[string]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		v := fmt.Sprintf("%v %d:%d %d %d", info.Mode(), st.Uid, st.Gid, info.Size(), info.ModTime().UnixNano())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		}
		d[p] = v
		return nil
	})
	if err != nil {
		t.Fatalf("digest of %s: %v", root, err)
	}
	return d
}

// `gosbx policy export --oci` writes nothing (issue 14): on a workspace with a
// repository missing its hooks/ and info/, an unpopulated submodule path, a checked-out
// submodule and a linked worktree, in git commit mode (where the guard needs directories
// made), the tree is unchanged byte for byte, mtimes included. The launch itself still
// makes them, before the command runs, read-only inside.
func TestPolicyExportWritesNothing(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		mainRepo := filepath.Join(s.ws, "main")
		src := filepath.Join(s.base, "subsrc")
		s.newRepo(src, "sub-commit")
		s.newRepo(mainRepo, "main-commit")
		s.hostGit(mainRepo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
		sha := strings.TrimSpace(mustGitOut(s, mainRepo, "rev-parse", "HEAD"))
		s.hostGit(mainRepo, "update-index", "--add", "--cacheinfo", "160000,"+sha+",unpopulated")
		s.hostGit(mainRepo, "worktree", "add", "-q", "-b", "wtb", filepath.Join(s.ws, "wt"))
		s.newRepo(filepath.Join(s.ws, "plain"), "plain")
		for _, d := range []string{"main/.git/hooks", "main/.git/info", "plain/.git/hooks", "plain/.git/info", "main/.git/modules/sub/hooks"} {
			must(t, os.RemoveAll(filepath.Join(s.ws, d)))
		}
		pol := s.commitPolicy()
		before := fullDigest(t, s.base)
		for _, dir := range []string{s.ws, mainRepo, filepath.Join(s.ws, "wt")} {
			r := s.rawRun("policy", "export", "--oci", "--policy", pol, "--workspace", dir, "--", "true")
			if r.code != 0 || !strings.Contains(r.stdout, "org.gosbx.make-dirs") {
				t.Fatalf("export for %s:\n%v", dir, r)
			}
		}
		if d := digestDiff(before, fullDigest(t, s.base)); len(d) > 0 {
			t.Fatalf("policy export --oci changed the host: %v", d)
		}
		// the launch makes them, and the command cannot write in them
		r := s.sh([]string{"--policy", pol}, `touch main/.git/hooks/x 2>/dev/null && echo WROTE-HOOK
touch plain/.git/info/x 2>/dev/null && echo WROTE-INFO
git -C main/unpopulated init -q 2>/dev/null && echo INIT-UNPOPULATED
exit 0`)
		mustSucceed(t, r, "commit-mode launch")
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "INIT") {
			t.Errorf("a guarded directory the launch made was writable:\n%v", r)
		}
		for _, d := range []string{"main/.git/hooks", "main/.git/info", "plain/.git/hooks", "plain/.git/info", "main/.git/modules/sub/hooks", "main/unpopulated"} {
			if st, err := os.Stat(filepath.Join(s.ws, d)); err != nil || !st.IsDir() {
				t.Errorf("the launch did not make %s: %v", d, err)
			}
		}
	})
}
