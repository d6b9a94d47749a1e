package filerelay

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNeeded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(flags int) int {
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	nfd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(nfd)
	dfd := func() int {
		fd, err := unix.Open(filepath.Dir(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}()
	for _, c := range []struct {
		name string
		fd   int
		want bool
	}{
		{"file read-only", open(unix.O_RDONLY), true},
		{"file read-write", open(unix.O_RDWR), false},
		{"file write-only", open(unix.O_WRONLY), false},
		{"file O_PATH", open(unix.O_PATH), false},
		{"pipe read end", int(r.Fd()), true},
		{"pipe write end", int(w.Fd()), false},
		{"/dev/null", nfd, false},
		{"directory", dfd, false},
	} {
		got, err := Needed(c.fd)
		if err != nil || got != c.want {
			t.Errorf("%s: Needed = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// The relay copies the file from its offset; Stop gives back what the reader did not
// take.
func TestRelayOffset(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(100, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	pr, rl, err := New(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	rl.Start()
	got := make([]byte, 5000)
	if _, err := io.ReadFull(pr, got); err != nil {
		t.Fatal(err)
	}
	if err := rl.Stop(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if string(got) != string(data[100:5100]) {
		t.Fatal("relayed bytes differ from the file's")
	}
	if off, _ := f.Seek(0, io.SeekCurrent); off != 5100 {
		t.Fatalf("offset after Stop: %d, want 5100", off)
	}

	// to the end: EOF reaches the reader
	pr, rl, err = New(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	rl.Start()
	rest, err := io.ReadAll(pr)
	if err != nil || string(rest) != string(data[5100:]) {
		t.Fatalf("rest: %d bytes, %v", len(rest), err)
	}
	if err := rl.Stop(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	if off, _ := f.Seek(0, io.SeekCurrent); off != int64(len(data)) {
		t.Fatalf("offset at the end: %d", off)
	}
}

// A pipe's relay takes from the caller's pipe only what the reader read, and keeps
// working after the caller closes its own descriptor (os/exec's pattern).
func TestRelayPipeTakesWhatWasRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("line1\nline2\nline3\n")); err != nil {
		t.Fatal(err)
	}
	dup, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	keep := os.NewFile(uintptr(dup), "keep")
	defer keep.Close()
	pr, rl, err := New(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the caller's copy: the relay holds its own
	rl.Start()
	got := make([]byte, 6)
	if _, err := io.ReadFull(pr, got); err != nil || string(got) != "line1\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := rl.Stop(); err != nil {
		t.Fatal(err)
	}
	pr.Close()
	w.Close()
	rest, _ := io.ReadAll(keep)
	if string(rest) != "line2\nline3\n" {
		t.Fatalf("left in the caller's pipe: %q, want the two lines not read", rest)
	}
}
