package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// maxPtys is policy.MaxPtys, the devpts "max=" of every sandbox.
const maxPtys = 256

// ptyHog opens pseudo-terminals until one fails or argv[1] are open, prints how many
// and the errno, creates argv[2] and holds them until argv[3] exists (20 s at most).
const ptyHog = `
import os, sys, time
cap, ready, done = int(sys.argv[1]), sys.argv[2], sys.argv[3]
held, err = [], 0
try:
    while len(held) < cap:
        held.append(os.openpty())
except OSError as e:
    err = e.errno
print("opened", len(held), "errno", err, flush=True)
open(ready, "w").close()
end = time.time() + 20
while not os.path.exists(done) and time.time() < end:
    time.sleep(0.01)
`

// devptsOptions returns the super-block options of the /dev/pts mount in pid's
// mountinfo (proc_pid_mountinfo(5)), read from the host.
func devptsOptions(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatalf("mountinfo of the sandbox's init %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == "/dev/pts" {
			return f[len(f)-1]
		}
	}
	t.Fatalf("no /dev/pts in the init's mountinfo:\n%s", b)
	return ""
}

// initOf is the host pid of a sandbox init (the Go init's command line, the raw init's
// comm: it shares its launcher's command line) whose mount table names ws.
func initOf(t *testing.T, ws string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if string(comm) != "gosbx-init\n" && !strings.HasPrefix(string(cmdline), "gosbx-init") {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/mountinfo")
		if pid, perr := strconv.Atoi(e.Name()); perr == nil && err == nil && strings.Contains(string(b), ws) {
			return pid
		}
	}
	t.Fatalf("no gosbx-init of %s", ws)
	return 0
}

// awaitFile waits for the sandbox's ready file (the command's own signal).
func awaitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
	}
}

// checkPtyCap: the command got ENOSPC at maxPtys (no more), the init's devpts says
// max=, and the host could still make a terminal while they were held.
func checkPtyCap(t *testing.T, out string, opts string, hostErr error) {
	t.Helper()
	if want := "opened " + strconv.Itoa(maxPtys) + " errno 28"; !strings.Contains(out, want) {
		t.Errorf("the sandbox's pty loop: %q, want %q (ENOSPC at the cap)", out, want)
	}
	if !strings.Contains(","+opts+",", ",max="+strconv.Itoa(maxPtys)+",") {
		t.Errorf("the sandbox's devpts options %q have no max=%d", opts, maxPtys)
	}
	if hostErr != nil {
		t.Errorf("the host could not open a pty while the sandbox held its own: %v", hostErr)
	}
}

// TestPtyPoolCapped: a sandbox's devpts instance holds at most maxPtys terminals, so one
// sandbox cannot take the host-wide pool of every non-initial devpts instance
// (kernel.pty.max - kernel.pty.reserve) from other sandboxes and containers (attack
// review 34 F4: before, a uid 65534 sandbox opened 3071 and every other sandbox's
// openpty and --tty failed with ENOSPC). The loop stops at maxPtys+5, so a build
// without the cap fails here without draining the host's pool. One-shot and a
// session (whose --tty terminals come from the same instance).
func TestPtyPoolCapped(t *testing.T) {
	hostPty := func() error {
		f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		return err
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		t.Run("exec", func(t *testing.T) {
			s := newSandbox(t, c)
			ready, done := filepath.Join(s.ws, "ready"), filepath.Join(s.ws, "done")
			cmd := s.command(s.limitCtx(runLimit), "--", python, "-c", ptyHog, strconv.Itoa(maxPtys+5), ready, done)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			must(t, cmd.Start())
			defer cmd.Wait()
			defer os.WriteFile(done, nil, 0o644)
			awaitFile(t, ready, 20*time.Second)
			opts := devptsOptions(t, initOf(t, s.ws))
			hostErr := hostPty()
			must(t, os.WriteFile(done, nil, 0o644))
			if err := cmd.Wait(); err != nil {
				t.Errorf("gosbx exec: %v\n%s", err, out.String())
			}
			checkPtyCap(t, out.String(), opts, hostErr)
		})
		t.Run("session", func(t *testing.T) {
			e := newSessionEnv(t, c)
			e.start("ptys")
			ready, done := filepath.Join(e.ws, "ready"), filepath.Join(e.ws, "done")
			must(t, os.WriteFile(done, nil, 0o644)) // the session's command returns at once
			r := e.gosbx("exec", "--session", "ptys", "--", python, "-c", ptyHog, strconv.Itoa(maxPtys+5), ready, done)
			mustSucceed(t, r, "pty loop in the session")
			checkPtyCap(t, r.stdout, devptsOptions(t, e.info("ptys").InitPid), hostPty())
		})
	})
}

// inotifyHog makes inotify instances until one fails or argv[1] are open, prints how
// many and the errno, creates argv[2] and holds them until argv[3] exists (20 s at most).
const inotifyHog = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
cap, ready, done = int(sys.argv[1]), sys.argv[2], sys.argv[3]
held, err = [], 0
while len(held) < cap:
    fd = libc.inotify_init1(0)
    if fd < 0:
        err = ctypes.get_errno()
        break
    held.append(fd)
print("instances", len(held), "errno", err, flush=True)
open(ready, "w").close()
end = time.time() + 20
while not os.path.exists(done) and time.time() < end:
    time.sleep(0.01)
`

// hostUserCount is /proc/sys/user/name of the test's (the host's) user namespace.
func hostUserCount(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/user/" + name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sandboxUserCounts reads the limits of the user namespace of pid from the host, in a
// process that joins that namespace alone (nsenter(1), credentials kept).
func sandboxUserCounts(t *testing.T, pid int, names []string) []string {
	t.Helper()
	args := []string{"-U", "--preserve-credentials", "-t", strconv.Itoa(pid), "cat"}
	for _, n := range names {
		args = append(args, "/proc/sys/user/"+n)
	}
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter %v: %v\n%s", args, err, out)
	}
	return strings.Fields(string(out))
}

// TestUserCountsHalved: the init sets its user namespace's inotify and fanotify limits
// to half of the caller's, so a sandbox cannot take every inotify instance of the user
// that runs it (attack review 34 F5: before, a uid 65534 sandbox held all 128 and the
// user's own editor, tail -f and session supervisors got EMFILE). Seen from the host:
// the sandbox's instances stop at half (EMFILE), the caller can still make one on the
// host meanwhile, and the sandbox's namespace (joined by nsenter) says half of each
// limit. The loop stops at half + 5, so a build without the limits fails here without
// taking the caller's last instance. A root caller's sandbox, whose user namespace a
// host id of its range owns and is charged for (not the caller), gets no limits: its
// loop reaches half + 5, its namespace says INT_MAX, and root still makes one.
func TestUserCountsHalved(t *testing.T) {
	names := []string{"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"}
	forEachCaller(t, func(t *testing.T, c caller) {
		half := hostUserCount(t, "max_inotify_instances") / 2
		// a root caller's sandbox is owned by a host id of its own range, which the
		// kernel charges instead of the caller (TestRootCallerPerUserCounts): its
		// limits are left as a new namespace has them (INT_MAX), and its loop reaches
		// its bound; the caller still makes one on the host
		ownID := c.uid == 0 && len(c.setpriv) == 0
		check := func(t *testing.T, out string, got []string, hostErr error) {
			t.Helper()
			want := "instances " + strconv.FormatInt(half, 10) + " errno 24"
			if ownID {
				want = "instances " + strconv.FormatInt(half+5, 10) + " errno 0"
			}
			if !strings.Contains(out, want) {
				t.Errorf("the sandbox's inotify loop: %q, want %q (EMFILE at half the caller's)", out, want)
			}
			if hostErr != nil {
				t.Errorf("the caller could not make an inotify instance on the host meanwhile: %v", hostErr)
			}
			for i, n := range names {
				want := strconv.FormatInt(hostUserCount(t, n)/2, 10)
				if ownID {
					want = "2147483647"
				}
				if i >= len(got) || got[i] != want {
					t.Errorf("the sandbox's %s: %v, want %s", n, got, want)
				}
			}
		}
		// an inotify instance made on the host by the caller's uid
		hostInotify := func() error {
			cmd := exec.Command("/usr/bin/setpriv", fmt.Sprintf("--reuid=%d", c.uid), fmt.Sprintf("--regid=%d", c.gid), "--clear-groups", "--",
				python, "-c", "import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); fd=l.inotify_init1(0); sys.exit(0 if fd >= 0 else ctypes.get_errno())")
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
		t.Run("exec", func(t *testing.T) {
			s := newSandbox(t, c)
			ready, done := filepath.Join(s.ws, "ready"), filepath.Join(s.ws, "done")
			cmd := s.command(s.limitCtx(runLimit), "--", python, "-c", inotifyHog, strconv.FormatInt(half+5, 10), ready, done)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			must(t, cmd.Start())
			defer cmd.Wait()
			defer os.WriteFile(done, nil, 0o644)
			awaitFile(t, ready, 20*time.Second)
			got := sandboxUserCounts(t, initOf(t, s.ws), names)
			hostErr := hostInotify()
			must(t, os.WriteFile(done, nil, 0o644))
			if err := cmd.Wait(); err != nil {
				t.Errorf("gosbx exec: %v\n%s", err, out.String())
			}
			check(t, out.String(), got, hostErr)
		})
		t.Run("session", func(t *testing.T) {
			e := newSessionEnv(t, c)
			e.start("ucounts")
			ready, done := filepath.Join(e.ws, "ready"), filepath.Join(e.ws, "done")
			must(t, os.WriteFile(done, nil, 0o644)) // the session's command returns at once
			r := e.gosbx("exec", "--session", "ucounts", "--", python, "-c", inotifyHog, strconv.FormatInt(half+5, 10), ready, done)
			mustSucceed(t, r, "inotify loop in the session")
			check(t, r.stdout, sandboxUserCounts(t, e.info("ucounts").InitPid, names), hostInotify())
		})
	})
}

// TestRunDirCandidatesRefused: a bind of a runtime or journal directory that gosbx
// uses for the caller under another environment is refused, not only this launch's
// (attack review 34 F6: with XDG_RUNTIME_DIR set, `--rw /tmp/gosbx-65534` ran, and the
// sandbox wrote into the seal directory that a launch without XDG_RUNTIME_DIR — cron,
// ssh, setpriv — reads). Each launch sets XDG_RUNTIME_DIR to a directory of the
// caller's own; uid 65534: --rw and --ro of /tmp/gosbx-65534; root: --ro of /run/user,
// which holds /run/user/0/gosbx (pam_systemd's runtime directory, made or not).
func TestRunDirCandidatesRefused(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		xdg, _ := runtimeDir(t, s)
		var binds [][]string
		var probe string
		if c.uid == 0 {
			if _, err := os.Stat("/run/user"); err != nil {
				t.Skip("no /run/user on this host")
			}
			binds = [][]string{{"--ro", "/run/user"}}
		} else {
			dir := "/tmp/gosbx-" + strconv.Itoa(c.uid)
			if err := os.Mkdir(dir, 0o700); err == nil {
				must(t, os.Chown(dir, c.uid, c.gid))
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(dir, &st); err != nil || int(st.Uid) != c.uid {
				t.Skipf("%s is not uid %d's (%v)", dir, c.uid, err)
			}
			probe = filepath.Join(dir, "r34-probe-"+s.id)
			t.Cleanup(func() { os.Remove(probe) })
			binds = [][]string{{"--rw", dir}, {"--ro", dir}}
		}
		for _, b := range binds {
			ctx := s.limitCtx(runLimit)
			script := "true"
			if probe != "" && b[0] == "--rw" {
				script = "touch " + probe
			}
			cmd := s.command(ctx, append(b, "--", shellPath, "-c", script)...)
			cmd.Env = s.env("XDG_RUNTIME_DIR=" + xdg)
			r := s.runCmd(ctx, cmd)
			if r.code != 125 || !strings.Contains(r.stderr, "another environment") {
				t.Errorf("%v with XDG_RUNTIME_DIR set: want 125 naming the other environment's directory\n%v", b, r)
			}
			if script != "true" {
				if _, err := os.Lstat(probe); err == nil {
					t.Errorf("%v: the sandbox wrote %s on the host", b, probe)
				}
			}
		}
	})
}
