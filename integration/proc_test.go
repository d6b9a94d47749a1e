package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const zeroCaps = "0000000000000000"

// Every capability set is empty and no_new_privs is set; the identity is
// the caller's.
func TestCapabilitiesDropped(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.sh(nil, `cat /proc/self/status; echo "ID $(id -u) $(id -g)"`)
		mustSucceed(t, r, "status")
		st := procStatus(r.stdout)
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if st[k] != zeroCaps {
				t.Errorf("%s = %q inside, want %s", k, st[k], zeroCaps)
			}
		}
		if st["NoNewPrivs"] != "1" {
			t.Errorf("NoNewPrivs = %q inside, want 1", st["NoNewPrivs"])
		}
		if want := "ID " + strconv.Itoa(c.uid) + " " + strconv.Itoa(c.gid); !strings.Contains(r.stdout, want) {
			t.Errorf("identity inside is not the caller's (%s):\n%s", want, r.stdout)
		}
	})
}

// A setuid-root binary in the workspace gives back neither euid 0 nor any
// capability.
func TestSetuidGivesNothing(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for src, dst := range map[string]string{"/usr/bin/id": "suid-id", python: "suid-py"} {
			b, err := os.ReadFile(src)
			must(t, err)
			p := filepath.Join(s.ws, dst)
			mustWriteExecutable(t, p, b, 0o755)
			must(t, os.Chown(p, 0, 0))
			must(t, os.Chmod(p, os.ModeSetuid|0o755))
			if fi, err := os.Stat(p); err != nil || fi.Mode()&os.ModeSetuid == 0 {
				t.Fatalf("%s is not setuid on the host: %v", p, err)
			}
		}
		r := s.sh(nil, `cd "$1"; echo "EUID $(./suid-id -u)"; ./suid-py -c 'import os; print("PYEUID", os.geteuid()); print(open("/proc/self/status").read())'`, s.ws)
		mustSucceed(t, r, "setuid probes")
		if want := "EUID " + strconv.Itoa(c.uid) + "\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("setuid-root id changed the euid (want %q):\n%s", want, r.stdout)
		}
		if want := "PYEUID " + strconv.Itoa(c.uid) + "\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("setuid-root python changed the euid (want %q):\n%s", want, r.stdout)
		}
		st := procStatus(r.stdout)
		for _, k := range []string{"CapPrm", "CapEff", "CapAmb"} {
			if st[k] != zeroCaps {
				t.Errorf("after a setuid-root exec %s = %q", k, st[k])
			}
		}
	})
}

// Only the sandbox's processes are visible: a host process with a unique
// argv is not in /proc inside, and /proc is not the host's.
func TestPidNamespace(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		uniq := filepath.Join(s.base, "gosbx-it-hostsleep-"+s.id)
		must(t, os.Symlink("/usr/bin/sleep", uniq))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		host := exec.CommandContext(ctx, uniq, "123")
		must(t, host.Start())
		defer host.Wait()
		defer cancel()
		hostPID := host.Process.Pid

		r := s.sh(nil, `for f in /proc/[0-9]*/cmdline; do printf '%s: ' "$f"; tr '\0' ' ' < "$f" 2>/dev/null; echo; done
ls /proc/"$1" >/dev/null 2>&1 && { printf 'HOSTPID: '; tr '\0' ' ' < /proc/"$1"/cmdline; echo; }
echo "SELF $$"; exit 0`, strconv.Itoa(hostPID))
		mustSucceed(t, r, "proc listing")
		if strings.Contains(r.stdout, "gosbx-it-hostsleep-"+s.id) {
			t.Errorf("a host process is visible inside:\n%s", r.stdout)
		}
		n := strings.Count(r.stdout, "/cmdline:")
		if n == 0 || n > 6 {
			t.Errorf("inside /proc lists %d processes, want a handful (sh, init, the listing):\n%s", n, r.stdout)
		}
		hostInit, _ := os.ReadFile("/proc/1/cmdline")
		if want := "/proc/1/cmdline: " + strings.ReplaceAll(string(hostInit), "\x00", " "); strings.Contains(r.stdout, want+"\n") {
			t.Errorf("pid 1 inside is the host's init:\n%s", r.stdout)
		}
	})
}

// pid 1 of the sandbox (gosbx's init) is not dumpable: its binary, memory
// and file descriptors cannot be opened.
func TestInitNotAccessible(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--", python, "-c", `
import os
paths = ["/proc/1/exe", "/proc/1/mem", "/proc/1/environ", "/proc/1/root/proc/1/exe"]
paths += ["/proc/1/fd/%d" % i for i in range(0, 12)]
try:
    paths += ["/proc/1/fd/" + f for f in os.listdir("/proc/1/fd")]
except OSError:
    pass
for p in paths:
    for mode in ("rb", "r+b"):
        try:
            f = open(p, mode); f.close()
            print("OPENED", p, mode)
        except OSError:
            pass
`)
		mustSucceed(t, r, "open probes")
		if strings.Contains(r.stdout, "OPENED") {
			t.Errorf("the sandbox init is accessible from the command:\n%s", r.stdout)
		}
	})
}

// The hostname inside is gosbx; the host's is untouched.
func TestHostname(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		before, _ := os.Hostname()
		r := s.sh(nil, `cat /proc/sys/kernel/hostname; (echo evil > /proc/sys/kernel/hostname) 2>/dev/null; exit 0`)
		mustSucceed(t, r, "hostname")
		if strings.TrimSpace(r.stdout) != "gosbx" {
			t.Errorf("hostname inside = %q, want gosbx", r.stdout)
		}
		if after, _ := os.Hostname(); after != before {
			t.Errorf("host hostname changed from %q to %q", before, after)
		}
	})
}

// Every namespace of the command differs from the host's.
func TestNamespacesNew(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		names := []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"}
		r := s.sh(nil, `for n in "$@"; do echo "$n $(readlink /proc/self/ns/$n)"; done`, names...)
		mustSucceed(t, r, "ns links")
		for _, n := range names {
			host, err := os.Readlink("/proc/self/ns/" + n)
			must(t, err)
			if !strings.Contains(r.stdout, n+" ") {
				t.Errorf("no %s namespace link inside:\n%s", n, r.stdout)
			}
			if strings.Contains(r.stdout, n+" "+host) {
				t.Errorf("the command shares the host %s namespace (%s)", n, host)
			}
		}
	})
}
