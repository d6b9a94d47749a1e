package policy

import (
	"os"
	"runtime"
	"syscall"
	"testing"
)

// readMountinfo gives the kept table again only while nothing was mounted since and
// the thread is in the same mount namespace: a tmpfs mounted in between is in the next
// read, and a thread of another mount namespace reads its own table (proc(5): poll's
// POLLPRI on mountinfo). Root only (a mount namespace of the test's own thread).
func TestMountinfoMemo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: unshare(CLONE_NEWNS) and mount")
	}
	first, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	again, err := readMountinfo()
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || &first[0] != &again[0] {
		t.Errorf("an unchanged table was read again (or none was read)")
	}
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // the thread ends with the goroutine: its namespace with it
		if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			t.Errorf("make / private: %v", err)
			return
		}
		own, err := readMountinfo()
		if err != nil {
			t.Error(err)
			return
		}
		if len(own) == 0 || &own[0] == &first[0] {
			t.Errorf("a thread of another mount namespace got the kept table")
		}
		if _, ok := placeOf(own, dir); !ok {
			t.Errorf("no mount holds %s", dir)
		}
		if err := syscall.Mount("memo", dir, "tmpfs", 0, ""); err != nil {
			t.Errorf("mount: %v", err)
			return
		}
		after, err := readMountinfo()
		if err != nil {
			t.Error(err)
			return
		}
		found := false
		for _, m := range after {
			found = found || m.point == dir
		}
		if !found {
			t.Errorf("the tmpfs mounted at %s after the last read is not in the table read next", dir)
		}
	}()
	<-done
	if back, err := readMountinfo(); err != nil || len(back) == 0 {
		t.Errorf("the test's own thread: %v", err)
	} else {
		for _, m := range back {
			if m.point == dir {
				t.Errorf("the other namespace's tmpfs is in this thread's table")
			}
		}
	}
}
