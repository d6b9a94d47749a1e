package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/rawplan"
)

// The raw child runs its plan in a process of its own (another pid, the launcher's
// memory): what it makes is on disk when it waits on its pipe; it stops at the op that
// fails, whose step and errno the parent reads from the report, and exits 125; a plan
// run to its end exits 0 and reports nothing.
func TestRawCloneRuns(t *testing.T) {
	for _, fail := range []bool{false, true} {
		dir := t.TempDir()
		dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		var rep, gate, ready [2]int
		if err := unix.Pipe2(ready[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := unix.Pipe2(rep[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := unix.Pipe2(gate[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		p, err := rawplan.New(64<<10, 64)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Free()
		s := p.Begin("made")
		p.Call(s, nil, unix.SYS_MKDIRAT, rawplan.Lit(uintptr(dfd)), rawplan.Lit(p.Str("made")), rawplan.Lit(0o700))
		p.Call(s, nil, unix.SYS_WRITE, rawplan.Lit(uintptr(ready[1])), rawplan.Lit(p.Str("r")), rawplan.Lit(1))
		s = p.Begin("wait")
		p.Op(s, nil, rawplan.ReadOne, unix.SYS_READ, rawplan.Lit(uintptr(gate[0])), rawplan.Lit(p.Str("x")), rawplan.Lit(1))
		if fail {
			s = p.Begin("again")
			p.Call(s, nil, unix.SYS_MKDIRAT, rawplan.Lit(uintptr(dfd)), rawplan.Lit(p.Str("made")), rawplan.Lit(0o700))
		}
		pid, err := rawplan.Start(p, 0, rep[1])
		unix.Close(rep[1])
		unix.Close(gate[0])
		unix.Close(ready[1])
		unix.Close(dfd)
		if err != nil {
			t.Fatal(err)
		}
		if pid == os.Getpid() || pid <= 0 {
			t.Fatalf("child pid %d", pid)
		}
		// the child made the directory and now waits on the gate
		var b [1]byte
		if n, err := readFull(ready[0], b[:]); n != 1 || err != nil {
			t.Fatalf("no ready byte from the child: %v", err)
		}
		unix.Close(ready[0])
		if st, err := os.Stat(filepath.Join(dir, "made")); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("the child's directory: %v", err)
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			t.Fatalf("the child is not a process: %v", err)
		}
		unix.Write(gate[1], []byte{1})
		unix.Close(gate[1])
		rerr := readRawReport(p, rep[0])
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			t.Fatal(err)
		}
		var se *stepError
		switch {
		case !fail && (rerr != nil || ws.ExitStatus() != 0):
			t.Errorf("plan to its end: %v, %v", rerr, ws)
		case fail && (!errors.As(rerr, &se) || se.step != "again" || !errors.Is(rerr, unix.EEXIST) || ws.ExitStatus() != ExitSetup):
			t.Errorf("failing plan: %v, %v; want step again, EEXIST, 125", rerr, ws)
		}
	}
}
