package cleanup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// An index the command wrote is written anew with every entry's stat data zeroed and
// its cache tree dropped (git then hashes the files: git status still right); one as
// it was at launch is left alone; versions 2-4, split or not.
func TestIndexWrittenAnew(t *testing.T) {
	for _, c := range []struct{ ver, split string }{{"2", ""}, {"3", ""}, {"4", ""}, {"2", "split"}} {
		t.Run(c.ver+c.split, func(t *testing.T) {
			dir := t.TempDir()
			gitIn(t, dir, "init", "-q")
			for _, f := range []string{"a.sh", "b.txt", "sub/c.txt"} {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
				os.WriteFile(filepath.Join(dir, f), []byte("v1\n"), 0o644)
			}
			gitIn(t, dir, "add", ".")
			gitIn(t, dir, "commit", "-qm", "x")
			gitIn(t, dir, "update-index", "--index-version", c.ver)
			if c.split != "" {
				gitIn(t, dir, "update-index", "--split-index")
			}
			gitIn(t, dir, "write-tree") // a cache tree
			p := filepath.Join(dir, ".git", "index")
			was, err := IndexStamps(p, 20)
			if err != nil || len(was) != 1+len(c.split)/len("split") {
				t.Fatalf("IndexStamps: %+v %v", was, err)
			}
			var before unix.Stat_t
			unix.Stat(p, &before)
			if r, f := Run([]Entry{{Kind: RemoveIndexBits, Path: p, HashLen: 20, Was: was}}); len(r)+len(f) != 0 {
				t.Fatalf("unchanged: removed %q, failed %q", r, f)
			}
			var after unix.Stat_t
			unix.Stat(p, &after)
			if after.Ino != before.Ino {
				t.Errorf("an index as it was at launch was written anew")
			}
			os.WriteFile(filepath.Join(dir, "b.txt"), []byte("v2\n"), 0o644)
			gitIn(t, dir, "add", "b.txt")
			gitIn(t, dir, "write-tree")
			if dbg := gitIn(t, dir, "ls-files", "--debug"); !strings.Contains(dbg, "size: 3") {
				t.Fatalf("the test's index has no stat data: %s", dbg)
			}
			if r, f := Run([]Entry{{Kind: RemoveIndexBits, Path: p, HashLen: 20, Was: was}}); len(r)+len(f) != 0 {
				t.Fatalf("changed: removed %q, failed %q", r, f)
			}
			dbg := gitIn(t, dir, "ls-files", "--debug")
			if strings.Count(dbg, "ctime: 0:0") != 3 || strings.Count(dbg, "mtime: 0:0") != 3 || strings.Count(dbg, "size: 0") != 3 || strings.Count(dbg, "ino: 0") != 3 {
				t.Errorf("the stat data is not zeroed:\n%s", dbg)
			}
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "TREE") {
				t.Errorf("the cache tree is kept")
			}
			if c.split != "" && !strings.Contains(string(b), "link") {
				t.Errorf("the link extension is dropped")
			}
			if st := gitIn(t, dir, "status", "--porcelain"); st != "M  b.txt\n" {
				t.Errorf("git status reads %q", st)
			}
			if ls := gitIn(t, dir, "ls-files", "-s", "b.txt"); !strings.Contains(ls, "b.txt") {
				t.Errorf("git ls-files reads %q", ls)
			}
		})
	}
}

// An index over MaxIndex bytes (git reads a large extension silently) is moved aside
// whole after the run: nothing gosbx cannot read stays where git reads it.
func TestIndexOverCapMovedAside(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "index")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("DIRC")
	f.Truncate(MaxIndex + 1) // sparse
	f.Close()
	r, fl := Run([]Entry{{Kind: RemoveIndexBits, Path: p, HashLen: 20}})
	if len(fl) != 0 || len(r) != 1 || !strings.Contains(r[0], "moved aside to "+p+".gosbx-aside") {
		t.Fatalf("removed %q, failed %q", r, fl)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("the index is still there")
	}
}
