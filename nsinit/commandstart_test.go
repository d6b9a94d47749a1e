package nsinit

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAwaitCommand: awaitCommand on a report pipe (no child: the test writes the
// child's side). End of file at once: executed, left called, the stack handed back. A
// report (call index, errno) then end of file: that call's error. Nothing within the
// limit: kill called, errNoExec named, and left only once the pipe's end of file comes
// (the child may be on its stack until then).
func TestAwaitCommand(t *testing.T) {
	newPlan := func() *procPlan {
		p := &procPlan{steps: []string{"stdio", "exec"}, path: "/bin/true"}
		p.ops = []procOp{{step: 0, nr: unix.SYS_DUP3, what: "dup3 4 to 0"}, {step: 1, nr: unix.SYS_EXECVE, what: "execve"}}
		p.stack, p.pooled = takeStack(), true
		return p
	}
	pipe := func() (int, int) {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		return fds[0], fds[1]
	}
	never := func() { t.Error("kill called") }

	r, w := pipe()
	unix.Close(w)
	p, left := newPlan(), 0
	if err := awaitCommand(p, r, time.Minute, never, func() { left++ }); err != nil || left != 1 || p.stack != nil {
		t.Errorf("end of file: %v, left %d times, stack kept %v; want nil, once, handed back", err, left, p.stack != nil)
	}

	r, w = pipe()
	unix.Write(w, []byte{1, 0, 0, 0, byte(unix.ENOENT), 0, 0, 0})
	unix.Close(w)
	var ee *execError
	if err := awaitCommand(newPlan(), r, time.Minute, never, func() {}); !errors.As(err, &ee) || ee.errno != unix.ENOENT {
		t.Errorf("a report of execve's ENOENT: %v; want an execError", err)
	}

	r, w = pipe()
	p, killed, ended := newPlan(), 0, make(chan struct{})
	start := time.Now()
	err := awaitCommand(p, r, 100*time.Millisecond, func() { killed++ }, func() { close(ended) })
	if !errors.Is(err, errNoExec) || killed != 1 || time.Since(start) > 5*time.Second {
		t.Errorf("no report: %v, killed %d times after %v; want errNoExec, once, after 100ms", err, killed, time.Since(start))
	}
	select {
	case <-ended:
		t.Fatal("left before the pipe's end of file")
	case <-time.After(50 * time.Millisecond):
	}
	unix.Close(w) // the child's end: it died
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("left not called after the pipe's end of file")
	}
}
