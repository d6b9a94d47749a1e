package integration

// Issue 19 item 6: a root caller's command that asks for a set-ID bit gets the rest of
// the mode and no set-ID bit (the sandbox init answers the call: nsinit/setid.go);
// never a set-ID file on the host, and the handler has no more rights than the
// command. Every mode is read from the host.

import (
	"bufio"
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

// setIDTar writes a tar archive (Python's tarfile, on the host) with a 02775 directory
// and a 04755 file in it, and returns its path.
func setIDTar(t *testing.T, s *sandbox) string {
	t.Helper()
	tarPath := filepath.Join(s.ws, "setid.tar")
	script := `
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    d = tarfile.TarInfo("sgid-dir"); d.type = tarfile.DIRTYPE; d.mode = 0o2775; t.addfile(d)
    data = b"#!/bin/sh\necho hi\n"
    f = tarfile.TarInfo("sgid-dir/suid-file"); f.mode = 0o4755; f.size = len(data)
    t.addfile(f, io.BytesIO(data))
`
	out, err := exec.Command(python, "-c", script, tarPath).CombinedOutput()
	if err != nil {
		t.Fatalf("making the archive: %v\n%s", err, out)
	}
	s.chown(tarPath)
	return tarPath
}

// modeOf is the permission and set-ID bits of p, from the host (lstat).
func modeOf(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatalf("host: %v", err)
	}
	return fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
}

// tar xpf of an archive with a setgid directory and a setuid file: for root, exit 0
// and 0775 / 0755 on the host (the old EPERM rule made tar exit 2 and left 0700); for
// nobody nothing changes: no filter rule, the modes are those of the same extraction
// by nobody on the host (a set-ID file of the host's nobody is no privilege).
func TestSetIDTar(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		setIDTar(t, s)
		r := s.sh(nil, "umask 022; tar xpf setid.tar")
		if r.code != 0 {
			t.Fatalf("tar xpf: want exit 0\n%v", r)
		}
		dir, file := filepath.Join(s.ws, "sgid-dir"), filepath.Join(s.ws, "sgid-dir", "suid-file")
		wantDir, wantFile := os.FileMode(0o775), os.FileMode(0o755)
		if c.uid != 0 {
			host := filepath.Join(s.base, "host")
			must(t, os.Mkdir(host, 0o755))
			s.chown(host)
			out, err := exec.Command("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
				"sh", "-c", "umask 022; tar xpf \"$0\" -C \"$1\"", filepath.Join(s.ws, "setid.tar"), host).CombinedOutput()
			if err != nil {
				t.Fatalf("tar xpf on the host as nobody: %v\n%s", err, out)
			}
			wantDir, wantFile = modeOf(t, filepath.Join(host, "sgid-dir")), modeOf(t, filepath.Join(host, "sgid-dir", "suid-file"))
		}
		if m := modeOf(t, dir); m != wantDir {
			t.Errorf("host: %s is %v, want %v", dir, m, wantDir)
		}
		if m := modeOf(t, file); m != wantFile {
			t.Errorf("host: %s is %v, want %v", file, m, wantFile)
		}
		wantContent(t, file, "#!/bin/sh\necho hi\n")
	})
}

// setIDCallsProbe makes the calls a root caller's command may now make with a set-ID
// bit; each line is "NAME RESULT".
const setIDCallsProbe = `
import ctypes, errno, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def res(r):
    if r < 0:
        e = ctypes.get_errno()
        return errno.errorcode.get(e, str(e))
    return "OK"
os.umask(0o022)
fd = os.open("created", os.O_CREAT | os.O_WRONLY, 0o4755)   # Python adds O_CLOEXEC
print("created-write", os.write(fd, b"abc"))
print("created-cloexec", fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
os.close(fd)
fd = libc.open(b"inherit", os.O_CREAT | os.O_WRONLY, 0o4755)  # no O_CLOEXEC
print("inherit-open", res(fd))
print("inherit-cloexec", fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
print("inherit-write", os.write(fd, b"xy"))
os.close(fd)
open("target", "w").close(); os.chmod("target", 0o644)
os.symlink("target", "link")
print("chmod-link", res(libc.chmod(b"link", 0o4750)))
print("nofollow-link", res(libc.syscall(452, -100, b"link", 0o4777, 0x100)))  # fchmodat2 AT_SYMLINK_NOFOLLOW
print("nofollow-link-plain", res(libc.syscall(452, -100, b"link", 0o777, 0x100)))
fd = os.open("fch", os.O_CREAT | os.O_RDONLY, 0o600)
print("fchmod", res(libc.syscall(91, fd, 0o6711)))
print("outside-ro", res(libc.chmod(sys.argv[1].encode(), 0o4755)))
# what the command cannot change: the handler answers as the kernel does the same call
# without the bit
for name, path in (("not-owner", "other"), ("root", "/"), ("devnull", "/dev/null"), ("env", "/usr/bin/env"),
                   ("proc", "/proc/1"), ("ro", sys.argv[1])):
    print(name, res(libc.chmod(path.encode(), 0o4755)))
    print(name + "-plain", res(libc.chmod(path.encode(), 0o755)))
print("dotdot-ro", res(libc.chmod(b"../ro/f", 0o4755)))
print("dotdot", res(libc.chmod(("sub/../../" + os.path.basename(os.getcwd()) + "/dd").encode(), 0o4711)))
`

// Each call with a set-ID bit succeeds with the bits dropped, the rest applied (the
// command's umask on creations), on the file the call names as the kernel resolves it
// (chmod follows a symlink, fchmodat2 AT_SYMLINK_NOFOLLOW does not); a created
// descriptor works and keeps the O_CLOEXEC asked for; and the handler has no more
// rights than the command: a file in a read-only bind gives EROFS, a file the command
// does not own EPERM, both left as they were.
func TestSetIDCalls(t *testing.T) {
	s := newRootSandbox(t)
	ro := filepath.Join(s.base, "ro")
	must(t, os.Mkdir(ro, 0o755))
	roFile := filepath.Join(ro, "f")
	must(t, os.WriteFile(roFile, nil, 0o644))
	other := s.writeWS("other", "", 0o644)
	must(t, os.Chown(other, 1234, 1234)) // not the workspace owner: unmapped inside
	must(t, os.Mkdir(filepath.Join(s.ws, "sub"), 0o755))
	s.writeWS("dd", "", 0o600)
	r := s.run("--ro", ro, "--", python, "-c", setIDCallsProbe, roFile)
	mustSucceed(t, r, "probe")
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = v
		}
	}
	for k, want := range map[string]string{
		"created-write": "3", "created-cloexec": "1",
		"inherit-open": "OK", "inherit-cloexec": "0", "inherit-write": "2",
		"chmod-link": "OK", "fchmod": "OK", "outside-ro": "EROFS", "dotdot-ro": "EROFS", "dotdot": "OK",
	} {
		if got[k] != want {
			t.Errorf("%s: %q, want %s", k, got[k], want)
		}
	}
	for _, k := range []string{"nofollow-link", "not-owner", "root", "devnull", "env", "proc", "ro"} {
		if got[k] == "" || got[k] == "OK" || got[k] != got[k+"-plain"] {
			t.Errorf("%s with a set-ID bit: %q, want the error of the same call without it (%q)", k, got[k], got[k+"-plain"])
		}
	}
	for name, want := range map[string]os.FileMode{
		"created": 0o755, "inherit": 0o755, "target": 0o750, "fch": 0o711, "other": 0o644, "dd": 0o711,
	} {
		if m := modeOf(t, filepath.Join(s.ws, name)); m != want {
			t.Errorf("host: %s is %v, want %v", name, m, want)
		}
	}
	if m := modeOf(t, roFile); m != 0o644 {
		t.Errorf("host: the read-only bind's file is %v, want -rw-r--r--", m)
	}
	wantContent(t, filepath.Join(s.ws, "created"), "abc")
	if t.Failed() {
		t.Logf("probe:\n%v", r)
	}
}

// chmod(1) g+s on a directory, install -d -m 2775, chmod 4755: exit 0 for root (and
// for uid 0 without CAP_SYS_ADMIN, which keeps the set-ID rules: its files are host
// root's), the other bits applied, no set-ID bit on the host. mkdir -m 2775 needs no
// rule: the kernel drops the bits of mkdir(2)'s mode itself.
func TestSetIDTools(t *testing.T) {
	requireBinary(t)
	for _, c := range []caller{rootCaller, rootNoAdmin} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t, c)
			r := s.sh(nil, `set -e; umask 022
mkdir d; chmod g+s d
install -d -m 2775 inst
touch f; chmod 4755 f
mkdir -m 2775 mk`)
			mustSucceed(t, r, "chmod / install")
			for name, want := range map[string]os.FileMode{"d": 0o755, "inst": 0o775, "f": 0o755, "mk": 0o775} {
				if m := modeOf(t, filepath.Join(s.ws, name)); m != want {
					t.Errorf("host: %s is %v, want %v", name, m, want)
				}
			}
		})
	}
}

// Threads racing: one swaps a path component between a directory and a symlink to a
// read-only bind holding a file of the same name, the other chmods through that
// component with S_ISUID. Whatever the handler resolved, it could only do what the
// command could: the bind's file keeps its mode, and nothing in the workspace has a
// set-ID bit.
func TestSetIDRaceSymlinkSwap(t *testing.T) {
	s := newRootSandbox(t)
	ro := filepath.Join(s.base, "ro")
	must(t, os.Mkdir(ro, 0o755))
	roFile := filepath.Join(ro, "x")
	must(t, os.WriteFile(roFile, nil, 0o644))
	script := symlinkSwapScript
	r := s.run("--ro", ro, "--", python, "-c", script, ro, "3000")
	mustSucceed(t, r, "race")
	if !strings.Contains(r.stdout, "chmods ") || strings.Contains(r.stdout, "chmods 0 ") {
		t.Errorf("no chmod went through the workspace's directory: the race did not run\n%v", r)
	}
	t.Logf("%s", r.stdout)
	if m := modeOf(t, roFile); m != 0o644 {
		t.Errorf("host: the read-only bind's file is %v, want -rw-r--r--", m)
	}
	noSetIDIn(t, s.ws)
}

// noSetIDIn fails for any entry of dir (walked from the host) with a set-ID bit.
func noSetIDIn(t *testing.T, dir string) {
	t.Helper()
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("host: %s has mode %v", p, fi.Mode())
		}
		return nil
	}))
}

// No process of the sandbox holds a seccomp listener: a command that could answer its
// own notifications could make any set-ID file. Checked inside over every process the
// command can see (a child too), and from the host over the command's own descriptors.
func TestSetIDNoListenerInCommand(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `sleep 30 & n=0
for f in /proc/[0-9]*/fd/*; do
  l=$(readlink "$f" 2>/dev/null) || continue
  n=$((n+1))
  case "$l" in *seccomp*) echo "LISTENER $f $l";; esac
done
kill $!; echo "fds $n"`)
		mustSucceed(t, r, "scan")
		if strings.Contains(r.stdout, "LISTENER") || !strings.Contains(r.stdout, "fds ") || strings.Contains(r.stdout, "fds 0\n") {
			t.Errorf("want no seccomp listener among the command's descriptors (and some descriptors seen)\n%v", r)
		}
	})
}

// A session's commands are served too, each by its own listener; a command started
// after another ended still is. A session's pid 1 keeps CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH for the commands to come; the handler thread has neither: a file
// under a directory of mode 000 (which the command, without capabilities, cannot
// search) is out of its reach too, the answer the kernel's own (EACCES).
func TestSetIDSession(t *testing.T) {
	requireBinary(t)
	t.Parallel()
	e := newSessionEnv(t, rootCaller)
	e.start("sid")
	// chmod(2) itself (chmod(1) would stat the file first, and stop there)
	r := e.in("sid", nil, `mkdir locked && touch locked/f && chmod 644 locked/f && chmod 000 locked || exit 9
exec `+python+` -c '
import os
for m in (0o4755, 0o755):
    try:
        os.chmod("locked/f", m); print(oct(m), "OK")
    except OSError as e:
        print(oct(m), e.strerror)'`)
	mustSucceed(t, r, "locked directory")
	if !strings.Contains(r.stdout, "0o4755 Permission denied") || !strings.Contains(r.stdout, "0o755 Permission denied") {
		t.Errorf("chmod through a 000 directory: want both to fail (EACCES) as the command cannot search it\n%v", r)
	}
	if m := modeOf(t, filepath.Join(e.ws, "locked", "f")); m != 0o644 {
		t.Errorf("host: locked/f is %v, want -rw-r--r--", m)
	}
	must(t, os.Chmod(filepath.Join(e.ws, "locked"), 0o755)) // for the cleanup
	for _, name := range []string{"one", "two"} {
		r := e.in("sid", nil, "umask 022; touch "+name+"; chmod 6755 "+name+" && mkdir d-"+name+" && chmod g+s d-"+name)
		mustSucceed(t, r, "chmod in the session")
		if m := modeOf(t, filepath.Join(e.ws, name)); m != 0o755 {
			t.Errorf("host: %s is %v, want -rwxr-xr-x", name, m)
		}
		if m := modeOf(t, filepath.Join(e.ws, "d-"+name)); m != 0o755 {
			t.Errorf("host: d-%s is %v, want drwxr-xr-x", name, m)
		}
	}
}

// With the handler gone (a -tags gosbxfault build told to close the listener), the
// calls fail (the kernel answers ENOSYS) and no set-ID file is made: fail closed.
func TestSetIDHandlerGone(t *testing.T) {
	bin := faultBinary(t)
	s := newRootSandbox(t)
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, "--", python, "-c", `
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
open("f", "w").close()
r = libc.chmod(b"f", 0o4755)
print("chmod", r, errno.errorcode.get(ctypes.get_errno()) if r else "OK")
r = libc.open(b"g", os.O_CREAT | os.O_WRONLY, 0o4755)
print("open", r, errno.errorcode.get(ctypes.get_errno()) if r < 0 else "OK")
`)
	cmd.Path, cmd.Args = replaceBinary(cmd, bin)
	cmd.Env = s.env("GOSBX_FAULT=set-ID handler")
	r := s.runCmd(ctx, cmd)
	mustSucceed(t, r, "probe")
	if !strings.Contains(r.stdout, "chmod -1 ENOSYS") || !strings.Contains(r.stdout, "open -1 ENOSYS") {
		t.Errorf("want chmod and open with S_ISUID to fail with ENOSYS when no handler answers\n%v", r)
	}
	if _, err := os.Lstat(filepath.Join(s.ws, "g")); err == nil {
		t.Errorf("host: g was created")
	}
	noSetIDIn(t, s.ws)
}

// setIDBlockProbe makes set-ID opens of what is not a regular file: a FIFO without a
// reader (which would block), a terminal (which would become the controlling terminal
// of the opener) and /proc/self (the opener's); then one of a regular file.
const setIDBlockProbe = `
import errno, os, signal
signal.alarm(5)
def try_open(name, path, flags):
    try:
        os.open(path, flags | os.O_CREAT, 0o4644)
        print(name, "OK")
    except OSError as e:
        print(name, errno.errorcode[e.errno])
if not os.path.exists("p"):
    os.mkfifo("p")
try_open("fifo-w", "p", os.O_WRONLY)
try_open("fifo-r", "p", os.O_RDONLY)
m, s = os.openpty(); n = os.ttyname(s); os.close(s)
try_open("tty", n, os.O_RDWR)
try_open("self", "/proc/self/attr/current", os.O_RDONLY)
try_open("file", "f", os.O_WRONLY)
`

// From an attack review: a set-ID open never blocks the init's handler (a FIFO pinned
// one init thread per command for the session's life, until the pids limit denied
// every later command) and never gives the init a controlling terminal. In a session
// with --pids 20, 24 commands each open a FIFO without a reader with a set-ID mode:
// each gets EPERM at once, and then a regular file is created; from the host, the
// init's thread count is what it was, and it has no controlling terminal (stat's
// tty_nr 0); a command still starts afterwards.
func TestSetIDOpenNeverBlocks(t *testing.T) {
	const setIDCommands = 24
	requireBinary(t)
	e := newSessionEnv(t, rootCaller)
	e.start("fifo", "--pids", "20")
	initPid := e.info("fifo").InitPid
	threads := func() int {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(initPid) + "/task")
		if err != nil {
			t.Fatalf("the session's init: %v", err)
		}
		return len(ents)
	}
	before := threads()
	for i := 0; i < setIDCommands; i++ {
		r := e.gosbx("exec", "--session", "fifo", "--", python, "-c", setIDBlockProbe)
		want := "fifo-w EPERM\nfifo-r EPERM\ntty EPERM\nself "
		if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "file OK\n") {
			t.Fatalf("command %d: %q, want %q... and file OK\n%v", i, r.stdout, want, r)
		}
		if i == 0 && strings.Contains(r.stdout, "self OK") {
			t.Errorf("a set-ID open of /proc/self/attr/current succeeded\n%v", r)
		}
	}
	mustSucceed(t, e.in("fifo", nil, "true"), "a command after the set-ID opens")
	// A blocked open pins one thread per command (24 here); the runtime may start a few
	// threads of its own while two Ps serve set-ID calls (CI saw 8 → 11), so the bound
	// is half the commands, not "none".
	if after := threads(); after-before >= setIDCommands/2 {
		t.Errorf("host: the init has %d threads after %d commands, %d before (one pinned per command?)",
			after, setIDCommands, before)
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(initPid) + "/stat")
	must(t, err)
	fs := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
	if fs[4] != "0" { // field 7, tty_nr
		t.Errorf("host: the init's tty_nr is %s, want 0 (no controlling terminal)", fs[4])
	}
	if m := modeOf(t, filepath.Join(e.ws, "f")); m != 0o644 {
		t.Errorf("host: f is %v, want -rw-r--r--", m)
	}
}

// From an attack review: a set-ID open of a terminal does not make it the init's
// controlling terminal (the init is a session leader without one; open(2) without
// O_NOCTTY would take it, and then the terminal's ^\ and hangup signal the init). From
// the host, while the command waits: the gosbx process's child (the init) has tty_nr 0.
func TestSetIDOpenNoControllingTerminal(t *testing.T) {
	s := newRootSandbox(t)
	probe := `
import errno, os, sys
m, s = os.openpty(); n = os.ttyname(s); os.close(s)
try:
    os.open(n, os.O_RDWR | os.O_CREAT, 0o4000); print("tty OK", flush=True)
except OSError as e:
    print("tty", errno.errorcode[e.errno], flush=True)
sys.stdin.read()
`
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, "--", python, "-c", probe)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Wait()
	defer stdin.Close()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "tty EPERM\n" {
		t.Errorf("a set-ID open of a terminal: %q, want EPERM", line)
	}
	kids, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", cmd.Process.Pid))
	checked := 0
	for _, k := range kids {
		b, _ := os.ReadFile(k)
		for _, pid := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				continue
			}
			fs := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
			checked++
			if fs[4] != "0" {
				t.Errorf("host: the init (pid %s) has tty_nr %s, want 0 (no controlling terminal)", pid, fs[4])
			}
		}
	}
	if checked == 0 {
		t.Errorf("host: no child of gosbx (pid %d) found", cmd.Process.Pid)
	}
}

// From an attack review: one set-ID handler thread serves every command, made before
// any command (it was one thread per running command, at most 16, the 17th command's
// calls failing with ENOSYS): with 18 commands running in a session, a further
// command's set-ID call is answered, and from the host (/proc/INIT/task) the init has
// no more threads than before they started.
func TestSetIDOneHandler(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, rootCaller)
	e.start("one", "--pids", "128")
	initPid := e.info("one").InitPid
	threads := func() int {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(initPid) + "/task")
		must(t, err)
		return len(ents)
	}
	mustSucceed(t, e.in("one", nil, "touch f"), "warm-up command")
	before := threads()
	gate := filepath.Join(e.ws, "gate")
	defer os.WriteFile(gate, nil, 0o644) // the detached commands end once they see it
	for i := 0; i < 18; i++ {
		r := e.gosbx("exec", "--session", "one", "--detach", "--", shellPath, "-c", "while [ ! -e gate ]; do sleep 0.05; done")
		mustSucceed(t, r, "detached command")
	}
	r := e.in("one", nil, "chmod 4750 f && echo ok")
	if r.stdout != "ok\n" {
		t.Errorf("a set-ID call with 18 commands running: %q, want ok\n%v", r.stdout, r)
	}
	if m := modeOf(t, filepath.Join(e.ws, "f")); m != 0o750 {
		t.Errorf("host: f is %v, want -rwxr-x--- (the call made, S_ISUID dropped)", m)
	}
	if after := threads(); after > before+2 { // the runtime's own may vary by one or two
		t.Errorf("host: the init has %d threads with 18 commands running, %d before", after, before)
	}
}

// setIDFiller fills the sandbox's pids limit with sleeping children (fork(2) until it
// fails), says so (the file "full"), and waits, reaping those the host kills.
const setIDFiller = `
import os, signal
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        while True:
            signal.pause()
def reap(*_):
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass
signal.signal(signal.SIGCHLD, reap)
open("full", "w").close()
while True:
    signal.pause()
`

// From an attack review: the init is in the pids limit of its commands, and made a
// set-ID handler thread per command; once a command filled the limit, the next
// command's thread could not be made, and the Go runtime of the init died with the
// session. In a session with --pids 40, one command fills the limit; before each of 20
// commands the host frees one pid (kills one sleeper: pids.current is pids.max - 1),
// which the command takes; each makes a set-ID chmod with a mode of its own: each is
// answered (from the host, f's mode is that mode without S_ISUID), the init lives,
// and from the host (/proc/INIT/task) its thread count did not grow with the requests.
func TestSetIDPidsFull(t *testing.T) {
	requireBinary(t)
	e := newSessionEnv(t, rootCaller)
	e.start("full", "--pids", "40")
	initPid := e.info("full").InitPid
	threads := func() int {
		ents, err := os.ReadDir("/proc/" + strconv.Itoa(initPid) + "/task")
		if err != nil {
			t.Fatalf("the session's init is gone: %v", err)
		}
		return len(ents)
	}
	for i := 0; i < 5; i++ { // the init's runtime makes the threads it needs
		mustSucceed(t, e.in("full", nil, "touch f; chmod 4755 f"), "warm-up command")
	}
	mustSucceed(t, e.gosbx("exec", "--session", "full", "--detach", "--", python, "-c", setIDFiller), "filler")
	full := filepath.Join(e.ws, "full")
	for i := 0; ; i++ {
		if _, err := os.Stat(full); err == nil {
			break
		}
		if i == 1000 {
			t.Fatal("the filler never filled the pids limit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	group := sandboxGroup(t, int64(initPid), "pids")
	max, err := strconv.Atoi(readTrim(filepath.Join(group, "pids.max")))
	must(t, err)
	// oneFree kills sleepers (the filler's children: the group's processes whose parent
	// has their command line) until pids.current is pids.max - 1.
	oneFree := func() {
		for tries := 0; ; tries++ {
			cur, err := strconv.Atoi(readTrim(filepath.Join(group, "pids.current")))
			must(t, err)
			if cur == max-1 {
				return
			}
			if !alive(initPid) {
				t.Fatalf("the session's init died (pids.current %d, pids.max %d)", cur, max)
			}
			if cur < max-1 {
				return // more room than one pid (the init's own threads are counted too)
			}
			if tries == 500 {
				t.Fatalf("pids.current %d, pids.max %d: want one pid free", cur, max)
			}
			for _, p := range strings.Fields(readTrim(filepath.Join(group, "cgroup.procs"))) {
				cmd := readTrim("/proc/" + p + "/cmdline")
				var ppid string
				for l := range strings.Lines(readTrim("/proc/" + p + "/status")) {
					if v, ok := strings.CutPrefix(l, "PPid:"); ok {
						ppid = strings.TrimSpace(v)
					}
				}
				if cmd != "" && strings.Contains(cmd, "signal.pause") && readTrim("/proc/"+ppid+"/cmdline") == cmd {
					pid, _ := strconv.Atoi(p)
					syscall.Kill(pid, syscall.SIGKILL)
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	oneFree()
	before := threads()
	for i := 0; i < 20; i++ {
		mode := 0o4700 | (i%8)<<3
		var r result
		// The init's runtime may take the free pid for a thread of its own (its number
		// of threads is its busiest moment's so far): the fork fails (clone: EAGAIN,
		// the session answers) and the command is sent again, once a pid is free again.
		for try := 0; try < 3; try++ {
			oneFree()
			r = e.gosbx("exec", "--session", "full", "--", "/usr/bin/chmod", strconv.FormatInt(int64(mode), 8), "f")
			if r.code != 125 || !strings.Contains(r.stderr, "clone: resource temporarily unavailable") {
				break
			}
		}
		if r.code != 0 {
			t.Fatalf("request %d with one pid free: exit %d (threads %d, %d before)\n%v", i, r.code, threads(), before, r)
		}
		if m := modeOf(t, filepath.Join(e.ws, "f")); m != os.FileMode(mode&0o777) {
			t.Fatalf("request %d: host: f is %v, want %v", i, m, os.FileMode(mode&0o777))
		}
	}
	if !alive(initPid) {
		t.Fatal("the session's init died")
	}
	if after := threads(); after > before+2 { // the runtime's own may vary by one or two
		t.Errorf("host: the init has %d threads after 20 requests, %d before", after, before)
	}
}

// symlinkSwapScript races a chmod with S_ISUID (argv[2] times) through a path component
// that another thread swaps between a directory and a symlink to argv[1], a read-only
// bind (python3 -c, in the workspace).
const symlinkSwapScript = `
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
ro = sys.argv[1]
os.mkdir("real"); open("real/x", "w").close()
os.symlink(ro, "evil")
stop = False
def swap():
    while not stop:
        os.rename("real", "tmp"); os.rename("evil", "real")
        os.rename("real", "evil"); os.rename("tmp", "real")
th = threading.Thread(target=swap); th.start()
ok = other = 0
for i in range(int(sys.argv[2])):
    if libc.chmod(b"real/x", 0o4755) == 0:
        ok += 1
    else:
        other += 1
stop = True; th.join()
print("chmods", ok, "failed", other)
`
