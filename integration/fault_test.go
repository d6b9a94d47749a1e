package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// faultSteps are every setup step that can be made to fail (internal/fault): the
// launcher's, then the sandbox init's, then the process stage's (in the forked child),
// in order. ("umask" is a step only for a spec that names a umask, which no policy does.)
var faultSteps = []string{
	"config", "cgroup", "pipe", "clone", "open bind source", "cgroup place",
	"read config", "user counts", "hostname", "loopback", "egress", "pid namespace", "pid 1 of the commands", "mount", "set-ID procfs", "resolv.conf",
	"pivot_root", "set not dumpable", "session keyring", "limit capabilities", "set-ID thread", "signal dispositions",
	"setsid", "rlimits", "close fds", "chdir", "drop capabilities", "seccomp", "exec",
}

// Every setup step, made to fail on request in a -tags gosbxfault build: gosbx exits
// 125 naming the step, the command never runs, and nothing is left behind (no init
// process, no cgroup). Not parallel: it counts leftovers.
func TestFaultInjection(t *testing.T) {
	bin := faultBinary(t)
	for _, c := range callers {
		s := newSandbox(t, c)
		for _, st := range faultSteps {
			marker := s.marker("fault")
			ctx := s.limitCtx(runLimit)
			args := []string{"exec", "--workspace", s.ws}
			if c.uid == 0 {
				// a limit asked for: a cgroup, so its steps are reached (root's default
				// process limit is an rlimit, without one)
				args = append(args, "--pids", "64")
			}
			cmd := s.rawCommand(ctx, append(args, "--", "touch", marker)...)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=" + st)
			// its groups are made in a scope of its own: what is left there is its
			// (other launches on the host make and sweep theirs elsewhere)
			scope := newCgroupScope(t)
			scope.wrap(cmd)
			r := s.runCmd(ctx, cmd)
			if left := scope.leftovers(); len(left) > 0 {
				t.Errorf("%s, fault at %q: cgroups left behind by the failed launch: %q", c.name, st, left)
			}
			if c.uid != 0 && st == "cgroup place" {
				// nobody gets no cgroup here (the profile's default limit is best effort): nothing to place
				if r.code != 0 {
					t.Errorf("%s, %s: a step nobody never reaches failed: %v", c.name, st, r)
				}
				os.Remove(marker)
				continue
			}
			if r.code != 125 || !strings.Contains(r.stderr, st) {
				t.Errorf("%s, fault at %q: want 125 naming the step\n%v", c.name, st, r)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("%s, fault at %q: the command ran", c.name, st)
				os.Remove(marker)
			}
			if pids := faultInits(st); len(pids) > 0 {
				t.Errorf("%s, fault at %q: init processes left: %v", c.name, st, pids)
			}
		}
	}
}

// replaceBinary points a prepared command (gosbx, or setpriv … gosbx) at bin.
func replaceBinary(cmd *exec.Cmd, bin string) (string, []string) {
	args := append([]string{}, cmd.Args...)
	for i, a := range args {
		if a == gosbxBin {
			args[i] = bin
		}
	}
	path := cmd.Path
	if path == gosbxBin {
		path = bin
	}
	return path, args
}

// faultInits lists gosbx-init processes started for the fault step (their environment
// carries GOSBX_FAULT), after a short settle.
func faultInits(step string) []int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !strings.Contains(string(env), "GOSBX_FAULT="+step+"\x00") {
				continue
			}
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if strings.HasPrefix(string(cmdline), "gosbx-init") {
				var pid int
				for _, ch := range e.Name() {
					pid = pid*10 + int(ch-'0')
				}
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// faultBinary builds gosbx with -tags gosbxfault,gosbxgoinit into a directory any user
// can read: the fault points of the Go init, which every launch of that build takes (a
// caller other than root's would otherwise take the raw init, whose failures
// TestRawFaultSameAsGo holds to the Go init's, step by step).
func faultBinary(t *testing.T) string {
	return taggedBinary(t, "gosbxfault,gosbxgoinit")
}

// taggedBinary builds gosbx with -tags tag (one tag or a comma-separated list; "" for
// the default build) into a directory any user can read.
func taggedBinary(t *testing.T, tag string) string {
	t.Helper()
	requireBinary(t)
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-it-"+strings.ReplaceAll(tag, ",", "-")+"-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "gosbx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-tags", tag, "-o", bin, "./cmd/gosbx")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", tag, err, out)
	}
	must(t, os.Chmod(bin, 0o755))
	return bin
}

// An init that dies once the command may have run, before it reports the exec, is not
// a launch that never ran: gosbx does not say 125, and what the command planted that
// must not outlive the sandbox (a commit-mode .git/commondir) is removed, as after any
// run. (A command could crash the init that way before its signal dispositions were
// fixed; see TestInitSurvivesQueuedSignals.)
func TestFaultInitDiesAfterFork(t *testing.T) {
	bin := faultBinary(t)
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.newRepo(s.ws, "host-commit")
		gitDir := filepath.Join(s.ws, ".git")
		ctx := s.limitCtx(runLimit)
		cmd := s.command(ctx, "--policy", s.commitPolicy(), "--", shellPath, "-c", `echo ../evil > "$1/commondir"`, "_", gitDir)
		cmd.Path, cmd.Args = replaceBinary(cmd, bin)
		cmd.Env = s.env("GOSBX_FAULT=exec report")
		r := s.runCmd(ctx, cmd)
		if r.code == 125 || r.code == 0 {
			t.Errorf("the init died after the command ran: want a killed sandbox's status, not %d\n%v", r.code, r)
		}
		if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
			t.Errorf("%s/commondir exists on the host after the run\n%v", gitDir, r)
		}
	})
}
