package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The procfs and sysfs surface (issue 7, item 5), and the handed cases that no other
// test covers yet (item 9). Each effect is compared with what the same caller sees on
// the host, so a check that the host itself cannot fail is skipped with a note.

// hostAs runs argv on the host (outside any sandbox) as the caller and returns its
// combined output.
func (s *sandbox) hostAs(argv ...string) (string, error) {
	if s.c.uid != 0 {
		argv = append([]string{"/usr/bin/setpriv", fmt.Sprintf("--reuid=%d", s.c.uid), fmt.Sprintf("--regid=%d", s.c.gid), "--clear-groups", "--"}, argv...)
	}
	ctx := s.limitCtx(runLimit)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = s.env(), s.base
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// procSizeProbe prints, for each path, "SIZE path N": the bytes readable (at most
// 1 MiB) from a file or the entries of a directory, "ERR errno" when it cannot be
// read, "ABSENT" when it does not exist.
const procSizeProbe = `
import os, sys
for p in sys.argv[1:]:
    try:
        if not os.path.lexists(p):
            print("SIZE", p, "ABSENT"); continue
        if os.path.isdir(p):
            print("SIZE", p, len(os.listdir(p))); continue
        with open(p, "rb") as f:
            print("SIZE", p, len(f.read(1 << 20)))
    except OSError as e:
        print("SIZE", p, "ERR", e.errno)
`

func parseSizes(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[0] == "SIZE" {
			m[f[1]] = strings.Join(f[2:], " ")
		}
	}
	return m
}

// Kernel state under /proc that says more about the host than the sandbox needs is
// masked: where the same caller reads content on the host, the command reads nothing
// (an empty file, an empty or unreadable directory).
func TestProcMaskedEntries(t *testing.T) {
	masked := []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
		"/proc/acpi", "/proc/scsi", "/proc/latency_stats", "/proc/timer_stats"}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		hostOut, err := s.hostAs(append([]string{python, "-c", procSizeProbe}, masked...)...)
		if err != nil {
			t.Fatalf("host probe: %v\n%s", err, hostOut)
		}
		host := parseSizes(hostOut)
		r := s.run(append([]string{"--", python, "-c", procSizeProbe}, masked...)...)
		mustSucceed(t, r, "inside probe")
		inside := parseSizes(r.stdout)
		checked := 0
		for _, p := range masked {
			h, in := host[p], inside[p]
			n, err := strconv.Atoi(h)
			if err != nil || n == 0 {
				t.Logf("%s: the host shows this caller nothing (%s): the mask cannot be told apart here", p, h)
				continue
			}
			checked++
			if in != "0" && !strings.HasPrefix(in, "ERR") {
				t.Errorf("%s is not masked: the host shows %s, inside %s", p, h, in)
			}
		}
		if checked == 0 {
			t.Skip("no masked /proc entry has content for this caller on this host")
		}
	})
}

// /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus and /proc/fs are read-only
// mounts: a mode change (to the same mode, harmless if it went through) and an open
// for writing fail with EROFS; an unprivileged caller may get EACCES for
// the open, which the kernel checks first. Nothing is ever written to a host sysctl:
// the global ones are only opened, and the host's values are compared afterwards.
func TestProcReadOnly(t *testing.T) {
	targets := []string{"/proc/sys", "/proc/sys/kernel/hostname", "/proc/sys/kernel/domainname",
		"/proc/sys/vm/overcommit_ratio", "/proc/sys/kernel/printk_ratelimit", "/proc/sys/net/ipv4/ip_forward",
		"/proc/sysrq-trigger", "/proc/irq", "/proc/irq/default_smp_affinity", "/proc/bus", "/proc/fs"}
	probe := `
import errno, os, stat, sys
def name(e): return errno.errorcode.get(e.errno, str(e.errno))
for p in sys.argv[1:]:
    try:
        st = os.stat(p)
    except OSError as e:
        print("ABSENT", p, name(e)); continue
    try:
        os.chmod(p, stat.S_IMODE(st.st_mode)); print("CHMOD", p, "OK")
    except OSError as e:
        print("CHMOD", p, name(e))
    if stat.S_ISDIR(st.st_mode):
        continue  # (mkdir is no probe: procfs answers ENOENT before the mount is asked)
    try:
        fd = os.open(p, os.O_WRONLY); os.close(fd); print("OPENW", p, "OK")
    except OSError as e:
        print("OPENW", p, name(e))
# The hostname is the sandbox's own: a real write is harmless, and must fail too.
try:
    with open("/proc/sys/kernel/hostname", "w") as f: f.write("gosbx-it-evil")
    print("WRITE hostname OK")
except OSError as e:
    print("WRITE hostname", name(e))
print("HOSTNAME", open("/proc/sys/kernel/hostname").read().strip())
`
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		type hostState struct {
			mode  os.FileMode
			value string
		}
		snap := func() map[string]hostState {
			m := map[string]hostState{}
			for _, p := range targets {
				fi, err := os.Stat(p)
				if err != nil {
					continue
				}
				st := hostState{mode: fi.Mode()}
				if fi.Mode().IsRegular() && fi.Mode().Perm()&0o444 != 0 {
					b, _ := os.ReadFile(p)
					st.value = string(b)
				}
				m[p] = st
			}
			return m
		}
		before := snap()
		hostName, _ := os.Hostname()
		r := s.run(append([]string{"--", python, "-c", probe}, targets...)...)
		mustSucceed(t, r, "read-only probes")
		after := snap()
		for p, b := range before {
			if a, ok := after[p]; !ok || a != b {
				t.Errorf("host %s changed: %+v -> %+v", p, b, a)
			}
		}
		if now, _ := os.Hostname(); now != hostName {
			t.Errorf("the host's hostname changed from %q to %q", hostName, now)
		}
		lines := strings.Split(r.stdout, "\n")
		seen := 0
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 3 {
				continue
			}
			op, p, res := f[0], f[1], f[2]
			if _, onHost := before[p]; !onHost && op != "WRITE" {
				continue // absent on this host: nothing to protect
			}
			switch op {
			case "ABSENT":
				t.Errorf("%s exists on the host but not inside (%s): the read-only layer cannot be checked", p, res)
			case "CHMOD":
				seen++
				if res != "EROFS" {
					t.Errorf("%s %s inside gave %s, want EROFS (a read-only mount)", strings.ToLower(op), p, res)
				}
			case "OPENW", "WRITE":
				seen++
				// EACCES: no caller's command owns a file of /proc (a root caller's runs
				// as a host id of gosbx's range); CHMOD above proves the read-only mount
				if res != "EROFS" && res != "EACCES" {
					t.Errorf("opening %s for writing inside gave %s, want EROFS", p, res)
				}
			}
		}
		if seen == 0 {
			t.Fatalf("no probe ran:\n%v", r)
		}
		if !strings.Contains(r.stdout, "HOSTNAME gosbx\n") {
			t.Errorf("the sandbox's hostname changed:\n%s", r.stdout)
		}
	})
}

// /sys inside holds the CPU topology and nothing else: a read-only tmpfs with
// /sys/devices/system/cpu (the online CPUs the host shows) read-only below it, so
// lscpu works; no firmware, kernel, class, bus, module or cgroup tree, and no write
// lands. With --net none a sysfs of the sandbox's own gives it; with --net host (the
// kernel refuses sysfs there) a read-only bind of the host's.
func TestSysCPUOnly(t *testing.T) {
	hostOnline, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skip("the host has no /sys/devices/system/cpu/online")
	}
	_, lscpuErr := os.Stat("/usr/bin/lscpu")
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, net := range []string{"none", "host"} {
			r := s.sh([]string{"--net", net}, `echo "LS $(ls -A /sys | tr '\n' ' ')"
echo "LSDEV $(ls -A /sys/devices | tr '\n' ' ')"
echo "ONLINE $(cat /sys/devices/system/cpu/online)"
for d in /sys/firmware /sys/kernel /sys/class /sys/bus /sys/block /sys/module /sys/fs /sys/dev /sys/power /sys/devices/virtual /sys/devices/platform; do test -e "$d" && echo "PRESENT $d"; done
if [ -x /usr/bin/lscpu ]; then /usr/bin/lscpu >/dev/null 2>&1 && echo LSCPU-OK; fi
touch /sys/new 2>/dev/null && echo WROTE-SYS
mkdir /sys/devices/system/cpu/new 2>/dev/null && echo WROTE-CPU
awk '$5 ~ "^/sys" { print "MOUNT", $5, $6 }' /proc/self/mountinfo
exit 0`)
			mustSucceed(t, r, "sys probe --net "+net)
			want := []string{"LS devices \n", "LSDEV system \n", "ONLINE " + strings.TrimSpace(string(hostOnline)) + "\n",
				"MOUNT /sys ro,", "MOUNT /sys/devices/system/cpu ro,"}
			if lscpuErr == nil {
				want = append(want, "LSCPU-OK")
			}
			for _, w := range want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("--net %s: want %q inside:\n%s", net, w, r.stdout)
				}
			}
			for _, bad := range []string{"PRESENT", "WROTE", "MOUNT /sys/fs", "MOUNT /sys/kernel"} {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("--net %s: %s inside:\n%s", net, bad, r.stdout)
				}
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Handed cases (../shared/cases) not covered elsewhere, in our own words.

// tmux works inside: a detached server runs its command (it needs a writable
// TMPDIR, a pty from the sandbox's own devpts and /dev/shm) and its output lands in
// the workspace.
func TestTmuxInside(t *testing.T) {
	if _, err := os.Stat("/usr/bin/tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `set -e
tmux -f /dev/null -S "$TMPDIR/tm" new-session -d -x 80 -y 24 "tty > '$1/tmux.out'; echo tmux-$2 >> '$1/tmux.out'; sleep 2"
i=0; while [ $i -lt 50 ] && ! grep -q tmux- "$1/tmux.out" 2>/dev/null; do sleep 0.1; i=$((i+1)); done
tmux -S "$TMPDIR/tm" kill-server 2>/dev/null || true`, s.ws, s.id)
		mustSucceed(t, r, "tmux")
		b, err := os.ReadFile(filepath.Join(s.ws, "tmux.out"))
		if err != nil || !strings.Contains(string(b), "tmux-"+s.id) {
			t.Fatalf("the tmux session's output did not land: %q %v\n%v", b, err, r)
		}
		if !strings.HasPrefix(string(b), "/dev/pts/") {
			t.Errorf("the tmux pane has no pty of the sandbox's devpts: %q", b)
		}
	})
}

// An agent's virtualenv: a PATH that starts with the workspace's .venv/bin is kept,
// so `python` is the venv's interpreter; a venv module writes into the workspace.
func TestVirtualenvPath(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		venv := filepath.Join(s.ws, ".venv")
		if out, err := s.hostAs(python, "-m", "venv", "--without-pip", venv); err != nil {
			t.Skipf("python3 venv unavailable: %v %s", err, out)
		}
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--", "sh", "-c", `echo "PATH=$PATH"; python -c 'import sys; print("PREFIX", sys.prefix)'; python -c 'open("venv-ran", "w").write("ok")'`)
		cmd.Env = s.env("PATH="+filepath.Join(venv, "bin")+":/usr/bin:/bin", "VIRTUAL_ENV="+venv)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "venv")
		if !strings.Contains(r.stdout, "PATH="+filepath.Join(venv, "bin")+":") {
			t.Errorf("the venv's bin is not first on PATH inside:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "PREFIX "+venv+"\n") {
			t.Errorf("python inside is not the venv's:\n%s", r.stdout)
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "venv-ran")); string(b) != "ok" {
			t.Errorf("the venv's python did not write in the workspace: %q", b)
		}
	})
}

// Limits asked for where no cgroup filesystem is mounted (an empty tmpfs over
// /sys/fs/cgroup, as in some containers): gosbx refuses (125, the command does not
// run) or really enforces them (a 512 MiB allocation under --memory 64M fails). It
// never runs the command silently unlimited.
func TestLimitsWithoutCgroupFS(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ran := filepath.Join(s.ws, "ran")
		script := fmt.Sprintf(`B=$1; shift
mount -t tmpfs gosbx-it-nocg /sys/fs/cgroup || exit 77
"$@" exec --workspace %s --memory 64M --pids 64 -- /usr/bin/touch %s </dev/null 2>"$B/e1"; echo "R1 $?"
"$@" exec --workspace %s --memory 64M --pids 64 -- %s -c 'b = b"x" * (512 << 20)' </dev/null >/dev/null 2>"$B/e2"; echo "R2 $?"
echo "E1 $(head -c 300 "$B/e1" | tr '\n' ' ')"`, s.ws, ran, s.ws, python)
		r := s.inPrivateMountNS(script)
		_, ranErr := os.Stat(ran)
		switch {
		case strings.Contains(r.stdout, "R1 125\n"):
			if ranErr == nil {
				t.Errorf("exit 125 but the command ran")
			}
			if strings.Contains(r.stdout, "E1 \n") {
				t.Errorf("exit 125 without a message")
			}
			if !strings.Contains(r.stdout, "R2 125\n") {
				t.Errorf("refused once, not the second time:\n%v", r)
			}
		case strings.Contains(r.stdout, "R1 0\n"):
			if strings.Contains(r.stdout, "R2 0\n") || strings.Contains(r.stdout, "R2 125\n") {
				t.Errorf("--memory 64M accepted without a cgroup filesystem, and 512 MiB fit:\n%v", r)
			}
		default:
			t.Errorf("want 125 (refused) or 0 (enforced)\n%v", r)
		}
	})
}

// stdout and stderr written at once, 8 MB each, both arrive complete.
func TestConcurrentStreams(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `head -c 8000000 /dev/zero & head -c 8000000 /dev/zero >&2; wait`)
		mustSucceed(t, r, "both streams")
		if len(r.stdout) != 8000000 || len(r.stderr) != 8000000 {
			t.Errorf("stdout %d bytes, stderr %d bytes; want 8000000 each", len(r.stdout), len(r.stderr))
		}
	})
}
