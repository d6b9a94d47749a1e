package sysmon

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// From an attack review (26): OwnThreadSlack writes the slack of a thread of this
// process only. A tid that is another process's (as a tid reused since it was listed
// would be) is refused and that process keeps its slack, even for root; a thread of
// this process gets it.
func TestOwnThreadSlack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing another thread's slack needs CAP_SYS_NICE (root)")
	}
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	path := "/proc/" + strconv.Itoa(other.Process.Pid) + "/timerslack_ns"
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := OwnThreadSlack(other.Process.Pid, "1234567"); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("another process's thread: %v, want ESRCH", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Errorf("another process's slack went from %s to %s", before, after)
	}

	// a thread of this process: this goroutine's, locked to it
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := syscall.Gettid()
	own, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	defer OwnThreadSlack(tid, strings.TrimSpace(string(own)))
	if err := OwnThreadSlack(tid, "1234567"); err != nil {
		t.Fatalf("this process's thread %d: %v", tid, err)
	}
	if got, _ := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/timerslack_ns"); strings.TrimSpace(string(got)) != "1234567" {
		t.Errorf("this process's thread %d has slack %s, want 1234567", tid, got)
	}
}
