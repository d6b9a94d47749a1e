package integration

// What the raw init's set-ID handler executes after pivot_root, and the state its
// child holds until then (attack review 14; docs/decisions.md "Nothing executed after
// pivot_root that the sandbox can choose"): a gosbx with an ELF interpreter takes the
// Go init for a root caller; the waiting child's working directory is the sandbox's
// root and its session keyring its own; a gosbx the host id may not execute stops
// with 125. All read from the host.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procChildren are the pids whose parent is ppid.
func procChildren(ppid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			out = append(out, pid)
		}
	}
	return out
}

// startWaiting starts bin (a gosbx) as root with args ("exec" ...), whose command
// prints "ready" and then reads a line: it returns once "ready" came, with the
// command's output so far and the function that ends the run and returns its exit code
// and stderr.
func startWaiting(t *testing.T, s *sandbox, bin string, args ...string) (*exec.Cmd, string, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir, cmd.WaitDelay = s.env(), s.base, 5*time.Second
	s.scope.wrap(cmd)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	var text string
	r := bufio.NewReader(stdout)
	for !strings.HasSuffix(text, "ready\n") {
		l, err := r.ReadString('\n')
		text += l
		if err != nil {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("%s %q: the command's output ended before ready: %q\n%s", bin, args, text, stderr.String())
		}
	}
	return cmd, text, func() (int, string) {
		stdin.Close()
		io.Copy(io.Discard, r)
		err := cmd.Wait()
		if ctx.Err() != nil {
			t.Fatalf("%s %q did not end", bin, args)
		}
		return exitCode(err, cmd.ProcessState), stderr.String()
	}
}

// pieBinary builds gosbx with -buildmode=pie (CGO_ENABLED=0: Go's linker then gives
// it an ELF interpreter, /lib64/ld-linux-x86-64.so.2) into a directory any user can read.
func pieBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-it-pie-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "gosbx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-buildmode=pie", "-o", bin, "./cmd/gosbx")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=pie: %v\n%s", err, out)
	}
	must(t, os.Chmod(bin, 0o755))
	return bin
}

// The reviewer's repro: a PIE gosbx, as root, with /etc/ld.so.preload a symlink to a
// workspace file the command fills with a library of the workspace. The command's own
// programs load it (the control: the preload works in this sandbox), the set-ID call
// is answered and stripped, and no code of the sandbox's runs in the set-ID handler:
// the PIE build takes the Go init (no gosbx-setid process: its handler is a thread of
// the init), the static build the raw init (its handler executed, without an
// interpreter). Without gcc the preload part is left out (logged). It failed before
// the fix (the PIE's handler ran the library: "handler-ran" on the host, and a
// gosbx-setid process under the PIE's raw init), checked.
func TestRawSetIDExecNoInterpreter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only: a root caller's filter notifies")
	}
	s := newSandbox(t, rootCaller)
	// built here: the suite also runs with GOSBX_TEST_BINARY a gosbxgoinit build
	static := taggedBinary(t, "")
	pie := pieBinary(t)
	so := ""
	if gcc, err := exec.LookPath("gcc"); err != nil {
		t.Logf("no gcc: the ld.so.preload part is left out (%v)", err)
	} else {
		src := filepath.Join(s.base, "evil.c")
		// the constructor marks where it ran: in the set-ID handler (argv[0]
		// gosbx-setid) or in one of the command's programs
		must(t, os.WriteFile(src, []byte(`#include <fcntl.h>
#include <string.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(int argc, char **argv) {
	const char *m = argc > 0 && strcmp(argv[0], "gosbx-setid") == 0 ? WS "/handler-ran" : WS "/command-loaded";
	int fd = open(m, O_CREAT | O_WRONLY, 0644);
	if (fd >= 0) close(fd);
}
`), 0o644))
		so = filepath.Join(s.base, "evil.so")
		if out, err := exec.Command(gcc, "-shared", "-fPIC", "-DWS=\""+s.ws+"\"", "-o", so, src).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
		must(t, os.Chmod(so, 0o755))
	}
	for _, b := range []struct {
		name, bin string
		raw       bool
	}{{"static", static, true}, {"pie", pie, false}} {
		for _, f := range []string{"s", "handler-ran", "command-loaded", "preload", "evil.so"} {
			os.Remove(filepath.Join(s.ws, f))
		}
		s.writeWS("preload", "", 0o644)
		script := "touch s; chmod 4755 s; echo chmod $?; echo ready; read x || true"
		if so != "" {
			copyFile(t, so, filepath.Join(s.ws, "evil.so"), 0o755)
			script = "echo " + s.ws + "/evil.so > " + s.ws + "/preload; " + script
		}
		cmd, out, end := startWaiting(t, s, b.bin, "exec", "--policy", "strict", "--workspace", s.ws,
			"--symlink", s.ws+"/preload:/etc/ld.so.preload", "--", "/bin/sh", "-c", script)
		h := setidHandlerOf(cmd.Process.Pid)
		code, stderr := end()
		if code != 0 || !strings.Contains(out, "chmod 0\n") {
			t.Errorf("%s: exit %d, output %q, want the chmod answered\n%s", b.name, code, out, stderr)
		}
		if b.raw && h == 0 {
			t.Errorf("%s: no gosbx-setid process under gosbx (pid %d): not the raw init's handler, nothing checked", b.name, cmd.Process.Pid)
		}
		if !b.raw && h != 0 {
			t.Errorf("%s: the raw init's set-ID handler ran (pid %d): a build with an ELF interpreter must take the Go init", b.name, h)
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(s.ws, "s"), &st); err != nil || st.Mode&(syscall.S_ISUID|syscall.S_ISGID) != 0 {
			t.Errorf("%s: the workspace's s: mode %o (%v), want it there without set-ID bits", b.name, st.Mode, err)
		}
		if so == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(s.ws, "command-loaded")); err != nil {
			t.Errorf("%s: the command's programs did not load the preload library (%v): the repro does not work here", b.name, err)
		}
		if _, err := os.Stat(filepath.Join(s.ws, "handler-ran")); err == nil {
			t.Errorf("%s: the sandbox's library ran in the set-ID handler", b.name)
		}
	}
}

// The raw init's set-ID child, as it waits for the first call (blocked in poll(2)):
// its working directory is the sandbox's root (not the launcher's, on the host's tree,
// which the clone gave it), and it made a session keyring of its own (the host id's
// keys, /proc/key-users: the init's and the child's, where it held the caller's
// before). Both failed before the fix (its cwd the launcher's directory, the host id
// one key), checked.
func TestRawSetIDChildState(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only: a root caller's filter notifies")
	}
	s := newSandbox(t, rootCaller)
	cmd, _, end := startWaiting(t, s, taggedBinary(t, ""), "exec", "--workspace", s.ws, "--", "/bin/sh", "-c", "echo ready; read x")
	defer end()
	child := 0
	for _, init := range procChildren(cmd.Process.Pid) {
		initNS, err := nsInode(strconv.Itoa(init), "pid")
		if err != nil {
			continue
		}
		for _, c := range procChildren(init) {
			// the child in pid 1's own pid namespace (the holder and the commands are in theirs)
			if ns, err := nsInode(strconv.Itoa(c), "pid"); err == nil && ns == initNS {
				child = c
			}
		}
	}
	if child == 0 {
		t.Fatalf("no set-ID child under gosbx (pid %d): not the raw init", cmd.Process.Pid)
	}
	// in poll(2) (syscall 7): its raw steps up to the execveat are done
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", child))
		if err == nil && strings.HasPrefix(string(b), "7 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the set-ID child (pid %d) never waited in poll: %q %v", child, b, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var cwd, root syscall.Stat_t
	must(t, syscall.Stat(fmt.Sprintf("/proc/%d/cwd", child), &cwd))
	must(t, syscall.Stat(fmt.Sprintf("/proc/%d/root", child), &root))
	if cwd.Dev != root.Dev || cwd.Ino != root.Ino {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", child))
		t.Errorf("the set-ID child's working directory is %q (%d:%d), not its root (%d:%d)", l, cwd.Dev, cwd.Ino, root.Dev, root.Ino)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", child))
	must(t, err)
	uid := strings.Fields(procStatus(string(b))["Uid"])
	if len(uid) == 0 || uid[0] == "0" {
		t.Fatalf("the set-ID child's uid %q: want the host id", uid)
	}
	users, err := os.ReadFile("/proc/key-users")
	must(t, err)
	nkeys := -1
	for _, l := range strings.Split(string(users), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == uid[0]+":" {
			nkeys, _ = strconv.Atoi(strings.Split(f[2], "/")[0])
		}
	}
	if nkeys < 2 {
		t.Errorf("host id %s owns %d keys (/proc/key-users): want the init's and the set-ID child's session keyrings\n%s", uid[0], nkeys, users)
	}
}

// A gosbx the host id may not execute (mode 0700): the raw init stops at launch with
// 125 and the Go init's advice, where before it ran the command and every set-ID call
// failed with ENOSYS, silently (exit 0, the chmod's "Function not implemented"),
// checked.
func TestRawSetIDBinaryNotExecutable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root only: a root caller's init runs as a host id")
	}
	s := newSandbox(t, rootCaller)
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-it-0700-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "gosbx")
	copyFile(t, taggedBinary(t, ""), bin, 0o700)
	must(t, os.Chmod(bin, 0o700))
	ctx := s.limitCtx(runLimit)
	cmd := exec.CommandContext(ctx, bin, "exec", "--workspace", s.ws, "--", "/bin/sh", "-c", "touch s; chmod 4755 s; echo chmod $?")
	cmd.Env, cmd.Dir = s.env(), s.base
	s.scope.wrap(cmd)
	r := s.runCmd(ctx, cmd)
	if r.code != 125 || !strings.Contains(r.stderr, "the gosbx binary must be executable by other users, e.g. mode 0755") || strings.Contains(r.stdout, "chmod") {
		t.Errorf("a 0700 gosbx: exit %d, stdout %q, stderr %q: want 125 before the command, saying the binary must be executable", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.ws, "s")); err == nil {
		t.Errorf("the command ran")
	}
}
