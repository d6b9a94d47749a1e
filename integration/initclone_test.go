package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The steps of the init's clone child (nsinit/initclone.go), before it executes the
// init: each made to fail in a -tags gosbxfault build stops the launch with 125
// naming the step, the command never runs, and no child is left. setgroups, setgid and
// setuid are a root caller's only (its command's ids on its host id).
func TestInitCloneSteps(t *testing.T) {
	bin := faultBinary(t)
	common := []string{"block signals", "keep capabilities", "wait for the id maps", "setsid",
		"reset signal handlers", "restore the signal mask", "ambient capabilities", "move descriptors",
		"execve /proc/self/exe"}
	for _, c := range callers {
		s := newSandbox(t, c)
		steps := common
		if c.uid == 0 {
			steps = append(steps, "setgroups", "setgid", "setuid")
		}
		for _, st := range steps {
			marker := s.marker("initclone")
			ctx := s.limitCtx(runLimit)
			cmd := s.rawCommand(ctx, "exec", "--workspace", s.ws, "--", "touch", marker)
			cmd.Path, cmd.Args = replaceBinary(cmd, bin)
			cmd.Env = s.env("GOSBX_FAULT=clone: " + st)
			r := s.runCmd(ctx, cmd)
			if r.code != 125 || !strings.Contains(r.stderr, "clone") || !strings.Contains(r.stderr, st+": ") {
				t.Errorf("%s, fault at the clone's %q: want 125 naming the step\n%v", c.name, st, r)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("%s, fault at the clone's %q: the command ran", c.name, st)
				os.Remove(marker)
			}
			if pids := faultProcs("clone: " + st); len(pids) > 0 {
				t.Errorf("%s, fault at the clone's %q: processes left: %v", c.name, st, pids)
			}
		}
	}
}

// faultProcs lists the processes whose environment asks for the fault step: a clone
// child that failed before its execve shares the launcher's environment.
func faultProcs(step string) []string {
	var pids []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids = nil
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err == nil && strings.Contains(string(env), "GOSBX_FAULT="+step+"\x00") {
				pids = append(pids, e.Name())
			}
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
	}
}

// The command starts with no signal blocked, and ignoring no signal its caller did not
// ignore, whatever the launcher's Go runtime had (the init's clone restores the launcher
// thread's mask, and the process stage the init's): a signal left blocked would follow
// every process of the sandbox. Ignored signals pass through exec as for any program
// (`make` starts its recipes with signals 32 and 33 ignored, `nohup` SIGHUP), so the
// caller's own set is the bound, not an empty one.
func TestInitCloneSignalMask(t *testing.T) {
	self, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	callerIgn := sigField(t, string(self), "SigIgn")
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--", "cat", "/proc/self/status")
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
		if blk := sigField(t, r.stdout, "SigBlk"); blk != 0 {
			t.Errorf("the command's SigBlk is %#x, want none blocked:\n%s", blk, r.stdout)
		}
		if ign := sigField(t, r.stdout, "SigIgn"); ign&^callerIgn != 0 {
			t.Errorf("the command ignores %#x, which its caller (SigIgn %#x) did not:\n%s", ign&^callerIgn, callerIgn, r.stdout)
		}
	})
}

// sigField reads a hexadecimal signal set (SigBlk, SigIgn, ...) from a proc(5) status text.
func sigField(t *testing.T, status, key string) uint64 {
	t.Helper()
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":\t"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in:\n%s", key, status)
	return 0
}
