package dirent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEach(t *testing.T) {
	dir := t.TempDir()
	var want []string
	for i := range 300 { // more than one getdents64 call with a small buffer
		n := "entry-" + string(rune('a'+i%26)) + filepath.Base(t.Name()) + string(rune('0'+i/26))
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		want = append(want, n)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	want = append(want, "sub")
	open := func() int {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	var got []string
	subType := uint8(0)
	if err := Each(open(), make([]byte, 1024), func(name []byte, typ uint8) error {
		got = append(got, string(name))
		if string(name) == "sub" {
			subType = typ
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("listed %d names, want %d (no . or ..): %q", len(got), len(want), got[:min(5, len(got))])
	}
	if subType != unix.DT_DIR && subType != unix.DT_UNKNOWN {
		t.Errorf("d_type of a directory: %d", subType)
	}

	n := 0
	if err := Each(open(), make([]byte, 1024), func([]byte, uint8) error { n++; return ErrStop }); err != nil || n != 1 {
		t.Errorf("ErrStop: %d calls, error %v; want 1 call, nil", n, err)
	}
	boom := errors.New("boom")
	if err := Each(open(), make([]byte, 1024), func([]byte, uint8) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("fn's error: got %v", err)
	}
	if err := Each(-1, make([]byte, 1024), func([]byte, uint8) error { return nil }); !errors.Is(err, unix.EBADF) {
		t.Errorf("a bad descriptor: got %v, want EBADF", err)
	}
}
