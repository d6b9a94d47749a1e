package nsinit

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestSessionSyncReaderSmallBuffer: a session command's reports read through the small
// buffer (sessionSyncBuf) come whole, a frame many times its size among short ones.
func TestSessionSyncReaderSmallBuffer(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	long := strings.Repeat("x", 20*sessionSyncBuf)
	want := []message{{Type: msgExec, Pid: 7}, {Type: msgError, Step: "exec", Error: long, Path: "/bin/true"}, {Type: msgExit, Status: 3}}
	go func() {
		for _, m := range want {
			syncWriter{w}.send(m)
		}
		w.Close()
	}()
	sr := &syncReader{r: bufio.NewReaderSize(r, sessionSyncBuf)}
	for i, m := range want {
		got, ok := sr.next()
		if !ok || got.Type != m.Type || got.Error != m.Error || got.Pid != m.Pid || got.Status != m.Status || got.Path != m.Path {
			t.Fatalf("message %d: %+v, %v; want %+v", i, got, ok, m)
		}
	}
	if _, ok := sr.next(); ok {
		t.Fatal("a message after the last")
	}
}
