package nsinit

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadFrameOnNetpoller: a session init's request loop (readFrameOn through
// pollableSocket) reads a frame whose body is sent after its header (a read of the
// non-blocking socket before it comes gets EAGAIN and waits in the netpoller), with the
// descriptor sent beside it, and ends at the peer's close; fd itself is left
// non-blocking, its copy in the netpoller.
func TestReadFrameOnNetpoller(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := fds[0], os.NewFile(uintptr(fds[1]), "peer")
	defer unix.Close(mine)
	rc, err := pollableSocket(mine)
	if err != nil {
		t.Fatal(err)
	}
	if nb, err := unix.FcntlInt(uintptr(mine), unix.F_GETFL, 0); err != nil || nb&unix.O_NONBLOCK == 0 {
		t.Fatalf("fd flags %#x (%v): want O_NONBLOCK, the copy's description", nb, err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()

	body := []byte("a request body")
	hdr := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	sent := make(chan error, 1)
	step := make(chan struct{})
	go func() {
		// the header with a descriptor, then (once the reader waits) the body
		err := unix.Sendmsg(int(theirs.Fd()), hdr, unix.UnixRights(int(devnull.Fd())), nil, 0)
		<-step
		if err == nil {
			_, err = theirs.Write(body)
		}
		sent <- err
	}()
	got := make(chan struct{})
	var gotBody []byte
	var gotFds []int
	go func() {
		gotBody, gotFds, err = readFrameOn(mine, rc, 4)
		close(got)
	}()
	close(step)
	<-got
	if e := <-sent; e != nil {
		t.Fatal(e)
	}
	if err != nil || string(gotBody) != string(body) || len(gotFds) != 1 {
		t.Fatalf("readFrameOn = %q, %v, %v; want %q and one descriptor", gotBody, gotFds, err, body)
	}
	var st, want unix.Stat_t
	if unix.Fstat(gotFds[0], &st) != nil || unix.Fstat(int(devnull.Fd()), &want) != nil || st.Ino != want.Ino {
		t.Errorf("the descriptor received is not the one sent")
	}
	unix.Close(gotFds[0])

	theirs.Close()
	if b, fds, err := readFrameOn(mine, rc, 4); !errors.Is(err, io.ErrUnexpectedEOF) || b != nil || fds != nil {
		t.Errorf("after the peer's close: %q, %v, %v; want io.ErrUnexpectedEOF", b, fds, err)
	}
}
