package integration

// Issue 9: a root caller's command never runs as host root. It runs as a host id
// taken from a reserved range, one per concurrent sandbox; read-write binds are
// idmapped to their owner; read-only system binds are not; set-ID bits are refused.
// Every check is made from the host.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The default range of host ids for a root caller's commands (policy.DefaultIDRange).
const (
	rootIDBase  = 2100000000
	rootIDCount = 65536
	rootIDDir   = "/run/gosbx/ids"
)

// newRootSandbox is a fresh workspace for the root caller (skipped when not root).
func newRootSandbox(t *testing.T) *sandbox {
	t.Helper()
	requireBinary(t)
	t.Parallel()
	return newSandbox(t, rootCaller)
}

// privateIDRange is a range of count ids that no other test (and, almost surely, no
// other run) uses: above the default range, below 2^31.
func privateIDRange(count uint32) (uint32, string) {
	base := 2_110_000_000 + rand.Uint32N(30_000_000)
	return base, fmt.Sprintf("%d:%d", base, count)
}

// runStatusEnv is runStatus with extra variables in gosbx's own environment.
func (s *sandbox) runStatusEnv(extraEnv []string, args ...string) statusResult {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	pr, pw, err := os.Pipe()
	must(s.t, err)
	cmd := s.command(ctx, append([]string{"--status-fd", "3"}, args...)...)
	cmd.Env = s.env(extraEnv...)
	cmd.ExtraFiles = []*os.File{pw}
	var raw bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&raw, pr); pr.Close(); close(done) }()
	res := s.runCmd(ctx, cmd)
	pw.Close()
	<-done
	sr := statusResult{result: res, pid: cmd.Process.Pid, raw: raw.String()}
	sr.events = parseStatusLines(s.t, raw.String())
	if len(sr.events) > 0 {
		sr.id, _ = sr.events[0]["sandbox-id"].(string)
	}
	for _, m := range sr.events {
		if _, ok := m["exit-code"]; ok {
			sr.exit = m
		}
	}
	return sr
}

// firstEvent is the first status line (the init's pid, its namespaces, the host id).
func firstEvent(r statusResult) map[string]any {
	if len(r.events) == 0 {
		return map[string]any{}
	}
	return r.events[0]
}

func parseStatusLines(t *testing.T, raw string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(raw))
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		m := map[string]any{}
		if d.Decode(&m) != nil {
			t.Fatalf("unparsable status line %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// hostCreds reads the host's view of pid's Uid, Gid (all four fields each) and Groups.
func hostCreds(t *testing.T, pid int64) (uids, gids []string, groups string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.FormatInt(pid, 10) + "/status")
	if err != nil {
		t.Fatalf("host /proc/%d/status: %v", pid, err)
	}
	st := procStatus(string(b))
	return strings.Fields(st["Uid"]), strings.Fields(st["Gid"]), strings.TrimSpace(st["Groups"])
}

// allIDs reports whether the four fields are all want.
func allIDs(f []string, want int64) bool {
	if len(f) != 4 {
		return false
	}
	for _, v := range f {
		if v != strconv.FormatInt(want, 10) {
			return false
		}
	}
	return true
}

// startBlocked starts `sh -c SCRIPT` with --status-fd (SCRIPT blocks on its stdin,
// which finish closes) and returns the run, its first status line and the command's
// host pid. A root caller's gosbx runs with the supplementary groups groups.
func (s *sandbox) startBlocked(flags []string, script string, groups ...uint32) (*statusRun, map[string]any, int64) {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, append(append([]string{"--status-fd", "3"}, flags...), "--", shellPath, "-c", script)...)
	if s.c.uid == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Groups: append([]uint32{}, groups...)}}
	}
	sr := &statusRun{cmd: cmd, events: make(chan map[string]any, 16), raw: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	stR, stW, err := os.Pipe()
	must(s.t, err)
	inR, inW, err := os.Pipe()
	must(s.t, err)
	outR, outW, err := os.Pipe()
	must(s.t, err)
	cmd.ExtraFiles = []*os.File{stW}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, sr.stderr
	sr.stdin, sr.stdout = inW, bufio.NewReader(outR)
	must(s.t, cmd.Start())
	stW.Close()
	inR.Close()
	outW.Close()
	s.t.Cleanup(func() { inW.Close(); outR.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		defer stR.Close()
		defer close(sr.events)
		sc := bufio.NewScanner(stR)
		for sc.Scan() {
			sr.raw.Write(sc.Bytes())
			sr.raw.WriteByte('\n')
			d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
			d.UseNumber()
			m := map[string]any{}
			if d.Decode(&m) != nil {
				m = map[string]any{"unparsable": sc.Text()}
			}
			sr.events <- m
		}
	}()
	first := sr.next(20 * time.Second)
	if first == nil {
		s.t.Fatalf("no first status line; stderr %q", sr.stderr)
	}
	ex := sr.next(20 * time.Second)
	if ex == nil || ex["exec"] != true {
		s.t.Fatalf("no exec line: %v (all: %s, stderr %q)", ex, sr.raw, sr.stderr)
	}
	pid, ok := num(ex, "pid")
	if !ok {
		s.t.Fatalf("exec line without pid: %v", ex)
	}
	return sr, first, pid
}

// finish lets a startBlocked command end and returns gosbx's exit status.
func (sr *statusRun) finish(t *testing.T) int {
	t.Helper()
	sr.stdin.Close()
	_, _ = io.Copy(io.Discard, sr.stdout)
	code, ok := waitTimeout(t, sr.cmd, runLimit)
	if !ok {
		t.Fatalf("gosbx did not finish")
	}
	return code
}

// noLockLeft fails the test if the lock file of host id h is still in rootIDDir
// after its sandbox ended. A file another running sandbox holds locked (it took the
// id since) is not a leak.
func noLockLeft(t *testing.T, h int64) {
	t.Helper()
	p := filepath.Join(rootIDDir, strconv.FormatInt(h, 10))
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Errorf("lock file %s: %v", p, err)
		return
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); errors.Is(err, syscall.EWOULDBLOCK) {
		t.Logf("%s is held by another running sandbox", p)
		return
	}
	t.Errorf("the lock file %s of an ended sandbox was left behind", p)
}

// 1. A root caller's command runs, as seen from the host, as one id of the default
// range for uid and gid alike, never 0, without supplementary groups; two concurrent
// sandboxes hold different ids; the lock files go when they end. A non-root caller's
// command keeps the caller's own uid.
func TestRootIDHostCredentials(t *testing.T) {
	requireBinary(t)
	t.Run("root", func(t *testing.T) {
		s := newRootSandbox(t)
		var runs []*statusRun
		var ids []int64
		for i := 0; i < 2; i++ {
			// gosbx itself has supplementary groups (root, disk): the command has none
			sr, first, pid := s.startBlocked(nil, "read x || :", 0, 6)
			h, ok := num(first, "host-uid")
			if !ok || h < rootIDBase || h >= rootIDBase+rootIDCount {
				t.Fatalf("first status line: host-uid %v (%v), want an id of %d:%d: %s", h, ok, rootIDBase, rootIDCount, sr.raw)
			}
			uids, gids, groups := hostCreds(t, pid)
			if !allIDs(uids, h) || !allIDs(gids, h) {
				t.Errorf("sandbox %d: host Uid %q Gid %q, want all %d", i, uids, gids, h)
			}
			if groups != "" {
				t.Errorf("sandbox %d: host supplementary groups %q, want none", i, groups)
			}
			// the init (pid 1 inside) is that host id too
			if ip, ok := num(first, "child-pid"); ok {
				iu, ig, igr := hostCreds(t, ip)
				if !allIDs(iu, h) || !allIDs(ig, h) || igr != "" {
					t.Errorf("sandbox %d: the init's host Uid %q Gid %q Groups %q, want all %d and none", i, iu, ig, igr, h)
				}
			}
			if _, err := os.Stat(filepath.Join(rootIDDir, strconv.FormatInt(h, 10))); err != nil {
				t.Errorf("sandbox %d runs as %d but holds no lock file: %v", i, h, err)
			}
			runs = append(runs, sr)
			ids = append(ids, h)
		}
		if ids[0] == ids[1] {
			t.Errorf("two concurrent sandboxes share the host id %d", ids[0])
		}
		for i, sr := range runs {
			if code := sr.finish(t); code != 0 {
				t.Errorf("sandbox %d: exit %d; stderr %q", i, code, sr.stderr)
			}
		}
		for _, h := range ids {
			noLockLeft(t, h)
		}
	})
	t.Run("nobody", func(t *testing.T) {
		requireBinary(t)
		t.Parallel()
		s := newSandbox(t, nobodyCaller)
		sr, first, pid := s.startBlocked(nil, "read x || :")
		if _, ok := first["host-uid"]; ok {
			t.Errorf("a non-root caller's status has host-uid: %v", first)
		}
		uids, gids, _ := hostCreds(t, pid)
		if !allIDs(uids, nobodyID) || !allIDs(gids, nobodyID) {
			t.Errorf("non-root caller: host Uid %q Gid %q, want %d", uids, gids, nobodyID)
		}
		if code := sr.finish(t); code != 0 {
			t.Errorf("exit %d; stderr %q", code, sr.stderr)
		}
	})
}

// 2. Inside, the command's ids are 0 by default and --uid/--gid when given; on the
// host it is the range's id either way.
func TestRootIDInsideIDs(t *testing.T) {
	requireBinary(t)
	for _, tc := range []struct {
		name     string
		flags    []string
		uid, gid string
	}{{"default", nil, "0", "0"}, {"flags", []string{"--uid", "1234", "--gid", "2345"}, "1234", "2345"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRootSandbox(t)
			sr, first, pid := s.startBlocked(tc.flags, `echo "$(id -u) $(id -g) $(id -G)"; read x || :`)
			line, err := sr.stdout.ReadString('\n')
			if want := tc.uid + " " + tc.gid + " " + tc.gid + "\n"; err != nil || line != want {
				t.Errorf("inside, id -u, -g, -G print %q (%v), want %q", line, err, want)
			}
			h, ok := num(first, "host-uid")
			uids, gids, _ := hostCreds(t, pid)
			if !ok || h < rootIDBase || h >= rootIDBase+rootIDCount || !allIDs(uids, h) || !allIDs(gids, h) {
				t.Errorf("host-uid %v (%v), host Uid %q Gid %q: want one id of the default range", h, ok, uids, gids)
			}
			if code := sr.finish(t); code != 0 {
				t.Errorf("exit %d; stderr %q", code, sr.stderr)
			}
		})
	}
}

// ownerOf returns a host file's uid and gid.
func ownerOf(t *testing.T, p string) (int, int) {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Errorf("host: %s: %v", p, err)
		return -1, -1
	}
	return int(st.Uid), int(st.Gid)
}

func wantContent(t *testing.T, p, want string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != want {
		t.Errorf("host: %s holds %q (%v), want %q", p, b, err, want)
	}
}

// 3. A root-owned workspace: what the command creates lands owned by root, and
// root's existing files, 0644 and 0600, are writable (the workspace is idmapped to
// its owner; without the idmap the host id could not write there at all).
func TestRootIDWorkspaceRootOwned(t *testing.T) {
	s := newRootSandbox(t)
	pub := s.writeWS("pub", "old\n", 0o644)
	priv := s.writeWS("priv", "old\n", 0o600)
	r := s.sh(nil, `set -e
mkdir d; echo new > d/created; echo new > created
echo pub >> pub; echo priv >> priv`)
	mustSucceed(t, r, "writing in a root-owned workspace")
	for _, p := range []string{"created", "d", "d/created"} {
		if u, g := ownerOf(t, filepath.Join(s.ws, p)); u != 0 || g != 0 {
			t.Errorf("host: %s created inside is owned %d:%d, want 0:0", p, u, g)
		}
	}
	wantContent(t, filepath.Join(s.ws, "created"), "new\n")
	wantContent(t, pub, "old\npub\n")
	wantContent(t, priv, "old\npriv\n")
}

// 4. A workspace owned by 1000:1000: what the command creates lands owned by
// 1000:1000, whether it is uid 0 inside (default) or 1000 (--uid/--gid); 1000's
// 0600 file is writable, and a root-owned file left there is not (only the owner is
// mapped: the command is not host root).
func TestRootIDWorkspaceUserOwned(t *testing.T) {
	requireBinary(t)
	for _, tc := range []struct {
		name  string
		flags []string
		id    string
	}{{"default", nil, "0"}, {"uid1000", []string{"--uid", "1000", "--gid", "1000"}, "1000"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newRootSandbox(t)
			must(t, os.Chown(s.ws, 1000, 1000))
			mine := s.writeWS("mine", "old\n", 0o600)
			must(t, os.Chown(mine, 1000, 1000))
			rootFile := s.writeWS("rootfile", "root\n", 0o644) // owned 0:0
			r := s.sh(tc.flags, `id -u; mkdir d && echo new > d/created && echo new > created && echo mine >> mine && echo OK
if (echo x >> rootfile) 2>/dev/null; then echo ROOTFILE-WRITABLE; fi`)
			mustSucceed(t, r, "writing in a 1000-owned workspace")
			if r.stdout != tc.id+"\nOK\n" {
				t.Errorf("inside: want uid %s and every write to work, got %q (stderr %q)", tc.id, r.stdout, r.stderr)
			}
			for _, p := range []string{"created", "d", "d/created"} {
				if u, g := ownerOf(t, filepath.Join(s.ws, p)); u != 1000 || g != 1000 {
					t.Errorf("host: %s created inside is owned %d:%d, want 1000:1000", p, u, g)
				}
			}
			wantContent(t, mine, "old\nmine\n")
			wantContent(t, rootFile, "root\n")
		})
	}
}

// errnoProbe is a python3 program: for each "NAME OP PATH" argument it tries OP on
// PATH and prints "NAME OK" or "NAME ERRNO".
const errnoProbe = `
import errno, os, sys
def run(op, p):
    if op == "read":
        with open(p) as f: f.read()
    elif op == "openw":  # no O_TRUNC: the permission check comes before the mount's
        os.close(os.open(p, os.O_WRONLY))
for a in sys.argv[1:]:
    name, op, p = a.split(" ", 2)
    try:
        run(op, p); r = "OK"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print(name, r)
`

// 5. A read-only bind is not idmapped: root's 0600 file there is unreadable, and
// opening root's 0644 file for writing is refused by its owner and mode (EACCES)
// before the read-only flag (EROFS) is looked at: the command is not host root
// even where a read-only flag were missing. /proc/sys stays unwritable.
func TestRootIDReadOnlyBindNotRoot(t *testing.T) {
	s := newRootSandbox(t)
	dir := filepath.Join(s.base, "ro")
	must(t, os.Mkdir(dir, 0o755))
	secret, pub := filepath.Join(dir, "secret"), filepath.Join(dir, "pub")
	must(t, os.WriteFile(secret, []byte("secret-"+s.id), 0o600))
	must(t, os.WriteFile(pub, []byte("pub\n"), 0o644))
	r := s.run("--ro", dir, "--", python, "-c", errnoProbe,
		"secret read "+secret, "pubw openw "+pub, "pubr read "+pub, "core openw /proc/sys/kernel/core_pattern")
	mustSucceed(t, r, "probe")
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = v
		}
	}
	if got["secret"] != "EACCES" {
		t.Errorf("reading root's 0600 file in a --ro bind: %q, want EACCES\n%v", got["secret"], r)
	}
	if got["pubw"] != "EACCES" {
		t.Errorf("opening root's 0644 file in a --ro bind for writing: %q, want EACCES (EROFS: the command is the file's owner)\n%v", got["pubw"], r)
	}
	if got["pubr"] != "OK" {
		t.Errorf("reading root's 0644 file in a --ro bind: %q, want OK\n%v", got["pubr"], r)
	}
	if c := got["core"]; c != "EACCES" && c != "EROFS" {
		t.Errorf("opening /proc/sys/kernel/core_pattern for writing: %q, want EACCES or EROFS\n%v", c, r)
	}
	wantContent(t, pub, "pub\n")
}

// setIDProbe makes each system call the filter checks, raw (libc may pick another
// one), with the set-user-ID bit, the set-group-ID bit, and neither (a control that
// must work); each line is "CALL-BIT RESULT". openat2 passes its mode in memory: the
// filter answers ENOSYS whatever it holds.
const setIDProbe = `
import ctypes, errno, os, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
AT_FDCWD, O_TMPFILE = -100, 0o20200000
def sys(nr, *args):
    args = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    r = libc.syscall(ctypes.c_long(nr), *args)
    if r < 0:
        e = ctypes.get_errno()
        return errno.errorcode.get(e, str(e))
    if r > 2 and nr in (2, 85, 257, 437):
        os.close(r)
    return "OK"
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
for bit, tag in ((0o4000, "suid"), (0o2000, "sgid"), (0, "none")):
    m = 0o755 | bit
    f = ("f-" + tag).encode()
    open(f, "w").close()
    fd = os.open(f, os.O_RDONLY)
    w = os.O_WRONLY | os.O_CREAT
    res = {
        "chmod": sys(90, f, m),
        "fchmod": sys(91, fd, m),
        "fchmodat": sys(268, AT_FDCWD, f, m),
        "fchmodat2": sys(452, AT_FDCWD, f, m, 0),
        "creat": sys(85, b"creat-" + tag.encode(), m),
        "open": sys(2, b"open-" + tag.encode(), w, m),
        "openat": sys(257, AT_FDCWD, b"openat-" + tag.encode(), w, m),
        "openat-tmpfile": sys(257, AT_FDCWD, b".", O_TMPFILE | os.O_WRONLY, m),
        "mknod": sys(133, b"mknod-" + tag.encode(), 0o100000 | m, 0),
        "mknodat": sys(259, AT_FDCWD, b"mknodat-" + tag.encode(), 0o100000 | m, 0),
        "openat2": sys(437, AT_FDCWD, b"openat2-" + tag.encode(), ctypes.byref(How(w, m, 0)), ctypes.sizeof(How)),
    }
    os.close(fd)
    if tag == "none":
        # a file capability (CAP_SYS_ADMIN, effective) on a file root owns on the host
        try:
            os.setxattr(f, "security.capability", struct.pack("<5I", 0x02000001, 1 << 21, 0, 0, 0))
            res["setcap"] = "OK"
        except OSError as e:
            res["setcap"] = errno.errorcode.get(e.errno, str(e.errno))
    for k, v in res.items():
        print(k + "-" + tag, v)
`

// 6. No set-ID file can be made in a root caller's workspace (it would land owned by
// root on the host): chmod, fchmod, fchmodat, fchmodat2, creat, open and openat
// (O_CREAT, O_TMPFILE), mknod and mknodat with either bit succeed with the bit dropped
// (the sandbox init answers them: setid_test.go), openat2 fails with ENOSYS, the same
// calls without the bits work; chmod(1) and install(1) work, without the bits; no file
// capability can be set either; from the host, no file in the workspace has a set-ID
// bit, and the files the probe made have the mode asked for less the bits.
func TestRootIDNoSetID(t *testing.T) {
	s := newRootSandbox(t)
	r := s.run("--", python, "-c", setIDProbe)
	mustSucceed(t, r, "set-ID probe")
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = v
		}
	}
	for _, call := range []string{"chmod", "fchmod", "fchmodat", "fchmodat2", "creat", "open", "openat",
		"openat-tmpfile", "mknod", "mknodat", "openat2"} {
		for _, tag := range []string{"suid", "sgid", "none"} {
			want := "OK"
			if call == "openat2" {
				want = "ENOSYS"
			}
			if k := call + "-" + tag; got[k] != want {
				t.Errorf("%s: %q, want %s", k, got[k], want)
			}
		}
	}
	if got["setcap-none"] != "EPERM" {
		t.Errorf("setting security.capability: %q, want EPERM", got["setcap-none"])
	}
	if t.Failed() {
		t.Logf("probe output:\n%v", r)
	}
	for _, tag := range []string{"suid", "sgid"} {
		for _, name := range []string{"f", "creat", "open", "openat", "mknod", "mknodat"} {
			if m := modeOf(t, filepath.Join(s.ws, name+"-"+tag)); m != 0o755 {
				t.Errorf("host: %s-%s is %v, want -rwxr-xr-x", name, tag, m)
			}
		}
	}
	r = s.sh(nil, `touch f g
chmod u+s f && echo CHMOD-U-OK
chmod g+s g && echo CHMOD-G-OK
install -m 4755 /bin/true inst && echo INSTALL-OK
install -m 2755 /bin/true inst-g && echo INSTALL-G-OK
exit 0`)
	mustSucceed(t, r, "chmod/install")
	if strings.Fields(r.stdout) == nil || len(strings.Fields(r.stdout)) != 4 {
		t.Errorf("set-ID tools inside: %q, want all four to succeed (without the bits)\n%v", r.stdout, r)
	}
	n := 0
	must(t, filepath.Walk(s.ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		n++
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			t.Errorf("host: %s has mode %v", p, fi.Mode())
		}
		return nil
	}))
	if n < 4 {
		t.Errorf("host: only %d entries in the workspace: the probes did not run", n)
	}
}

// 7. An overlayfs workspace cannot be idmapped. By default the command runs, as host
// uid 0 (the old identity map), the status saying why, with no host-uid; the id taken
// for the attempt is given back. With root_identity_map: deny the launch is refused
// at the "idmap" step, the command not run and no id kept.
// (TestWorkspaceOnLockedMounts checks the exit and message; this adds the host view.)
func TestRootIDOverlayFallback(t *testing.T) {
	s := newRootSandbox(t)
	deny := s.writePolicy("deny.yaml", "extends: agent\nroot_identity_map: deny\n")
	// "link": the default policy, but the workspace named through a symlink (one an
	// earlier command could have planted): never the uid-0 fallback, refused as deny.
	for _, tc := range []struct {
		name   string
		policy []string
	}{{"allow", nil}, {"deny", []string{"--policy", deny}}, {"link", nil}} {
		base, rng := privateIDRange(1)
		status := filepath.Join(s.base, "status-"+tc.name)
		flags := strings.Join(append(append([]string{}, tc.policy...), "--id-range", rng), " ")
		script := fmt.Sprintf(`B=$1; shift
ws=$B/mnt-%[1]s
mkdir -p "$ws" "$B/lo-%[1]s" "$B/up-%[1]s" "$B/wk-%[1]s" || exit 77
mount -t overlay -o "lowerdir=$B/lo-%[1]s,upperdir=$B/up-%[1]s,workdir=$B/wk-%[1]s,nosuid,nodev" gosbx-it "$ws" || exit 77
chmod 755 "$ws"
named=$ws
if [ %[1]s = link ]; then ln -s "$ws" "$B/link-%[1]s" && named=$B/link-%[1]s; fi
"$@" exec %[2]s --status-fd 3 --workspace "$named" -- %[3]s -c 'echo ran > "$1/ran"; i=0; while [ ! -e "$1/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' _ "$ws" </dev/null 3>%[4]s &
g=$!
i=0
while [ $i -lt 400 ]; do
  grep -q '"error"' %[4]s && break
  pid=$(sed -n 's/^{"exec":true,"pid":\([0-9]*\).*/\1/p' %[4]s)
  if [ -n "$pid" ]; then grep -E '^(Uid|Gid):' /proc/$pid/status | sed 's/^/HOST /'; break; fi
  sleep 0.05; i=$((i+1))
done
touch "$ws/go"
wait $g
echo "RC $?"
echo "RAN $(cat "$ws/ran" 2>/dev/null)"`, tc.name, flags, shellPath, status)
		r := s.inPrivateMountNS(script)
		b, _ := os.ReadFile(status)
		ev := parseStatusLines(t, string(b))
		var hostUID []string
		for _, l := range strings.Split(r.stdout, "\n") {
			if f := strings.Fields(l); len(f) == 6 && f[0] == "HOST" {
				hostUID = append(hostUID, f[2:]...)
			}
		}
		switch tc.name {
		case "allow":
			if !strings.Contains(r.stdout, "RC 0\n") || !strings.Contains(r.stdout, "RAN ran\n") {
				t.Errorf("allow: want the command run\n%v\nstatus: %s", r, b)
			}
			if len(hostUID) != 8 || !allIDs(hostUID[:4], 0) || !allIDs(hostUID[4:], 0) {
				t.Errorf("allow: the command's host Uid/Gid %q, want 0 (the fallback)\n%v", hostUID, r)
			}
			im := findEvent(ev, "identity-map")
			if why, _ := im["identity-map"].(string); !strings.Contains(why, "idmap") {
				t.Errorf("allow: no identity-map reason in the status: %s", b)
			}
			if e := findEvent(ev, "host-uid"); e != nil {
				t.Errorf("allow: the status names a host-uid though the command ran as 0: %v", e)
			}
		case "deny", "link":
			if !strings.Contains(r.stdout, "RC 125\n") || strings.Contains(r.stdout, "RAN ran") || len(hostUID) != 0 {
				t.Errorf("%s: want 125, the command not run\n%v", tc.name, r)
			}
			last := ev[len(ev)-1:]
			if len(last) == 0 || last[0]["step"] != "idmap" || !strings.Contains(fmt.Sprint(last[0]["error"]), "/mnt-"+tc.name) {
				t.Errorf("deny: want a last status line at step idmap naming the workspace: %s", b)
			}
			if code, _ := num(last[0], "status"); code != 125 {
				t.Errorf("deny: last status line %v, want status 125", last[0])
			}
			if findEvent(ev, "exec") != nil {
				t.Errorf("deny: an exec line: %s", b)
			}
		}
		noLockLeft(t, int64(base))
	}
}

// 8. --id-range and GOSBX_ID_RANGE choose the range: with one id, one sandbox runs as
// it, a second one at the same time is refused (125, the range in use) while the first
// goes on; the flag wins over the variable; a bad range is refused before anything runs.
func TestRootIDRange(t *testing.T) {
	s := newRootSandbox(t)
	base, rng := privateIDRange(1)
	sr, first, pid := s.startBlocked([]string{"--id-range", rng}, `read x || :; echo done > first-done`)
	if h, ok := num(first, "host-uid"); !ok || h != int64(base) {
		t.Errorf("--id-range %s: host-uid %v (%v), want %d", rng, h, ok, base)
	}
	if uids, gids, _ := hostCreds(t, pid); !allIDs(uids, int64(base)) || !allIDs(gids, int64(base)) {
		t.Errorf("--id-range %s: host Uid %q Gid %q, want %d", rng, uids, gids, base)
	}
	for _, how := range []struct {
		name string
		env  []string
		args []string
	}{{"flag", nil, []string{"--id-range", rng}}, {"env", []string{"GOSBX_ID_RANGE=" + rng}, nil}} {
		m := s.marker("second-" + how.name)
		r := s.runStatusEnv(how.env, append(how.args, "--", "/usr/bin/touch", m)...)
		wantRefused(t, "a second sandbox on a range of one id ("+how.name+")", r.result, m, "in use", rng)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Errorf("the first sandbox's command is gone after the second was refused: %v", err)
	}
	if code := sr.finish(t); code != 0 {
		t.Errorf("first sandbox: exit %d; stderr %q", code, sr.stderr)
	}
	wantContent(t, filepath.Join(s.ws, "first-done"), "done\n")
	noLockLeft(t, int64(base))

	// the variable alone, and the flag over a bad variable
	for _, how := range []struct {
		name string
		env  []string
		args []string
	}{{"env", []string{"GOSBX_ID_RANGE=" + rng}, nil}, {"flag over env", []string{"GOSBX_ID_RANGE=5:3"}, []string{"--id-range", rng}}} {
		r := s.runStatusEnv(how.env, append(how.args, "--", "/usr/bin/true")...)
		if h, ok := num(firstEvent(r), "host-uid"); r.code != 0 || !ok || h != int64(base) {
			t.Errorf("%s: want exit 0 as host id %d\n%v", how.name, base, r)
		}
		noLockLeft(t, int64(base))
	}

	// bad ranges: gosbx's usage error, 125, naming the source of the range
	for _, how := range []struct {
		name, want string
		env        []string
		args       []string
	}{
		{"flag 5:3", "--id-range", nil, []string{"--id-range", "5:3"}},
		{"env 5:3", "GOSBX_ID_RANGE", []string{"GOSBX_ID_RANGE=5:3"}, nil},
		{"count 0", "empty", nil, []string{"--id-range", "3000000000:0"}},
		{"past the end", "2147483647", nil, []string{"--id-range", "2147483640:10"}},
		{"above 2^31", "2147483647", nil, []string{"--id-range", "3000000000:10"}},
		{"not numbers", "BASE:COUNT", nil, []string{"--id-range", "a:b"}},
	} {
		m := s.marker("bad-" + strings.ReplaceAll(how.name, " ", "-"))
		r := s.rawRunEnv(how.env, append(append([]string{"exec", "--workspace", s.ws}, how.args...), "--", "/usr/bin/touch", m)...)
		wantRefused(t, "bad id range, "+how.name, r, m, how.want)
	}
}

// 9. A workspace (and a read-only bind) under a directory only root may enter: the
// launcher clones every bind, so the sandbox is built although its init, the host id
// of the range, could not reach the paths.
func TestRootIDPrivateParent(t *testing.T) {
	s := newRootSandbox(t)
	priv := filepath.Join(s.base, "private")
	must(t, os.Mkdir(priv, 0o700))
	must(t, os.Chmod(priv, 0o700))
	ws, ro := filepath.Join(priv, "ws"), filepath.Join(priv, "ro")
	must(t, os.Mkdir(ws, 0o755))
	must(t, os.Mkdir(ro, 0o755))
	must(t, os.WriteFile(filepath.Join(ro, "data"), []byte("data-"+s.id+"\n"), 0o644))
	inner := *s
	inner.ws = ws
	r := inner.runStatusEnv(nil, "--ro", ro, "--", shellPath, "-c", `cat "$1/data" && echo new > "$2/created"`, "_", ro, ws)
	mustSucceed(t, r.result, "workspace under a 0700 root directory")
	if r.stdout != "data-"+s.id+"\n" {
		t.Errorf("the --ro bind under a 0700 directory: read %q, want its content", r.stdout)
	}
	if h, ok := num(firstEvent(r), "host-uid"); !ok || h < rootIDBase || h >= rootIDBase+rootIDCount {
		t.Errorf("host-uid %v (%v): want an id of the default range", h, ok)
	}
	wantContent(t, filepath.Join(ws, "created"), "new\n")
	if u, g := ownerOf(t, filepath.Join(ws, "created")); u != 0 || g != 0 {
		t.Errorf("host: created is owned %d:%d, want 0:0", u, g)
	}
}

// 10. A symlink planted in a workspace (by an earlier sandbox's command) cannot choose
// whom a root caller's next command acts as: a read-write bind named through a symlink
// to a directory another user owns is refused, and that user's files are untouched. The
// same directory named by its own path is the caller's explicit choice and works; a
// symlink to a root-owned directory works as before (handed case workspace-paths).
func TestRootIDSymlinkToAnotherOwner(t *testing.T) {
	s := newRootSandbox(t)
	bob := filepath.Join(s.base, "bobhome")
	must(t, os.Mkdir(bob, 0o700))
	keys := filepath.Join(bob, "authorized_keys")
	must(t, os.WriteFile(keys, []byte("bob's key\n"), 0o600))
	must(t, os.Chown(bob, 1000, 1000))
	must(t, os.Chown(keys, 1000, 1000))
	link := filepath.Join(s.ws, "sub")
	must(t, os.Symlink(bob, link))

	m := s.marker("via-link")
	r := s.rawRun("exec", "--workspace", link, "--", shellPath, "-c", `echo evil >> authorized_keys; touch "$1"`, "_", m)
	wantRefused(t, "a workspace through a symlink to a 1000-owned directory", r, m, "symlink", bob)
	wantContent(t, keys, "bob's key\n")

	rw := s.rawRun("exec", "--workspace", s.ws, "--rw", link, "--", shellPath, "-c", `echo evil >> "$1/authorized_keys"`, "_", bob)
	wantRefused(t, "an --rw through a symlink to a 1000-owned directory", rw, "", "symlink", bob)
	wantContent(t, keys, "bob's key\n")

	// named by its own path: the caller's choice; the command acts as its owner there
	ok := s.rawRun("exec", "--workspace", bob, "--", shellPath, "-c", `echo added >> authorized_keys`)
	mustSucceed(t, ok, "bob's directory named by its own path")
	wantContent(t, keys, "bob's key\nadded\n")

	// a symlink to a root-owned directory: as before
	rootDir := filepath.Join(s.base, "rootdir")
	must(t, os.Mkdir(rootDir, 0o755))
	rootLink := filepath.Join(s.ws, "rootlink")
	must(t, os.Symlink(rootDir, rootLink))
	viaRoot := s.rawRun("exec", "--workspace", rootLink, "--", shellPath, "-c", `echo hi > f`)
	mustSucceed(t, viaRoot, "a workspace through a symlink to a root-owned directory")
	wantContent(t, filepath.Join(rootDir, "f"), "hi\n")
}

// 11. A directory gosbx pins inside a workspace (it holds a protected .git) keeps the
// workspace's mapping: in a 1000-owned workspace, a root-owned vendor tree is not the
// command's to write, pinned or not.
func TestRootIDPinKeepsTreeMapping(t *testing.T) {
	s := newRootSandbox(t)
	lib := filepath.Join(s.ws, "vendor", "lib")
	must(t, os.MkdirAll(filepath.Join(lib, ".git"), 0o755))
	rootFile := filepath.Join(lib, "rootfile")
	must(t, os.WriteFile(rootFile, []byte("root\n"), 0o644))
	must(t, os.Chown(s.ws, 1000, 1000))
	r := s.sh(nil, `cd vendor/lib && grep -q ' /[^ ]*/vendor/lib ' /proc/self/mountinfo && echo PINNED
if (echo x >> rootfile) 2>/dev/null; then echo ROOTFILE-WRITABLE; fi
if (echo x > newfile) 2>/dev/null; then echo CREATED; fi
echo done`)
	mustSucceed(t, r, "a command in a 1000-owned workspace with a root-owned pinned tree")
	if !strings.Contains(r.stdout, "PINNED") {
		t.Fatalf("vendor/lib is not a mount point inside: the test does not exercise a pin\n%v", r)
	}
	if strings.Contains(r.stdout, "ROOTFILE-WRITABLE") || strings.Contains(r.stdout, "CREATED") {
		t.Errorf("the command wrote the root-owned pinned tree of a 1000-owned workspace\n%v", r)
	}
	wantContent(t, rootFile, "root\n")
	if _, err := os.Stat(filepath.Join(lib, "newfile")); err == nil {
		t.Error("a file was created in the root-owned pinned directory")
	}
}

// 12. For a root caller, a directory another user owns must be named by its absolute
// path: as the current directory (the default workspace, or ".") it is refused, since a
// program may have entered it through a symlink an earlier command planted (getcwd(3)
// shows only the physical path).
func TestRootIDOtherOwnerNeedsAbsolutePath(t *testing.T) {
	s := newRootSandbox(t)
	bob := filepath.Join(s.base, "bobdir")
	must(t, os.Mkdir(bob, 0o755))
	must(t, os.Chown(bob, 1000, 1000))
	for _, tc := range []struct {
		name string
		args []string
	}{{"default workspace", nil}, {"--workspace .", []string{"--workspace", "."}}, {"--rw .", []string{"--workspace", s.ws, "--rw", "."}}} {
		m := s.marker("cwd-" + strings.NewReplacer(" ", "-", ".", "dot").Replace(tc.name))
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, append(append([]string{"exec"}, tc.args...), "--", "touch", m)...)
		cmd.Dir = bob
		r := s.runCmd(ctx, cmd)
		wantRefused(t, "a 1000-owned current directory as "+tc.name, r, m, "absolute path", bob)
	}
	ok := s.rawRun("exec", "--workspace", bob, "--", "touch", "f")
	mustSucceed(t, ok, "the 1000-owned directory by its absolute path")
	if u, _ := ownerOf(t, filepath.Join(bob, "f")); u != 1000 {
		t.Errorf("a file made in bob's directory is owned by %d, want 1000", u)
	}
}

// 13. For a root caller an --rw of a socket is refused: idmapped to its owner, the
// command's connect() would pass the socket's mode as the owner's (a root daemon).
func TestRootIDRwSocketRefused(t *testing.T) {
	s := newRootSandbox(t)
	sock := filepath.Join(s.base, "daemon.sock")
	l, err := net.Listen("unix", sock)
	must(t, err)
	defer l.Close()
	must(t, os.Chmod(sock, 0o600))
	m := s.marker("sock")
	r := s.rawRun("exec", "--workspace", s.ws, "--rw", sock, "--", "touch", m)
	wantRefused(t, "an --rw of a root-owned socket", r, m, "socket")
}
