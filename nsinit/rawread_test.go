package nsinit

import (
	"errors"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// nonblockPipe is a pipe whose read end is non-blocking and pollable, as launchRaw
// makes the raw init's report pipe.
func nonblockPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	unix.SetNonblock(p[0], true)
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestReadFullRaw: a record written in two parts, the second from another goroutine
// (the reader waits in the poller for it when it finds the pipe empty), is read whole; a record cut short by the writer's
// close is io.ErrUnexpectedEOF; a close before any byte is io.EOF.
func TestReadFullRaw(t *testing.T) {
	r, w := nonblockPipe(t)
	want := []byte("0123456789abcdef")
	w.Write(want[:10])
	// the reader takes the first 10 bytes and then, unless this write came first,
	// finds the pipe empty and waits in the poller
	go w.Write(want[10:])
	b := make([]byte, 16)
	if err := readFullRaw(r, b); err != nil || string(b) != string(want) {
		t.Fatalf("readFullRaw = %q, %v; want %q", b, err, want)
	}

	r, w = nonblockPipe(t)
	w.Write([]byte("abc"))
	w.Close()
	if err := readFullRaw(r, b); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a cut record: %v, want io.ErrUnexpectedEOF", err)
	}
	r, w = nonblockPipe(t)
	w.Close()
	if err := readFullRaw(r, b); err != io.EOF {
		t.Fatalf("an empty pipe closed: %v, want io.EOF", err)
	}
}
