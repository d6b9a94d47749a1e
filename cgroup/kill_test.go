package cgroup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startSleep starts a process that lives until killed, and a channel closed once it
// has been reaped.
func startSleep(t *testing.T) (*exec.Cmd, chan struct{}) {
	t.Helper()
	c := exec.Command("/bin/sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	t.Cleanup(func() { c.Process.Kill(); <-done })
	return c, done
}

// staleList makes killListed's first read of cgroup.procs also list pid: a pid read
// from the group whose process left it (exited, and its pid given to pid's process)
// before the kill. Only the first read is stale: later ones see the group as it is.
func staleList(t *testing.T, pid int) {
	stale := true
	listProcs = func(dir string) []int {
		if !stale {
			return procs(dir)
		}
		stale = false
		return append(procs(dir), pid)
	}
	t.Cleanup(func() { listProcs = procs })
}

// killedBySIGKILL waits at most 5 s for c to end and says whether SIGKILL ended it.
func killedBySIGKILL(c *exec.Cmd, done chan struct{}) bool {
	select {
	case <-done:
		ws, ok := c.ProcessState.Sys().(syscall.WaitStatus)
		return ok && ws.Signal() == syscall.SIGKILL
	case <-time.After(5 * time.Second):
		return false
	}
}

// untouched says whether c is still running 300 ms after the kill (a pidfd becomes
// readable when its process ends: poll(2) on it, pidfd_open(2)).
func untouched(t *testing.T, c *exec.Cmd) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(c.Process.Pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	end := time.Now().Add(300 * time.Millisecond)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(end), 0)/time.Millisecond))
		if err != unix.EINTR { // the runtime's SIGURG interrupts a poll: wait the rest
			return err == nil && n == 0
		}
	}
}

// A pid that has left the group between the read of cgroup.procs and the kill (its
// number now a host process's) is never signalled; the group's own process is killed.
// The group here is a stand-in directory whose cgroup.procs lists the member only.
func TestKillListedSkipsPidsThatLeft(t *testing.T) {
	member, memberDone := startSleep(t)
	host, _ := startSleep(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(member.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	staleList(t, host.Process.Pid)
	if n := killListed(dir); n != 2 {
		t.Errorf("killListed read %d pids; want 2 (the member and the stale one)", n)
	}
	if !killedBySIGKILL(member, memberDone) {
		t.Errorf("the group's process was not killed: %v", member.ProcessState)
	}
	if !untouched(t, host) {
		t.Errorf("the host process %d, no longer listed by the group, was signalled", host.Process.Pid)
	}
}

// The same through a live v1 group's Destroy (root, v1/hybrid hosts): the membership
// check reads the kernel's cgroup.procs.
func TestV1DestroySkipsPidsThatLeft(t *testing.T) {
	own := v1Own(t)
	g, err := New(res(64<<20, 64<<20, 16, 20000), Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := g.(*v1Group).name
	t.Cleanup(func() { removeDirs(own, n) })
	member, memberDone := startSleep(t)
	host, _ := startSleep(t)
	if err := g.Add(member.Process.Pid); err != nil {
		t.Fatal(err)
	}
	staleList(t, host.Process.Pid)
	if err := g.Destroy(); err != nil {
		t.Errorf("Destroy: %v", err)
	}
	if !killedBySIGKILL(member, memberDone) {
		t.Errorf("the group's process was not killed: %v", member.ProcessState)
	}
	if !untouched(t, host) {
		t.Errorf("the host process %d, not in the group, was signalled by Destroy", host.Process.Pid)
	}
	for c, d := range own {
		if exists(filepath.Join(d, n)) {
			t.Errorf("%s group %s left after Destroy", c, filepath.Join(d, n))
		}
	}
}
