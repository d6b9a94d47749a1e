package rawplan

import (
	"testing"

	"golang.org/x/sys/unix"
)

// PollIn passes once its descriptor is readable and fails with EPIPE when it hangs up
// instead (a pipe whose writer is gone), which a plan tolerates to pass over what it
// guards (the raw init's set-ID handler: no execveat when the command's filter ended).
func TestRawPlanPollIn(t *testing.T) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	p := newTestPlan(t)
	s := p.Begin("set-ID handler")
	m := p.Mark()
	p.Op(s, nil, PollIn, unix.SYS_POLL, Lit(uintptr(fds[0]))).Tolerate(unix.EPIPE)
	p.Call(s, nil, unix.SYS_GETPPID)
	p.Guard(m)
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	unix.Write(fds[1], []byte{1})
	k := &kernelCounter{}
	if i, e := Run(p.St, k); i != -1 || k.n[unix.SYS_GETPPID] != 1 {
		t.Errorf("readable: op %d, %v, %d guarded calls; want -1, 1", i, e, k.n[unix.SYS_GETPPID])
	}
	var b [1]byte
	unix.Read(fds[0], b[:])
	unix.Close(fds[1])
	k = &kernelCounter{}
	if i, e := Run(p.St, k); i != -1 || k.n[unix.SYS_GETPPID] != 0 {
		t.Errorf("hung up: op %d, %v, %d guarded calls; want -1, 0", i, e, k.n[unix.SYS_GETPPID])
	}
}
