package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockFree reports whether nothing holds a flock(2) on the file at path: taken, without
// waiting, by this process and released at once.
func lockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open the session's lock file: %v", err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return true
	}
	if !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatalf("flock %s: %v", path, err)
	}
	return false
}

// TestSessionLockHeldAcrossGC: the supervisor's flock on NAME.lock lasts its whole
// life. A request that grows its heap (the logs of a job of ~600 KB) is followed by a
// collection once idle (memtrim); the lock file's *os.File had been unreachable, so its
// finalizer closed the descriptor and the flock went with it: a second `session start`
// of the name then started a second supervisor, rc 0 (trial finding F12). Checked from
// outside: the lock stays taken, the second start exits 125 "running already", and one
// supervisor of the name runs.
func TestSessionLockHeldAcrossGC(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		name := fmt.Sprintf("lk%d-%d", os.Getpid(), c.uid) // its supervisor's command line is unique on the host
		e.start(name)
		lock := filepath.Join(e.rt, "gosbx", name+".lock")
		for i := 1; i <= 3; i++ {
			r := e.gosbx("exec", "--session", name, "--detach", "--", "sh", "-c", "head -c 600000 /dev/zero | od -v")
			mustSucceed(t, r, "a detached job of ~600 KB of output")
			id := strings.TrimSpace(r.stdout)
			mustSucceed(t, e.gosbx("job", "wait", id), "job wait")
			if r := e.gosbx("job", "logs", id); r.code != 0 || len(r.stdout) < 1<<20 {
				t.Fatalf("job logs: want its output\n%v", r.stderr)
			}
			// the trim (a collection) comes SessionIdle (250 ms) after the request
			for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				if lockFree(t, lock) {
					t.Fatalf("round %d: the session's lock file is no longer locked by its supervisor", i)
				}
			}
		}
		r := e.gosbx("session", "start", name, "--workspace", e.ws)
		if r.code != 125 || !strings.Contains(r.stderr, "running already") {
			t.Errorf("a second session start of a running session: want 125 \"running already\"\n%v", r)
		}
		if p := hostPIDs("gosbx\x00gosbx-session-supervisor\x00" + name + "\x00"); len(p) != 1 {
			t.Errorf("supervisors of session %s: want one, got %v", name, p)
		}
	})
}

// TestSessionEndLeavesOthersFiles: a supervisor that ends removes only the files it
// made or holds. Here its socket path, then its lock path (with the jobs directory),
// is replaced by another file, as by a second supervisor of the name; its SIGTERM
// removes its own file of the pair and leaves the other's, and writes no NAME.ended
// for a name that is not its own any more (trial finding F12: an orphaned
// supervisor's SIGTERM removed the live one's socket and lock).
func TestSessionEndLeavesOthersFiles(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		e := newSessionEnv(t, c)
		dir := filepath.Join(e.rt, "gosbx")
		plant := func(p string) {
			t.Helper()
			must(t, os.Rename(p, p+".moved")) // the supervisor's own, moved aside
			must(t, os.WriteFile(p, []byte("another supervisor's\n"), 0o600))
			t.Cleanup(func() { os.Remove(p); os.Remove(p + ".moved") })
		}
		end := func(name string, pid int) {
			t.Helper()
			must(t, syscall.Kill(pid, syscall.SIGTERM))
			for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("session %s: its supervisor %d is alive 10 s after SIGTERM", name, pid)
				}
			}
		}
		exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
		planted := func(p string) bool {
			b, err := os.ReadFile(p)
			return err == nil && string(b) == "another supervisor's\n"
		}

		// the socket replaced: the planted one stays, the lock (its own) goes
		e.start("s")
		pid := e.info("s").Pid
		plant(filepath.Join(dir, "s.sock"))
		end("s", pid)
		if !planted(filepath.Join(dir, "s.sock")) {
			t.Errorf("the ending supervisor removed a socket path that was not its own")
		}
		if exists(filepath.Join(dir, "s.lock")) {
			t.Errorf("the ending supervisor left its own lock file")
		}
		if !exists(filepath.Join(dir, "s.ended")) {
			t.Errorf("the ending supervisor, owner of its name, wrote no s.ended")
		}

		// the lock replaced (and a jobs directory there): both stay, and the socket (its
		// own) goes
		e.start("l")
		pid = e.info("l").Pid
		plant(filepath.Join(dir, "l.lock"))
		jobs := filepath.Join(dir, "l.jobs")
		must(t, os.MkdirAll(jobs, 0o700))
		must(t, os.WriteFile(filepath.Join(jobs, "1.log"), nil, 0o600))
		t.Cleanup(func() { os.RemoveAll(jobs); os.Remove(filepath.Join(dir, "l.sock")) })
		end("l", pid)
		if !planted(filepath.Join(dir, "l.lock")) {
			t.Errorf("the ending supervisor removed a lock path that was not its own")
		}
		if !exists(filepath.Join(jobs, "1.log")) {
			t.Errorf("the ending supervisor removed the jobs of a name that was not its own")
		}
		if exists(filepath.Join(dir, "l.ended")) {
			t.Errorf("the ending supervisor wrote l.ended for a name that was not its own")
		}
		if exists(filepath.Join(dir, "l.sock")) {
			t.Errorf("the ending supervisor left its own socket")
		}
	})
}
