package memtrim

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ownFilePages sums, over this test binary's mappings, the Private_Clean +
// Private_Dirty KiB of /proc/self/smaps (pages only this process maps): of its
// read-only and executable mappings (ro) and of its writable ones (rw).
func ownFilePages(t *testing.T) (ro, rw int) {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cur *int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		fs := strings.Fields(l)
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			cur = nil
			if len(fs) >= 6 && fs[5] == exe {
				if fs[1][1] == 'w' {
					cur = &rw
				} else {
					cur = &ro
				}
			}
			continue
		}
		if cur != nil && (fs[0] == "Private_Clean:" || fs[0] == "Private_Dirty:") {
			n, _ := strconv.Atoi(fs[1])
			*cur += n
		}
	}
	return ro, rw
}

var written = []int{1, 2, 3} // in the binary's writable data

// TestDropFilePages: Drop takes this process's exclusively mapped pages of its own
// binary's code and read-only data out of its resident set (smaps, as the kernel
// counts them), and leaves its writable mappings, and what was written there, alone.
func TestDropFilePages(t *testing.T) {
	written[1] = 42
	p, err := OpenFilePages()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ro, rw := ownFilePages(t)
	if ro < 256 {
		t.Fatalf("only %d KiB of the test binary's read-only pages are its own: nothing to show", ro)
	}
	n, err := p.Drop()
	if err != nil {
		t.Fatal(err)
	}
	ro2, rw2 := ownFilePages(t)
	t.Logf("dropped %d KiB; read-only own pages %d → %d KiB, writable %d → %d KiB", n>>10, ro, ro2, rw, rw2)
	// what runs between the drop and the count (reading smaps) faults some back in,
	// 64 KiB at a time (fault-around)
	if n < (ro/2)<<10 || ro2 > ro-512 {
		t.Errorf("read-only own pages %d → %d KiB, %d KiB dropped: want at least half dropped, and 512 KiB fewer after", ro, ro2, n>>10)
	}
	if rw2 < rw-8 {
		t.Errorf("writable own pages %d → %d KiB: want them kept", rw, rw2)
	}
	if written[1] != 42 || written[0] != 1 {
		t.Errorf("written data %v after the drop: want [1 42 3]", written)
	}
}
