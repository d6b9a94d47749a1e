package policy

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// indexHeader is an index's header: DIRC, version 2, n entries.
func indexHeader(n uint32) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	binary.Write(&b, binary.BigEndian, uint32(2))
	binary.Write(&b, binary.BigEndian, n)
	return b.Bytes()
}

// plantSparse writes head at p and makes p size bytes long (a hole after head).
func plantSparse(t *testing.T, p string, head []byte, size int64) {
	t.Helper()
	if err := os.WriteFile(p, head, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}

// Attack review round three, F3: a sparse index planted by a sandbox is refused before
// it is read (its zeros are no extension git writes; a header whose count its size
// cannot hold), without reading it into memory; and what a launch reads of such files
// in all is bounded by its read budget.
func TestReadIndexPlanted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "index")
	// the review's index: no entries, then 530 MB of zeros
	plantSparse(t, p, indexHeader(0), 530000000)
	start := time.Now()
	if _, _, err := readIndex(p, 20, newReadBudget()); err == nil || !strings.Contains(err.Error(), "not one git writes") {
		t.Errorf("a sparse index of zeros: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing a sparse index took %v", d)
	}
	// more entries than the file can hold
	plantSparse(t, p, indexHeader(1<<30), 4096)
	if _, _, err := readIndex(p, 20, newReadBudget()); err == nil || !strings.Contains(err.Error(), "more than its") {
		t.Errorf("an entry count the file cannot hold: %v", err)
	}
	// an optional extension of 100 MiB (valid as git reads it): read, and charged
	var ext bytes.Buffer
	ext.Write(indexHeader(0))
	ext.WriteString("ZZZZ")
	binary.Write(&ext, binary.BigEndian, uint32(100<<20))
	plantSparse(t, p, ext.Bytes(), int64(ext.Len())+100<<20+20)
	rb := newReadBudget()
	if _, _, err := readIndex(p, 20, rb); err != nil {
		t.Fatalf("an index with a large optional extension: %v", err)
	}
	if spent := launchReadBudget - rb.left; spent < 100<<20 {
		t.Errorf("the read budget was charged %d bytes for a 100 MiB index", spent)
	}
	// three of them in one launch are past its budget: an error naming the file
	var err error
	for i := 0; i < 3 && err == nil; i++ {
		_, _, err = readIndex(p, 20, rb)
	}
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "MiB read") {
		t.Errorf("past the launch's read budget: %v", err)
	}
}
