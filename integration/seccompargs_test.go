package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A policy's seccomp rules compare an argument as the call reads it (its declared
// type: 32 bits for int, pid_t, unsigned int; signed or not), so setting high bits
// the kernel drops does not get past a rule, and an order on a signed int means what
// it says. Seen from inside with python3 ctypes making the raw calls, and from the
// host: the sibling's death signal, the files left or made in the workspace.
const argWidthPy = `import ctypes, errno, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS_kill, SYS_mkdirat, SYS_unlinkat = 62, 258, 263  # x86_64
def call(nr, *args):
    a = [ctypes.c_char_p(x) if isinstance(x, bytes) else ctypes.c_long(x) for x in args]
    r = libc.syscall(ctypes.c_long(nr), *a)
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def kill(name, sig):
    # a sibling this program started; SIGTERM (never matched) ends it after the call,
    # so its status says which signal arrived first
    p = subprocess.Popen(["sleep", "60"])
    res = call(SYS_kill, p.pid, sig)
    os.kill(p.pid, 15)
    print(name, res, "died-by", -p.wait(), flush=True)
if sys.argv[1] == "kill":
    kill("kill_hi", 9 | 1 << 32)
    kill("kill_9", 9)
else:
    AT_FDCWD = -100
    print("unlinkat_cwd", call(SYS_unlinkat, AT_FDCWD, b"victim1", 0))
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    print("unlinkat_fd", call(SYS_unlinkat, fd, b"victim2", 0))
    print("mkdirat_fd", call(SYS_mkdirat, fd, b"made1", 0o755))
    print("mkdirat_cwd", call(SYS_mkdirat, AT_FDCWD, b"made2", 0o755))
`

func TestSeccompArgWidth(t *testing.T) {
	kill := map[string]string{
		// eq: kill(pid, 9|1<<32) is SIGKILL to the kernel
		"eq": "    - {syscalls: [kill], action: errno, args: [{index: 1, op: eq, value: 9}]}\n",
		// ne: an allow rule for every other signal, then a refusal
		"ne": "    - {syscalls: [kill], action: allow, args: [{index: 1, op: ne, value: 9}]}\n" +
			"    - {syscalls: [kill], action: errno}\n",
		// masked_eq with a mask bit past the int: cut to the bits the kernel reads
		"masked_eq": "    - {syscalls: [kill], action: errno, args: [{index: 1, op: masked_eq, mask: 0x1000000ff, value: 9}]}\n",
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.writeWS("argwidth.py", argWidthPy, 0o644)
		for op, rules := range kill {
			pol := s.writePolicy("kill-"+op+".yaml", "extends: agent\nseccomp:\n  rules:\n"+rules)
			r := s.run("--policy", pol, "--", python, "argwidth.py", "kill")
			mustSucceed(t, r, "kill probe, "+op)
			for _, want := range []string{"kill_hi EPERM died-by 15", "kill_9 EPERM died-by 15"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%s: want %q (the sibling survives the refused SIGKILL):\n%v", op, want, r)
				}
			}
		}
		// lt and gt on a signed int, dfd: refuse AT_FDCWD (-100) for unlinkat, every
		// real descriptor (dfd > -1) for mkdirat
		for _, f := range []string{"victim1", "victim2"} {
			s.writeWS(f, "x", 0o644)
		}
		pol := s.writePolicy("signed.yaml", "extends: agent\nseccomp:\n  rules:\n"+
			"    - {syscalls: [unlinkat], action: errno, errno: EACCES, args: [{index: 0, op: lt, value: 0}]}\n"+
			"    - {syscalls: [mkdirat], action: errno, errno: EACCES, args: [{index: 0, op: gt, value: 4294967295}]}\n")
		r := s.run("--policy", pol, "--", python, "argwidth.py", "signed")
		mustSucceed(t, r, "signed probe")
		for _, want := range []string{"unlinkat_cwd EACCES", "unlinkat_fd ok", "mkdirat_fd EACCES", "mkdirat_cwd ok"} {
			if !strings.Contains(r.stdout, want+"\n") {
				t.Errorf("signed: want %q:\n%v", want, r)
			}
		}
		for f, exists := range map[string]bool{"victim1": true, "victim2": false, "made1": false, "made2": true} {
			if _, err := os.Lstat(filepath.Join(s.ws, f)); (err == nil) != exists {
				t.Errorf("signed: on the host, %s exists: %v, want %v", f, err == nil, exists)
			}
		}
	})
}
