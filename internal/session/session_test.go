package session

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a", "dev", "my-app_2.test", "A9"} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".x", "-x", "a/b", "..", "a b", "x\x00", string(make([]byte, 65))} {
		if CheckName(bad) == nil {
			t.Errorf("CheckName(%q) accepted", bad)
		}
	}
}

// Dir takes $XDG_RUNTIME_DIR only when it is the caller's and 0700.
func TestDir(t *testing.T) {
	x := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(x, 0o700))
	t.Setenv("XDG_RUNTIME_DIR", x)
	d, err := Dir()
	if err != nil || d != filepath.Join(x, "gosbx") {
		t.Fatalf("Dir() = %q, %v; want %s/gosbx", d, err, x)
	}
	if fi, err := os.Lstat(d); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v %v; want mode 0700", d, fi.Mode(), err)
	}
	must(os.Chmod(x, 0o755))
	d, err = Dir()
	if os.Getuid() != 0 && err == nil {
		t.Errorf("Dir() with a 0755 XDG_RUNTIME_DIR = %q; want refused", d)
	}
	if os.Getuid() == 0 && (err != nil || d != "/run/gosbx") {
		t.Errorf("Dir() for root with a 0755 XDG_RUNTIME_DIR = %q, %v; want /run/gosbx", d, err)
	}
	// a gosbx directory of the wrong mode is refused, not repaired
	must(os.Chmod(x, 0o700))
	must(os.Chmod(filepath.Join(x, "gosbx"), 0o755))
	if _, err := Dir(); err == nil {
		t.Error("Dir() accepted a 0755 gosbx directory")
	}
}

// Lock: one holder at a time; a holder's lock file unlinked by its end is not taken by
// a waiter that opened it before.
func TestLock(t *testing.T) {
	f := FilesOf(t.TempDir(), "s")
	a, err := Lock(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(f); !errors.Is(err, ErrExists) {
		t.Fatalf("second Lock: %v, want ErrExists", err)
	}
	stale, err := os.Open(f.Lock)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	Remove(f)
	a.Close()
	b, err := Lock(f)
	if err != nil {
		t.Fatalf("Lock after the holder's end: %v", err)
	}
	defer b.Close()
	var st1, st2 unix.Stat_t
	unix.Fstat(int(b.Fd()), &st1)
	unix.Fstat(int(stale.Fd()), &st2)
	if st1.Ino == st2.Ino {
		t.Error("Lock took the unlinked file")
	}
}

// A frame and its descriptor cross a socket; the peer's close is io.EOF.
func TestFrame(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	r := &ExecRequest{Args: []string{"sh", "-c", "x"}, Env: []string{"A=1"}, Chdir: "sub", Timeout: 1500 * time.Millisecond, Status: true, TTY: true, Rows: 3, Cols: 4}
	if err := WriteFrame(fds[0], ReqExec, r.Encode(), []int{1}); err != nil {
		t.Fatal(err)
	}
	unix.Close(fds[0])
	kind, body, got, err := ReadFrame(fds[1], 3)
	if err != nil || kind != ReqExec || len(got) != 1 {
		t.Fatalf("ReadFrame = %c, %d fds, %v", kind, len(got), err)
	}
	unix.Close(got[0])
	back, err := DecodeExec(body)
	if err != nil || back.Chdir != "sub" || back.Timeout != r.Timeout || !back.TTY || back.Cols != 4 || len(back.Args) != 3 {
		t.Errorf("DecodeExec = %+v, %v", back, err)
	}
	if _, _, _, err := ReadFrame(fds[1], 0); err != io.EOF {
		t.Errorf("ReadFrame after close: %v, want io.EOF", err)
	}
}

// RecordEnd writes one line EndedWhy reads back; a FIFO at the record's name (or its
// temporary name) blocks neither, and is not read as a record.
func TestEndedRecord(t *testing.T) {
	f := FilesOf(t.TempDir(), "s")
	if got := EndedWhy(f); got != "" {
		t.Errorf("no record: %q", got)
	}
	if err := unix.Mkfifo(f.Ended+".new", 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- RecordEnd(f, "it ended: x") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RecordEnd blocked on a FIFO at its temporary name")
	}
	if got := EndedWhy(f); got != "it ended: x" {
		t.Errorf("EndedWhy = %q", got)
	}
	os.Remove(f.Ended)
	if err := unix.Mkfifo(f.Ended, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := EndedWhy(f); got != "" {
		t.Errorf("a FIFO read as a record: %q", got)
	}
}
