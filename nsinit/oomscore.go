package nsinit

import (
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The commands are the OOM killer's first choice, before pid 1 (docs/decisions.md, "The
// commands are the OOM killer's first choice"; review13 F2). A command and the
// sandbox's init share the memory cgroup, and the pages of a tmpfs (the sandbox's /tmp,
// /dev/shm) belong to no process: a command that filled one past --memory got the
// init killed, the largest RSS in the group, and with it a session and every command
// of it. oom_badness (mm/oom_kill.c) adds oom_score_adj × (the limit in pages / 1000)
// to a process's RSS and page tables: a command at oomScoreAdj (1000, the most) so
// outscores the init at any limit above about twice the init's RSS, and an unkillable
// setting (-1000) is never made.
//
// oom_score_adj is inherited at fork (copy_signal) and no process of the sandbox may
// open its own /proc/PID/oom_score_adj once pid 1 is not dumpable (the child of a not
// dumpable process shares its memory until execve: proc(5) then gives the file to the
// host's root). So pid 1 opens its own while it may, raises it to 1000 right before
// each command's fork and puts its own value back once the command executed: raising
// needs no privilege, and the way back goes no lower than the value pid 1 had, which is
// its oom_score_adj_min or above (the minimum is set only by a writer with
// CAP_SYS_RESOURCE in the initial user namespace). A command may likewise lower its own
// back to that inherited value, no lower: that makes pid 1 a candidate again and so can
// end only its own sandbox, which it may end anyway.
//
// That is the Go init's way: its memory is its own (executed), shared by no process
// once the holder has executed (awaitHolder, before any command's fork) but by the
// command children, whose CLONE_VFORK makes __set_oom_adj (fs/proc/base.c) pass them
// by; its threads are the one process. The raw init shares the launcher's memory
// (CLONE_VM, no CLONE_VFORK: MMF_MULTIPROCESS), and __set_oom_adj copies a write of
// its value to every process of that memory, the launcher's own (review15 F2): so the
// raw init never writes it, and the command's process stage raises its own instead
// (planRawStart: vfork_done set, the write is its alone), its file opened while it
// sets the memory dumpable for that open.

// oomScoreAdj is every command's oom_score_adj (proc(5)).
const oomScoreAdj = "1000"

// oomScorePath is the process's own oom_score_adj file.
const oomScorePath = "/proc/self/oom_score_adj"

// atFdcwd is AT_FDCWD (-100) as a system call argument.
const atFdcwd = ^uintptr(99)

// oomScore is pid 1's own oom_score_adj file, open, and the value it had.
type oomScore struct {
	fd   int // 0 when not open (0 is the init's stdin)
	orig []byte
}

// open opens pid 1's own oom_score_adj and reads its value. Errors name the path.
func (o *oomScore) open() error {
	fd, err := unix.Open(oomScorePath, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", oomScorePath, err)
	}
	b := make([]byte, 16)
	n, err := unix.Read(fd, b)
	if err != nil || n == 0 {
		unix.Close(fd)
		return fmt.Errorf("read %s: %w", oomScorePath, orEOF(err))
	}
	o.fd, o.orig = fd, bytes.TrimSpace(b[:n])
	return nil
}

func orEOF(err error) error {
	if err == nil {
		return os.ErrClosed
	}
	return err
}

// raise sets pid 1's oom_score_adj to oomScoreAdj, for the command about to be forked
// to inherit. Errors are step "oom score" errors.
func (o *oomScore) raise() error {
	if o.fd <= 0 {
		return nil // no init of the kernel's (unit tests)
	}
	if _, err := unix.Write(o.fd, []byte(oomScoreAdj)); err != nil {
		return &stepError{"oom score", fmt.Errorf("write %s to %s: %w", oomScoreAdj, oomScorePath, err)}
	}
	return nil
}

// restore puts pid 1's own value back (never refused: not below its minimum).
func (o *oomScore) restore() {
	if o.fd > 0 {
		unix.Write(o.fd, o.orig)
	}
}
