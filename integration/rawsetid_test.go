package integration

// The raw init's set-ID handler (nsinit/rawsetid.go; docs/decisions.md, "The set-ID
// listener in the raw init"). Root callers do not take the raw init yet, so these
// tests launch, as uid 65534, a library program (testdata/rawsetid) whose config
// carries a root caller's filter (the set-ID rules notify pid 1): without -go it takes
// the raw init (the program is then not dumpable while the command runs: the raw init
// shares its memory), with -go the Go init. Every result is compared between the two
// and read from the host.

import (
	"context"
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

// rawSetIDRun is one run of testdata/rawsetid.
type rawSetIDRun struct {
	dumpable, exit int
	out            []string // the command's lines after READY
	stderr         string
}

// runRawSetID runs bin (testdata/rawsetid) as uid 65534 for s's workspace, with the
// Go init when goInit, extra arguments before "--" (--ro DIR), env added, and stdin
// (nil: none); the command must print READY first.
func runRawSetID(t *testing.T, s *sandbox, bin string, goInit bool, env []string, stdin *os.File, extra []string, command ...string) rawSetIDRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{fmt.Sprintf("--reuid=%d", nobodyID), fmt.Sprintf("--regid=%d", nobodyID), "--clear-groups", "--", bin}
	if goInit {
		args = append(args, "-go")
	}
	args = append(append(append(append(args, s.ws), extra...), "--"), command...)
	cmd := exec.CommandContext(ctx, "/usr/bin/setpriv", args...)
	cmd.Env = s.env(env...)
	cmd.Dir = s.base
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	r := rawSetIDRun{dumpable: -1, exit: -1, stderr: stderr.String()}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if v, ok := strings.CutPrefix(l, "dumpable "); ok && r.dumpable < 0 {
			r.dumpable, _ = strconv.Atoi(v)
		} else if v, ok := strings.CutPrefix(l, "exit "); ok {
			r.exit, _ = strconv.Atoi(v)
		} else {
			r.out = append(r.out, l)
		}
	}
	if err != nil && r.exit < 0 {
		t.Logf("rawsetid (go %v): %v\n%s%s", goInit, err, out, stderr.String())
	}
	return r
}

// checkInit fails unless r ran under the init asked for (the raw init makes the
// program not dumpable while the command runs).
func checkInit(t *testing.T, r rawSetIDRun, goInit bool) {
	t.Helper()
	if want := map[bool]int{true: 1, false: 0}[goInit]; r.dumpable != want {
		t.Fatalf("go init %v: the program's dumpable flag while the command ran is %d, want %d: not the init asked for\n%+v", goInit, r.dumpable, want, r)
	}
}

// rawSetIDExtraProbe is more of what TestSetIDCalls's probe does: a FIFO made with a
// set-ID mode, and a chmod in a directory the command cannot search (mode 000), which
// a handler with capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: pid 1 has them
// in its user namespace) could reach.
const rawSetIDExtraProbe = `
print("mknod", res(libc.mknod(b"fifo", 0o14644, 0)))
os.mkdir("locked"); open("locked/f", "w").close(); os.chmod("locked", 0)
print("locked", res(libc.chmod(b"locked/f", 0o4755)))
print("locked-plain", res(libc.chmod(b"locked/f", 0o755)))
os.chmod("locked", 0o755)
`

// The Go init's answers, on the host's files, are the raw init's, call for call:
// chmod, fchmod, fchmodat2 (a symlink not followed), open and creat with O_CREAT and a
// set-ID mode (the descriptor sent into the caller, its O_CLOEXEC as asked), mknod, a
// relative path with "..", a read-only bind (EROFS), a file another uid owns (EPERM),
// a directory the command cannot search (EACCES: the handler has no capability); no
// set-ID bit anywhere. It fails without the handler (ENOSYS, or a hang) and with a
// handler that has pid 1's capabilities ("locked" answered OK).
func TestRawSetIDCallsSameAsGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534)")
	}
	var bin string
	got := map[bool]map[string]string{}
	for _, goInit := range []bool{true, false} {
		s := newSandbox(t, nobodyCaller)
		if bin == "" {
			bin = buildTestdata(t, s, "rawsetid")
		}
		ro := filepath.Join(s.base, "ro")
		must(t, os.Mkdir(ro, 0o755))
		roFile := filepath.Join(ro, "f")
		must(t, os.WriteFile(roFile, nil, 0o644))
		other := s.writeWS("other", "", 0o644)
		must(t, os.Chown(other, 1234, 1234))
		must(t, os.Mkdir(filepath.Join(s.ws, "sub"), 0o755))
		s.chown(filepath.Join(s.ws, "sub"))
		s.writeWS("dd", "", 0o600)
		r := runRawSetID(t, s, bin, goInit, nil, nil, []string{"--ro", ro},
			"/bin/sh", "-c", `echo READY; exec "$0" -c "$1" "$2" "$3"`, python, setIDCallsProbe+rawSetIDExtraProbe, roFile)
		checkInit(t, r, goInit)
		if r.exit != 0 {
			t.Fatalf("go init %v: the probe exited %d\n%+v", goInit, r.exit, r)
		}
		res := map[string]string{}
		for _, l := range r.out {
			if k, v, ok := strings.Cut(l, " "); ok {
				res[k] = v
			}
		}
		got[goInit] = res
		for k, want := range map[string]string{
			"created-write": "3", "created-cloexec": "1", "inherit-open": "OK", "inherit-cloexec": "0",
			"chmod-link": "OK", "fchmod": "OK", "outside-ro": "EROFS", "dotdot-ro": "EROFS", "dotdot": "OK",
			"mknod": "OK", "locked": "EACCES",
		} {
			if res[k] != want {
				t.Errorf("go init %v: %s: %q, want %s", goInit, k, res[k], want)
			}
		}
		for _, k := range []string{"nofollow-link", "not-owner", "root", "devnull", "env", "proc", "ro", "locked"} {
			if res[k] == "" || res[k] == "OK" || res[k] != res[k+"-plain"] {
				t.Errorf("go init %v: %s with a set-ID bit: %q, want the error of the same call without it (%q)", goInit, k, res[k], res[k+"-plain"])
			}
		}
		for name, want := range map[string]os.FileMode{
			"created": 0o755, "inherit": 0o755, "target": 0o750, "fch": 0o711, "other": 0o644, "dd": 0o711,
			"fifo": os.ModeNamedPipe | 0o644, "locked/f": 0o644,
		} {
			fi, err := os.Lstat(filepath.Join(s.ws, name))
			if err != nil {
				t.Errorf("go init %v: host: %v", goInit, err)
				continue
			}
			if m := fi.Mode() & (os.ModeType | os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky); m != want {
				t.Errorf("go init %v: host: %s is %v, want %v", goInit, name, m, want)
			}
		}
		if m := modeOf(t, roFile); m != 0o644 {
			t.Errorf("go init %v: host: the read-only bind's file is %v, want -rw-r--r--", goInit, m)
		}
		noSetIDIn(t, s.ws)
	}
	if fmt.Sprint(got[true]) != fmt.Sprint(got[false]) {
		t.Errorf("the answers differ:\nGo init:  %v\nraw init: %v", got[true], got[false])
	}
}

// setidHandlerOf is the pid of the set-ID handler of the raw init that is a child of
// program (a child of that init executed as gosbx-setid), or 0.
func setidHandlerOf(program int) int {
	for _, init := range procChildren(program) {
		for _, c := range procChildren(init) {
			if argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c)); strings.HasPrefix(string(argv), "gosbx-setid\x00") {
				return c
			}
		}
	}
	return 0
}

// The raw init's handler, seen from the host while it serves: started only once a
// set-ID call came (a command without one never has it), no capability in any set,
// no_new_privs, the sandbox's uid, not dumpable, in pid 1's pid namespace (not the
// commands'), holding only its listeners, its epoll instance and pid
// 1's procfs besides stdio, and gone with the sandbox; no process of the command holds
// a listener. It fails with the handler's
// confinement left out (its capability sets), checked.
func TestRawSetIDHandlerConfined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534)")
	}
	s := newSandbox(t, nobodyCaller)
	bin := buildTestdata(t, s, "rawsetid")
	for _, call := range []bool{false, true} {
		stdinR, stdinW, err := os.Pipe()
		must(t, err)
		script := `echo READY; touch f; echo pid; read x`
		if call {
			// and no process of the command holds a listener (TestSetIDNoListenerInCommand)
			script = `echo READY; touch f; chmod 4755 f; echo chmod $?
n=0; for f in /proc/[0-9]*/fd/*; do case "$(readlink "$f" 2>/dev/null)" in *seccomp*) n=$((n+1));; esac; done
echo listeners $n; echo pid; read x`
		}
		args := []string{fmt.Sprintf("--reuid=%d", nobodyID), fmt.Sprintf("--regid=%d", nobodyID), "--clear-groups", "--",
			bin, s.ws, "--", "/bin/sh", "-c", script}
		cmd := exec.Command("/usr/bin/setpriv", args...)
		cmd.Env, cmd.Dir, cmd.Stdin = s.env(), s.base, stdinR
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		stdinR.Close()
		buf := make([]byte, 4096)
		var text string
		for !strings.Contains(text, "pid\n") {
			n, err := out.Read(buf)
			if err != nil {
				t.Fatalf("call %v: the command's output ended: %q", call, text)
			}
			text += string(buf[:n])
		}
		if call && (!strings.Contains(text, "chmod 0\n") || !strings.Contains(text, "listeners 0\n")) || !strings.Contains(text, "dumpable 0\n") {
			t.Errorf("call %v: want the raw init and the chmod answered: %q", call, text)
		}
		h := setidHandlerOf(cmd.Process.Pid)
		if !call {
			if h != 0 {
				t.Errorf("a command without a set-ID call has a set-ID handler running (pid %d)", h)
			}
		} else if h == 0 {
			t.Errorf("no set-ID handler found under the program (pid %d)", cmd.Process.Pid)
		} else {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h))
			must(t, err)
			st := procStatus(string(b))
			for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
				if st[k] != "0000000000000000" {
					t.Errorf("the handler's %s is %s, want none", k, st[k])
				}
			}
			if st["NoNewPrivs"] != "1" || st["Uid"] != "65534\t65534\t65534\t65534" {
				t.Errorf("the handler's NoNewPrivs %q, Uid %q", st["NoNewPrivs"], st["Uid"])
			}
			// not dumpable: its /proc/PID files are root's, not uid 65534's (uid 0 is not
			// mapped in the sandbox of a caller other than root: proc(5), task_dump_owner)
			var pst syscall.Stat_t
			if err := syscall.Stat(fmt.Sprintf("/proc/%d/status", h), &pst); err != nil || pst.Uid != 0 {
				t.Errorf("the handler's /proc/PID/status is uid %d (%v): want 0, not dumpable", pst.Uid, err)
			}
			// in pid 1's pid namespace (its parent's), not the commands' (the
			// parent's pid_for_children)
			hNS, err1 := nsInode(strconv.Itoa(h), "pid")
			initNS, err2 := nsInode(st["PPid"], "pid")
			cmdNS, err3 := nsInode(st["PPid"], "pid_for_children")
			if err1 != nil || err2 != nil || err3 != nil || hNS != initNS || hNS == cmdNS {
				t.Errorf("the handler's pid namespace %d, pid 1's %d, the commands' %d (%v %v %v): want pid 1's", hNS, initNS, cmdNS, err1, err2, err3)
			}
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", h))
			for _, fd := range fds {
				n, _ := strconv.Atoi(fd.Name())
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", h, fd.Name()))
				if n < 3 || l == "anon_inode:seccomp notify" || l == "anon_inode:[eventpoll]" || l == "anon_inode:[eventfd]" {
					continue
				}
				if l == "/" {
					var fs = fmt.Sprintf("/proc/%d/fdinfo/%s", h, fd.Name())
					if info, err := os.ReadFile(fs); err == nil && strings.Contains(string(info), "mnt_id") {
						continue // pid 1's procfs (its root)
					}
				}
				t.Errorf("the handler holds descriptor %d: %s", n, l)
			}
		}
		stdinW.Close()
		go func() {
			for {
				if _, err := out.Read(buf); err != nil {
					return
				}
			}
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("call %v: %v", call, err)
			}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("call %v: the program did not end", call)
		}
		if h != 0 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", h)); err == nil {
				t.Errorf("the handler (pid %d) outlived its sandbox", h)
			}
		}
	}
}

// Threads racing (TestSetIDRaceSymlinkSwap) under the raw init: one swaps a path
// component between a directory and a symlink to a read-only bind, the other chmods
// through it with S_ISUID; the bind's file keeps its mode and no set-ID bit appears.
func TestRawSetIDRaceSymlinkSwap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534)")
	}
	s := newSandbox(t, nobodyCaller)
	bin := buildTestdata(t, s, "rawsetid")
	ro := filepath.Join(s.base, "ro")
	must(t, os.Mkdir(ro, 0o755))
	roFile := filepath.Join(ro, "x")
	must(t, os.WriteFile(roFile, nil, 0o644))
	script := symlinkSwapScript
	r := runRawSetID(t, s, bin, false, nil, nil, []string{"--ro", ro}, "/bin/sh", "-c", `echo READY; exec "$0" -c "$1" "$2" "$3"`, python, script, ro, "2000")
	checkInit(t, r, false)
	out := strings.Join(r.out, "\n")
	if r.exit != 0 || !strings.Contains(out, "chmods ") || strings.Contains(out, "chmods 0 ") {
		t.Errorf("no chmod went through the workspace's directory: the race did not run\n%+v", r)
	}
	t.Log(out)
	if m := modeOf(t, roFile); m != 0o644 {
		t.Errorf("host: the read-only bind's file is %v, want -rw-r--r--", m)
	}
	noSetIDIn(t, s.ws)
}

// A set-ID call that waits in the kernel (a FUSE server that never answers its
// LOOKUP) holds the raw init's handler as it holds the Go init's one-shot handler
// thread: once the server has read the request, not even SIGKILL ends the wait
// (fuse's request_wait_answer), so with either init the sandbox ends only once the
// file system is released; then it does, with the command's status. The two behave
// alike: the command exits while its set-ID call is stalled, the file system is
// released, the launch ends with exit 0 within the limit.
func TestRawSetIDStalledCallEnds(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534, mounts FUSE)")
	}
	s := newSandbox(t, nobodyCaller)
	bin := buildTestdata(t, s, "rawsetid")
	for _, goInit := range []bool{true, false} {
		stall := filepath.Join(s.base, fmt.Sprintf("stallfs-%v", goInit))
		must(t, os.Mkdir(stall, 0o755))
		fs := newStallFS(t, stall)
		name := fmt.Sprintf("stall-%v", goInit)
		stdinR, stdinW, err := os.Pipe()
		must(t, err)
		done := make(chan rawSetIDRun, 1)
		go func() {
			defer stdinR.Close()
			done <- runRawSetID(t, s, bin, goInit, nil, stdinR, []string{"--ro", stall}, "/bin/sh", "-c",
				`echo READY; "$0" -c "import os
try:
  os.chmod('$1', 0o4755)
except OSError as e:
  print(e.strerror)" & read x; echo left`, python, stall+"/"+name)
		}()
		for got := ""; got != name; {
			select {
			case got = <-fs.lookups:
			case <-time.After(30 * time.Second):
				t.Fatalf("go init %v: the file system never saw the LOOKUP of %s", goInit, name)
			}
		}
		stdinW.Close() // the command exits; its stalled call's process is killed with the sandbox
		fs.release()
		select {
		case r := <-done:
			checkInit(t, r, goInit)
			if r.exit != 0 || !strings.Contains(strings.Join(r.out, "\n"), "left") {
				t.Errorf("go init %v: %+v", goInit, r)
			}
		case <-time.After(40 * time.Second):
			t.Fatalf("go init %v: the sandbox did not end once the file system was released", goInit)
		}
	}
}

// Fail closed, and failing alike: with no handler (the "set-ID handler" fault of a
// -tags gosbxfault build) a set-ID chmod fails with ENOSYS in both inits and the file
// keeps its mode; and every injectable step of a launch whose filter notifies fails
// with the same status and message in both (TestRawFaultSameAsGo for this config).
func TestRawSetIDFaultSameAsGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534)")
	}
	s := newSandbox(t, nobodyCaller)
	bin := buildProgram(t, s, "rawsetid-fault", "./integration/testdata/rawsetid", "CGO_ENABLED=0", "GOFLAGS=-tags=gosbxfault")
	for _, st := range append([]string{"set-ID handler"}, faultSteps...) {
		var got [2]rawSetIDRun
		for i, goInit := range []bool{true, false} {
			os.Remove(filepath.Join(s.ws, "f"))
			s.writeWS("f", "", 0o644)
			got[i] = runRawSetID(t, s, bin, goInit, []string{"GOSBX_FAULT=" + st}, nil, nil,
				"/bin/sh", "-c", `echo READY; chmod 4755 f 2>&1; echo chmod $?`)
			if st == "set-ID handler" {
				checkInit(t, got[i], goInit)
				if out := strings.Join(got[i].out, "\n"); !strings.Contains(out, "Function not implemented") || !strings.Contains(out, "chmod 1") {
					t.Errorf("no handler, go init %v: want ENOSYS: %+v", goInit, got[i])
				}
			}
			if m := modeOf(t, filepath.Join(s.ws, "f")); st == "set-ID handler" && m != 0o644 {
				t.Errorf("no handler, go init %v: host: f is %v, want -rw-r--r--", goInit, m)
			}
			noSetIDIn(t, s.ws)
		}
		if got[0].exit != got[1].exit || got[0].stderr != got[1].stderr || fmt.Sprint(got[0].out) != fmt.Sprint(got[1].out) {
			t.Errorf("fault at %q:\nGo init  %d %q %q\nraw init %d %q %q", st, got[0].exit, got[0].out, got[0].stderr, got[1].exit, got[1].out, got[1].stderr)
		}
	}
}
