package prefault

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const sampleMaps = `00400000-007eb000 r-xp 00000000 fe:00 9978057                            /tmp/gosbx
007eb000-00b91000 r--p 003eb000 fe:00 9978057                            /tmp/gosbx
00b91000-00bc7000 rw-p 00791000 fe:00 9978057                            /tmp/gosbx
00bc7000-00c01000 rw-p 00000000 00:00 0 
3dafd4000000-3dafd6800000 ---p 00000000 00:00 0 
3dafd6800000-3dafd6c00000 rw-p 00000000 00:00 0 
7f22819ff000-7f2281d00000 rw-p 00000000 00:00 0 
7ffc0f5b6000-7ffc0f5d7000 rw-p 00000000 00:00 0                          [stack]
`

func TestFindMapping(t *testing.T) {
	lo, hi, ok := findMapping([]byte(sampleMaps), 0x3dafd6900000)
	if !ok || lo != 0x3dafd6800000 || hi != 0x3dafd6c00000 {
		t.Errorf("findMapping(heap) = %#x-%#x %v", lo, hi, ok)
	}
	if _, _, ok := findMapping([]byte(sampleMaps), 0x3dafd5000000); ok {
		t.Error("findMapping of a PROT_NONE reservation is writable")
	}
	if _, _, ok := findMapping([]byte(sampleMaps), 0x500000); ok {
		t.Error("findMapping of text is writable")
	}
	if _, _, ok := findMapping([]byte("garbage\n-\n12-\n"), 0x12); ok {
		t.Error("findMapping accepted a malformed line")
	}
}

func TestIsOneShotExec(t *testing.T) {
	for _, c := range []struct {
		argv string
		want bool
	}{
		{"gosbx\x00exec\x00--\x00true\x00", true},
		{"gosbx\x00exec\x00--workspace\x00/w\x00true\x00", true},
		{"gosbx\x00exec\x00--\x00--session\x00", true}, // the command's own word
		{"gosbx\x00exec\x00--session\x00s\x00--\x00true\x00", false},
		{"gosbx\x00exec\x00--session=s\x00true\x00", false},
		{"gosbx\x00version\x00", false},
		{"gosbx\x00", false},
		{"", false},
		{"gosbx\x00session\x00exec\x00", false},
	} {
		if got := isOneShotExec([]byte(c.argv)); got != c.want {
			t.Errorf("isOneShotExec(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

// resident counts the resident pages of [lo, hi) (mincore(2)).
func resident(t *testing.T, lo, hi uintptr) (in, out int) {
	t.Helper()
	vec := make([]byte, (hi-lo)>>12)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatalf("mincore %#x-%#x: %v", lo, hi, e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			in++
		} else {
			out++
		}
	}
	return in, out
}

// TestPopulateMakesResident: populate leaves the heap range after a fresh allocation
// resident, which was not before: the test fails if the madvise call is dropped or
// given the wrong range.
func TestPopulateMakesResident(t *testing.T) {
	mark := new([16]byte)
	at := uint64(uintptr(unsafe.Pointer(mark))) &^ 4095
	n := readFile("/proc/self/maps\x00")
	lo, hi, ok := findMapping(buf[:n], at)
	if !ok {
		t.Fatalf("no writable mapping holds the heap address %#x:\n%s", at, buf[:n])
	}
	end := min(max(at, lo)+256<<10, hi)
	_, before := resident(t, uintptr(at), uintptr(end))
	if before == 0 {
		t.Skipf("the %d KiB after the heap's latest allocation are resident already", (end-at)>>10)
	}
	if got := populate(uint64(uintptr(unsafe.Pointer(mark))), end-at); got < int((end-at)>>12) {
		t.Fatalf("populate returned %d pages, want at least %d", got, (end-at)>>12)
	}
	if _, after := resident(t, uintptr(at), uintptr(end)); after != 0 {
		t.Errorf("%d of %d pages still not resident after populate (before: %d)", after, (end-at)>>12, before)
	}
}

// TestInitOnlyForExec: the test binary is not `gosbx exec`, so the init did nothing but
// read its command line.
func TestInitOnlyForExec(t *testing.T) {
	if r := Done(); r.Exec || r.FaultNs != 0 || r.Pages != 0 {
		t.Errorf("Done() = %+v in %v, want nothing done", r, os.Args[:1])
	}
	if c := faultCost(); c <= 0 {
		t.Errorf("faultCost() = %d ns", c)
	}
}
