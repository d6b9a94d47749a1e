package main

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutputCopyFlush: what the command wrote before a flush is on the terminal's side
// when it returns, in order; a last flush returns though a writer (a leftover) still
// holds the pipe and keeps writing, and the pipe's read end is then closed (the
// leftover's writes fail with EPIPE).
func TestOutputCopyFlush(t *testing.T) {
	var dst [2]int
	if err := unix.Pipe2(dst[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dst[0])
	defer unix.Close(dst[1])
	unix.SetNonblock(dst[0], true)
	o, w, err := newOutputCopy(dst[1])
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789"), 3000) // more than one read's buffer
	if err := writeAll(w, want); err != nil {
		t.Fatal(err)
	}
	var got []byte
	read := func() {
		b := make([]byte, 1<<16)
		for {
			n, err := unix.Read(dst[0], b)
			if n <= 0 || err != nil {
				return
			}
			got = append(got, b[:n]...)
		}
	}
	o.flush(false)
	read()
	if !bytes.Equal(got, want) {
		t.Fatalf("after a flush: %d bytes, want the %d written", len(got), len(want))
	}
	// a leftover that writes without end: the last flush returns all the same
	stop := make(chan struct{})
	go func() {
		b := make([]byte, 4096)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := unix.Write(w, b); err == unix.EPIPE {
				return
			}
		}
	}()
	go func() { // the terminal's side, read meanwhile
		for {
			select {
			case <-stop:
				return
			default:
			}
			read()
			time.Sleep(time.Millisecond)
		}
	}()
	done := make(chan struct{})
	go func() { o.flush(true); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the last flush did not return while a writer kept writing")
	}
	close(stop)
	unix.SetNonblock(w, true)
	if _, err := unix.Write(w, []byte("x")); err != unix.EPIPE {
		t.Errorf("a write after the last flush: %v, want EPIPE (the read end closed)", err)
	}
	unix.Close(w)
}
