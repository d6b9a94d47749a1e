package integration

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The init gosbx exec clones before its policy step (nsinit.Prestart) is gone, with
// the host id it took, when the launch stops during the step: SIGINT, SIGTERM, the
// --timeout, and gosbx itself killed (its init reads the end of its config socket).
// Checked from the host: the pre-started init (gosbx's only child while the step
// stalls, in a -tags gosbxfault build) no longer exists when gosbx exec has returned;
// its host id's lock file (a root caller's) is removed, or for a killed gosbx no
// longer locked; no cgroup of its sandbox.
func TestPrestartGoneAfterStop(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, 0, syscall.SIGKILL} {
			marker := s.marker("prestart")
			args := []string{"exec", "--workspace", s.ws}
			if sig == 0 {
				args = append(args, "--timeout", "1s")
			}
			cmd := s.rawCommand(s.limitCtx(runLimit), append(args, "--", "touch", marker)...)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=policy stall")
			stderr, err := cmd.StderrPipe()
			must(t, err)
			must(t, cmd.Start())
			line := make([]byte, 256)
			n, _ := stderr.Read(line)
			if !strings.Contains(string(line[:n]), "stalls") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the policy step did not stall: %q", line[:n])
			}
			// the step stalls after the prestart: the init is there, waiting for its config
			init := initChild(t, cmd.Process.Pid)
			start := procStart(init)
			pidfd, err := unix.PidfdOpen(init, 0)
			must(t, err)
			lock, sandboxID := "", ""
			if c.uid == 0 {
				hid := procUID(t, init)
				lock = filepath.Join("/run/gosbx/ids", strconv.Itoa(hid))
				b, err := os.ReadFile(lock)
				if err != nil {
					t.Fatalf("%v: the prestarted init runs as host id %d, but its lock file: %v", sig, hid, err)
				}
				sandboxID = strings.TrimSpace(string(b))
			}
			if sig != 0 {
				cmd.Process.Signal(sig)
			}
			rest, _ := io.ReadAll(stderr)
			cmd.Wait()
			if sig == syscall.SIGKILL {
				// no one reaps the init for gosbx: it exits once its config socket ends
				if k, _ := pollIn(pidfd, 10*time.Second); k != 1 {
					t.Errorf("gosbx killed: its prestarted init %d still runs 10 s later", init)
				}
			} else if procStart(init) == start {
				t.Errorf("%v: the prestarted init %d is still there when gosbx exec has returned (%v)\n%s", sig, init, cmd.ProcessState, rest)
			}
			unix.Close(pidfd)
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("%v: the command ran", sig)
			}
			if lock != "" {
				b, err := os.ReadFile(lock)
				held := err == nil && strings.TrimSpace(string(b)) == sandboxID
				if held && sig != syscall.SIGKILL {
					t.Errorf("%v: the host id's lock file %s is left", sig, lock)
				}
				// a concurrent launch's take or sweep locks a stale lock file for a moment
				// (flock, then its own holder written or the file removed): locked by
				// this sandbox means locked with its id in it for longer than that
				for i := 0; held && fileLocked(t, lock); i++ {
					if i == 20 {
						t.Errorf("%v: the host id's lock file %s is still locked", sig, lock)
						break
					}
					time.Sleep(100 * time.Millisecond)
					b, err := os.ReadFile(lock)
					held = err == nil && strings.TrimSpace(string(b)) == sandboxID
				}
			}
			if sandboxID != "" {
				for _, g := range gosbxGroups() {
					if strings.Contains(g, sandboxID) {
						t.Errorf("%v: cgroup %s left", sig, g)
					}
				}
			}
		}
	})
}

// A launch whose policy step fails after the prestart (a --ro source that does not
// exist, a --rw of a system directory) ends with today's message and 125, and the init
// it cloned ahead is gone when gosbx exec returns (a -tags gosbxfault build names its
// pid).
func TestPrestartGoneAfterPolicyError(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, bad := range [][]string{{"--ro", filepath.Join(s.base, "missing")}, {"--rw", "/etc"}} {
			marker := s.marker("prestart-bad")
			cmd := s.command(s.limitCtx(runLimit), append(bad, "--", "touch", marker)...)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=prestart pid")
			var errb strings.Builder
			cmd.Stderr = &errb
			cmd.Run()
			var pid int
			for _, l := range strings.Split(errb.String(), "\n") {
				if v, ok := strings.CutPrefix(l, "gosbx: fault build: prestarted init "); ok {
					pid, _ = strconv.Atoi(v)
				}
			}
			if pid <= 0 {
				t.Fatalf("%v: no init was prestarted: %s", bad, errb.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != 125 || !strings.Contains(errb.String(), "sandbox setup failed at policy") {
				t.Errorf("%v: want 125 and the policy step's message, got %d: %s", bad, code, errb.String())
			}
			// Not even a zombie: the launcher reaped it. (Left to itself, it would exit
			// only once gosbx's exit closed its config socket, and be reaped by the host's
			// init.) A pid reused this soon would be no process named exe.
			if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && strings.Contains(string(stat), "(exe)") {
				t.Errorf("%v: the prestarted init %d is still there when gosbx exec has returned: %s", bad, pid, stat)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("%v: the command ran", bad)
			}
		}
	})
}

// The sandbox runs the config the policy built, not the guess the init was cloned
// from: a policy file asking for the host's network (the guess, from the flags, has a
// network namespace), --net host, and a memory limit from a flag and from a policy
// file (a cgroup v1 group, root). Checked from the host on the running sandbox's init.
func TestPrestartRunsBuiltConfig(t *testing.T) {
	hostNS, err := os.Readlink("/proc/self/ns/net")
	must(t, err)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		hostPol := filepath.Join(s.base, "nethost.yaml")
		must(t, os.WriteFile(hostPol, []byte("extends: agent\nnetwork:\n  mode: host\n"), 0o644))
		memPol := filepath.Join(s.base, "memory.yaml")
		must(t, os.WriteFile(memPol, []byte("extends: agent\nresources:\n  memory: 96M\n"), 0o644))
		cases := []struct {
			flags   []string
			hostNet bool
			memory  int64
		}{
			{nil, false, 0},
			{[]string{"--policy", hostPol}, true, 0},
			{[]string{"--net", "host"}, true, 0},
		}
		if c.uid == 0 {
			cases = append(cases, struct {
				flags   []string
				hostNet bool
				memory  int64
			}{[]string{"--memory", "64M"}, false, 64 << 20}, struct {
				flags   []string
				hostNet bool
				memory  int64
			}{[]string{"--policy", memPol}, false, 96 << 20})
		}
		for _, tc := range cases {
			cmd := s.command(s.limitCtx(runLimit), append(tc.flags, "--", shellPath, "-c", "echo ready; read x; true")...)
			in, err := cmd.StdinPipe()
			must(t, err)
			out, err := cmd.StdoutPipe()
			must(t, err)
			var errb strings.Builder
			cmd.Stderr = &errb
			must(t, cmd.Start())
			if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
				in.Close()
				cmd.Wait()
				t.Fatalf("%v: the command did not start: %q %s", tc.flags, l, errb.String())
			}
			init := initChild(t, cmd.Process.Pid)
			ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", init))
			must(t, err)
			if (ns == hostNS) != tc.hostNet {
				t.Errorf("%v: the sandbox's net namespace %s, the host's %s: want the host's: %v", tc.flags, ns, hostNS, tc.hostNet)
			}
			if tc.memory > 0 {
				// the command's group (a raw init stays out of it; the Go init is in it too)
				if got := memoryLimit(t, commandOf(t, init)); got != tc.memory {
					t.Errorf("%v: the command's memory.limit_in_bytes %d, want %d", tc.flags, got, tc.memory)
				}
			}
			in.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("%v: %v %s", tc.flags, err, errb.String())
			}
		}
	})
}

// initChild is the pid of gosbx's one child process, its init (gosbx-init).
func initChild(t *testing.T, gosbx int) int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", gosbx))
	var kids []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(w); err == nil {
				kids = append(kids, pid)
			}
		}
	}
	if len(kids) != 1 {
		t.Fatalf("gosbx %d has the children %v, want one init", gosbx, kids)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kids[0]))
	if !isInitProcess(strconv.Itoa(kids[0])) {
		t.Fatalf("gosbx's child %d is %q, not its init", kids[0], cmdline)
	}
	return kids[0]
}

// procStart is the start time of pid (field 22 of its stat), "" when there is no pid.
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// procUID is pid's real uid on the host.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(v)[0])
			must(t, err)
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

// fileLocked reports whether a flock(2) lock is held on path (/proc/locks, by inode:
// read only, so no launch is disturbed).
func fileLocked(t *testing.T, path string) bool {
	t.Helper()
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/locks")
	must(t, err)
	want := fmt.Sprintf(":%d ", st.Ino)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "FLOCK") && strings.Contains(l+" ", want) {
			return true
		}
	}
	return false
}

// commandOf is the child of the sandbox's init that is not the holder (gosbx-pid1) and
// is in the commands' pid namespace (the raw init's set-ID handler child is in the
// init's own): a one-shot sandbox's command.
func commandOf(t *testing.T, init int) int {
	t.Helper()
	own, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", init))
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", init))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			cmdline, _ := os.ReadFile("/proc/" + w + "/cmdline")
			ns, _ := os.Readlink("/proc/" + w + "/ns/pid")
			if pid, err := strconv.Atoi(w); err == nil && ns != own && !strings.HasPrefix(string(cmdline), "gosbx-pid1") {
				return pid
			}
		}
	}
	t.Fatalf("the init %d has no child but the holder", init)
	return 0
}

// memoryLimit is memory.limit_in_bytes of pid's cgroup v1 memory group.

func memoryLimit(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	must(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && strings.Contains(","+f[1]+",", ",memory,") {
			v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"))
			must(t, err)
			n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
			must(t, err)
			return n
		}
	}
	t.Fatalf("pid %d has no memory cgroup", pid)
	return 0
}

// gosbxGroups lists the gosbx-* cgroup directories under this process's own v1 groups
// (callers match their own sandbox id in the names: other launches' groups may be there).
func gosbxGroups() []string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	var n []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[1] == "" {
			continue
		}
		for _, ctrl := range strings.Split(f[1], ",") {
			ents, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", ctrl, f[2]))
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "gosbx-") {
					n = append(n, e.Name())
				}
			}
		}
	}
	return n
}
