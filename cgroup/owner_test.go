package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// An owner's lock file is never seen unlocked: a sweep that finds a file without a
// group locks it if it can and removes it (sweepOwnerLocks), and one that locked a new
// owner's file before its owner did and then stalled made ownerLock fail ("held or
// removed by another process again and again", seen under two concurrent test loops).
// Here a stand-in sweep locks every file the moment it appears (inotify IN_CREATE,
// IN_MOVED_TO) and holds what it gets: it must get none, and each ownerLock succeed.
func TestOwnerLockBornLocked(t *testing.T) {
	old := ownerLockDir
	locks := t.TempDir()
	ownerLockDir = func(uid int) string { return filepath.Join(locks, strconv.Itoa(uid)) }
	t.Cleanup(func() { ownerLockDir = old })
	dfd, dir, err := openLockDir()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := unix.InotifyAddWatch(in, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(in)
		t.Fatal(err)
	}
	const n = 200
	got := make(chan []string, 1)
	go func() {
		defer unix.Close(in)
		var unlocked []string
		var held []int
		defer func() { closeFds(held) }()
		buf := make([]byte, 64<<10)
		for seen := 0; seen < n; {
			m, err := unix.Read(in, buf)
			if err != nil {
				break
			}
			for off := 0; off < m; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				name := string(buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)])
				off += unix.SizeofInotifyEvent + int(ev.Len)
				name = name[:clen(name)]
				seen++
				fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
					unlocked = append(unlocked, name)
				}
				held = append(held, fd) // a stalled sweep: never let go
			}
		}
		got <- unlocked
	}()
	var owners []*os.File
	for range n {
		f, err := ownerLock(groupName(NewID()))
		if err != nil {
			t.Error(err)
			break
		}
		owners = append(owners, f)
	}
	if len(owners) == n {
		if unlocked := <-got; len(unlocked) > 0 {
			t.Errorf("%d of %d lock files locked by another process before their owner (first %s)", len(unlocked), n, unlocked[0])
		}
	}
	for _, f := range owners {
		releaseOwner(f)
	}
}

// clen is the length of an inotify name without its NUL padding.
func clen(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return i
		}
	}
	return len(s)
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
