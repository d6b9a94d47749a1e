package integration

// Issue 19 item 4, the rest: the sandbox's own cgroup under /sys/fs/cgroup, read-only,
// and --cpus as what programs count (nproc, Go's GOMAXPROCS).

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cgroupProbe prints what a program sizing itself reads of its cgroup, and tries to
// change it.
const cgroupProbe = `
echo "LS $(ls -A /sys/fs/cgroup 2>&1 | tr '\n' ' ')"
for f in memory/memory.limit_in_bytes cpu/cpu.cfs_quota_us cpu/cpu.cfs_period_us pids/pids.max; do
  test -e /sys/fs/cgroup/$f && echo "FILE $f $(cat /sys/fs/cgroup/$f)"
done
echo "SUBDIRS $(find /sys/fs/cgroup -mindepth 2 -type d 2>/dev/null | wc -l)"
echo "LSMEM $(ls -A /sys/fs/cgroup/memory 2>/dev/null | grep -v '^cgroup\.\|^memory\.\|^notify_on_release\|^tasks' | tr '\n' ' ')"
sed 's/^/CG /' /proc/self/cgroup
awk '$9 ~ "^cgroup" { print "MNT", $4, $5, substr($6, 1, 3) }' /proc/self/mountinfo
(echo 1 > /sys/fs/cgroup/pids/pids.max) 2>/dev/null && echo WROTE-PIDS
mkdir /sys/fs/cgroup/memory/child 2>/dev/null && echo MADE-CHILD
mkdir /sys/fs/cgroup/memory/child 2>&1 | grep -q 'Read-only' && echo EROFS
for d in /sys/firmware /sys/kernel /sys/class /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do test -e "$d" && echo "PRESENT $d"; done
exit 0`

// A root caller's sandbox with --memory 64M --cpus 0.5 --pids 100 on this hybrid host
// sees its own v1 group, read-only, at /sys/fs/cgroup/<controller>: the limits as
// written, nothing of the host's other groups (another sandbox runs meanwhile), its
// cgroup namespace rooted there (/proc/self/cgroup and mountinfo both say "/"), and a
// write or a child group fails. uid 65534, which has no cgroup here, sees none: its
// process limit is RLIMIT_NPROC, and the status says so and that use is not counted.
func TestSysOwnCgroup(t *testing.T) {
	requireV1(t)
	t.Run("root", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t, rootCaller)
		other := startBackgroundSandbox(t, s, "--memory", "64M", "--", "sleep", "30")
		r := s.runStatus("--memory", "64M", "--cpus", "0.5", "--pids", "100", "--", "sh", "-c", cgroupProbe)
		mustSucceed(t, r.result, "cgroup probe")
		out := r.stdout
		for _, w := range []string{
			"LS cpu cpuacct memory pids \n",
			"FILE memory/memory.limit_in_bytes 67108864\n",
			"FILE cpu/cpu.cfs_quota_us 50000\n",
			"FILE cpu/cpu.cfs_period_us 100000\n",
			"FILE pids/pids.max 100\n",
			"SUBDIRS 0\n", "LSMEM \n",
			"CG 4:memory:/\n", "CG 8:pids:/\n", "CG 1:cpu:/\n", "CG 2:cpuacct:/\n", "CG 0::/\n",
			"MNT / /sys/fs/cgroup/memory ro,", "MNT / /sys/fs/cgroup/pids ro,", "MNT / /sys/fs/cgroup/cpu ro,",
			"EROFS",
		} {
			if !strings.Contains(out, w) {
				t.Errorf("want %q inside:\n%s", w, out)
			}
		}
		for _, bad := range []string{"WROTE", "MADE-CHILD", "PRESENT", "gosbx-", other} {
			if strings.Contains(out, bad) {
				t.Errorf("%q inside:\n%s", bad, out)
			}
		}
		// every cgroup line is rooted at the group: no host path shows
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "CG ") && !strings.HasSuffix(l, ":/") {
				t.Errorf("a cgroup path outside the namespace's root: %q", l)
			}
		}
		ev := exitEvent(t, r.events, r.raw)
		wantKey(t, ev, "limits", "cgroup-v1")
		noGroupsLeft(t, r.id, "after the probe")
	})
	t.Run("nobody", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t, nobodyCaller)
		r := s.runStatus("--pids", "100", "--", "sh", "-c", cgroupProbe)
		mustSucceed(t, r.result, "cgroup probe as nobody")
		if !strings.Contains(r.stdout, "LS ls: cannot access") || strings.Contains(r.stdout, "FILE ") {
			t.Errorf("uid 65534 has no cgroup here; want no /sys/fs/cgroup inside:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "PRESENT") || strings.Contains(r.stdout, "MNT ") {
			t.Errorf("host trees inside:\n%s", r.stdout)
		}
		ev := exitEvent(t, r.events, r.raw)
		wantKey(t, ev, "limits", "rlimit")
		if note, _ := ev["usage-note"].(string); !strings.Contains(note, "RLIMIT_NPROC") {
			t.Errorf("usage-note %q; want it to say use is not counted under RLIMIT_NPROC", note)
		}
		if _, ok := ev["pids-peak"]; ok {
			t.Errorf("a pids-peak without a cgroup: %v", ev)
		}
	})
}

// startBackgroundSandbox starts another sandbox of s's caller running args, waits until
// it runs, and returns its sandbox id; it is killed at the end of the test.
func startBackgroundSandbox(t *testing.T, s *sandbox, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw, err := os.Pipe()
	must(t, err)
	cmd := s.command(ctx, append([]string{"--status-fd", "3"}, args...)...)
	cmd.ExtraFiles = []*os.File{pw}
	// ended by SIGTERM, which gosbx forwards: its group is removed as it ends, not left
	// for the next launch to sweep (a SIGKILLed launcher's)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	must(t, cmd.Start())
	pw.Close()
	t.Cleanup(func() { cancel(); cmd.Wait(); pr.Close() })
	id := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if v, ok := m["sandbox-id"].(string); ok {
			id = v
		}
		if _, ok := m["exec"]; ok {
			break
		}
	}
	if id == "" {
		t.Fatalf("the background sandbox did not start")
	}
	return id
}

// gomaxprocsSrc prints the Go runtime's GOMAXPROCS.
const gomaxprocsSrc = `package main

import (
	"fmt"
	"runtime"
)

func main() { fmt.Println("GOMAXPROCS", runtime.GOMAXPROCS(0)) }
`

// --cpus N places the sandbox on ceil(N) of the caller's CPUs, so that nproc and Go's
// GOMAXPROCS (a static binary built here, run inside) count N: --cpus 1 gives 1, 1.5
// gives 2, none gives the caller's count. The status line names the CPUs. uid 65534
// gets the placement too, with --limits best-effort (no cgroup quota here).
func TestCPUsAffinity(t *testing.T) {
	requireV1(t)
	host := runtime.NumCPU()
	if host < 2 {
		t.Skip("one CPU: --cpus 1 narrows nothing")
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(gomaxprocsSrc), 0o644))
	bin := filepath.Join(dir, "gmp")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "main.go")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	prog, err := os.ReadFile(bin)
	must(t, err)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.writeWS("gmp", string(prog), 0o755)
		extra := []string{}
		if c.uid != 0 {
			extra = []string{"--limits", "best-effort"}
		}
		for _, tc := range []struct {
			cpus string
			want int
		}{{"1", 1}, {"0.5", 1}, {"1.5", min(2, host)}, {"", host}} {
			args := append([]string{}, extra...)
			if tc.cpus != "" {
				args = append(args, "--cpus", tc.cpus)
			}
			args = append(args, "--", "sh", "-c", `echo "NPROC $(nproc)"; ./gmp`)
			r := s.runStatus(args...)
			mustSucceed(t, r.result, "--cpus "+tc.cpus)
			for _, w := range []string{"NPROC " + strconv.Itoa(tc.want) + "\n", "GOMAXPROCS " + strconv.Itoa(tc.want) + "\n"} {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("--cpus %q: want %q inside:\n%s", tc.cpus, w, r.stdout)
				}
			}
			ev := exitEvent(t, r.events, r.raw)
			cpus, _ := ev["cpus"].(string)
			if tc.want < host {
				if n := len(strings.Split(cpus, ",")); cpus == "" || n != tc.want {
					t.Errorf("--cpus %q: status cpus %q; want %d CPUs named", tc.cpus, cpus, tc.want)
				}
			} else if cpus != "" {
				t.Errorf("--cpus %q: status cpus %q; want none (the whole mask)", tc.cpus, cpus)
			}
		}
	})
}
