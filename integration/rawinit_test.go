package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The default build takes the raw init exactly where it is meant to, and a -tags
// gosbxgoinit build never, seen from the host while the command runs: for a caller
// other than root with the default policy the sandbox's init is one thread, named
// gosbx-init, whose command line is the launcher's (it shares the launcher's memory: no
// Go program was executed); for root too (its host id, trees, credentials, the set-ID
// listener served by a handler executed only on a set-ID call), also with a memory
// limit where the group is a v1 one (on a v2 host a root caller's host id cannot clone
// into the group: the Go init, executed as gosbx-init, several threads). The rest of the
// suite runs against both builds (make test: make integration-goinit), which proves
// each init's isolation; this test proves which one those runs took. A CPU quota
// (--cpus) always takes the Go init, also when it covers every CPU (nothing pinned):
// the raw init's set-ID handler would run outside the group's cpu controller (attack
// review 17).
func TestRawInitTaken(t *testing.T) {
	// both built here: the suite also runs with GOSBX_TEST_BINARY a gosbxgoinit build
	rawBin := taggedBinary(t, "")
	goBin := taggedBinary(t, "gosbxgoinit")
	forEachCaller(t, func(t *testing.T, c caller) {
		allCPUs := strconv.Itoa(runtime.NumCPU()) // a quota over every CPU: no pinning
		for _, tc := range []struct {
			bin   string
			extra []string
		}{{rawBin, nil}, {rawBin, []string{"--memory", "256M"}}, {goBin, nil}, {rawBin, []string{"--cpus", allCPUs}}} {
			extra := tc.extra
			s := newSandbox(t, c)
			ctx := s.limitCtx(runLimit)
			args := append(append([]string{}, extra...), "--", "/bin/sh", "-c", "echo up; read x; exit 0")
			cmd := s.command(ctx, args...)
			cmd.Path, cmd.Args = replaceBinary(cmd, tc.bin)
			stdin, err := cmd.StdinPipe()
			must(t, err)
			stdout, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			if line != "up\n" {
				stdin.Close()
				cmd.Wait()
				if len(extra) > 0 && c.uid != 0 {
					continue // no memory limit for this caller here: nothing to look at
				}
				t.Fatalf("%v: the command did not start: %q", extra, line)
			}
			init := initOfLauncher(t, cmd.Process.Pid)
			waitInitInPoll(t, init)
			tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", init))
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", init))
			raw := len(tasks) == 1 && !strings.HasPrefix(string(argv), "gosbx-init\x00")
			want := tc.bin == rawBin && (len(extra) == 0 || c.uid == 0 && hasV1() && extra[0] != "--cpus")
			if raw != want {
				t.Errorf("%s %v: the init has %d threads, command line %q: raw init %v, want %v", tc.bin, extra, len(tasks), argv, raw, want)
			}
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("%v: gosbx exec: %v", extra, err)
			}
		}
	})
}

// hasV1 reports whether the host has the v1 hierarchies gosbx makes its groups in.
func hasV1() bool {
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "tasks")); err != nil {
			return false
		}
	}
	return true
}

// A step of the raw init that fails says what the Go init's says: for every step of
// faultSteps both make fail (-tags gosbxfault, the Go one with gosbxgoinit too), a
// caller other than root (the raw init's) gets the same exit status and the same
// message from both, and the command does not run.
func TestRawFaultSameAsGo(t *testing.T) {
	goBin := faultBinary(t)
	rawBin := taggedBinary(t, "gosbxfault")
	s := newSandbox(t, nobodyCaller)
	for _, st := range faultSteps {
		var got [2]result
		for i, bin := range []string{goBin, rawBin} {
			marker := s.marker("fault")
			ctx := s.limitCtx(runLimit)
			cmd := s.rawCommand(ctx, "exec", "--workspace", s.ws, "--", "touch", marker)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=" + st)
			got[i] = s.runCmd(ctx, cmd)
			if _, err := os.Lstat(marker); err == nil && got[i].code != 0 {
				t.Errorf("fault at %q: the command ran (%v)", st, got[i])
				os.Remove(marker)
			}
			os.Remove(marker)
		}
		if got[0].code != got[1].code || got[0].stderr != got[1].stderr {
			t.Errorf("fault at %q: Go init %d %q, raw init %d %q", st, got[0].code, got[0].stderr, got[1].code, got[1].stderr)
		}
	}
}

// A library program (testdata/rawlib), run as a caller
// other than root, launches 3 sandboxes in turn and 8 at once, each with Stdout and
// Stderr both its own stdout. Without nsinit.AllowRawInit every one takes the Go init
// and the program stays dumpable; with it, the first takes the raw init (the program is
// not dumpable while it runs: PR_SET_DUMPABLE is the memory the raw init shares; and
// dumpable again once it is reaped) and the others the Go init. Every launch runs and prints (review11 F1: every raw launch after the
// first failed at "clone", the id maps of a not-dumpable memory's child not writable;
// F2: stdio on another of 0-2 was refused).
func TestRawInitLibraryLaunches(t *testing.T) {
	requireBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("root only (runs the program as uid 65534)")
	}
	s := newSandbox(t, nobodyCaller)
	bin := buildTestdata(t, s, "rawlib")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, allow := range []bool{false, true} {
		args := []string{fmt.Sprintf("--reuid=%d", nobodyID), fmt.Sprintf("--regid=%d", nobodyID), "--clear-groups", "--", bin}
		if allow {
			args = append(args, "-allow")
		}
		run := exec.CommandContext(ctx, "/usr/bin/setpriv", append(args, s.ws)...)
		run.Env = s.env()
		run.Dir = s.base
		var stderr strings.Builder
		run.Stderr = &stderr
		out, err := run.Output()
		if err != nil {
			t.Errorf("allow %v: %v\n%s%s", allow, err, out, stderr.String())
			continue
		}
		if strings.Contains(string(out), "swapped") || !strings.Contains(stderr.String(), "swapped") {
			t.Errorf("allow %v: the first command's stdout and stderr, swapped by the caller, came as stdout %q, stderr %q", allow, out, stderr.String())
		}
		lines := strings.Split(string(out), "\n")
		for n := 1; n <= 11; n++ {
			if !slices.Contains(lines, strconv.Itoa(n)) {
				t.Errorf("allow %v: launch %d printed nothing: %q", allow, n, out)
			}
		}
		// PR_SET_DUMPABLE is the memory's: the raw init's "set not dumpable" shows in
		// the program while the first sandbox runs, and is undone once it is reaped
		want := []string{"dumpable-during 1", "dumpable 1"}
		if allow {
			want[0] = "dumpable-during 0"
		}
		// a launch while the raw sandbox runs: refused, saying why (review12: the id
		// maps' EACCES with a user-namespace hint); the Go init's launch otherwise runs
		if concurrent := string(out); allow && !strings.Contains(concurrent, "concurrent: sandbox setup failed at clone: this process's raw init is running") ||
			!allow && !strings.Contains(concurrent, "concurrent: ok") {
			t.Errorf("allow %v: a launch while the first runs: %q", allow, out)
		}
		for _, w := range want {
			if !slices.Contains(strings.Split(string(out), "\n"), w) {
				t.Errorf("allow %v: %q, want a line %q (the raw init taken %v)", allow, out, w, allow)
			}
		}
	}
}

// A config whose raw plan outgrows the raw init (its registers: one a bind until the
// root exists) is set up by the Go init, not refused: 150 --ro binds run as a caller
// other than root (review11 F3: 125, "the raw init's plan
// ran out of registers"), and every bind is there.
func TestRawInitPlanFullFallsBack(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, nobodyCaller)
	dirs := filepath.Join(s.base, "many")
	must(t, os.Mkdir(dirs, 0o755))
	var args []string
	for i := range 150 {
		d := filepath.Join(dirs, fmt.Sprintf("d%03d", i))
		must(t, os.Mkdir(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "f"), []byte(strconv.Itoa(i)), 0o644))
		args = append(args, "--ro", d)
	}
	args = append(args, "--", "/bin/sh", "-c", "cat "+filepath.Join(dirs, "d000", "f")+" "+filepath.Join(dirs, "d149", "f"))
	cmd := s.command(s.limitCtx(runLimit), args...)
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "0149" {
		t.Errorf("150 binds: %v, output %q, want 0149", err, out)
	}
}
