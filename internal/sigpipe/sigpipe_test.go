package sigpipe

import (
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Signals sent to the process, and one sent to a single thread, arrive on the pipe, in
// order, and the pipe is one the runtime polls (a read deadline applies). With the
// runtime's handlers left in place (no rt_sigaction) nothing arrives: the first read
// times out (checked).
func TestCatch(t *testing.T) {
	f, err := Catch(unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGHUP)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatalf("the pipe is not pollable: %v", err)
	}
	want := []unix.Signal{unix.SIGUSR1, unix.SIGHUP, unix.SIGWINCH, unix.SIGUSR2}
	var got []unix.Signal
	buf := make([]byte, 16)
	for i, s := range want {
		if i == len(want)-1 {
			// to this thread alone, as tgkill(2) sends it
			if err := unix.Tgkill(os.Getpid(), unix.Gettid(), s); err != nil {
				t.Fatal(err)
			}
		} else if err := unix.Kill(os.Getpid(), s); err != nil {
			t.Fatal(err)
		}
		// each read before the next send: the order is the sends' order
		sigs, err := Read(f, buf)
		if err != nil {
			t.Fatalf("read after %v: %v", s, err)
		}
		got = append(got, sigs...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("caught %v, want %v", got, want)
	}
	// nothing more is pending: a read times out
	f.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if sigs, err := Read(f, buf); !os.IsTimeout(err) {
		t.Fatalf("read with nothing sent: %v, %v", sigs, err)
	}
}
