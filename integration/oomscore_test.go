package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The commands are the OOM killer's first choice, before the sandbox's init (review13
// F2; docs/decisions.md, "The commands are the OOM killer's first choice").

// Every command starts with oom_score_adj 1000 and may lower it only to the value it
// inherited (0 here), never to an unkillable one; the commands' pid 1 (the holder)
// keeps 0. Root (the Go init) and nobody (the raw init).
func TestMemoryOOMScore(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.run("--", shellPath, "-c", `cat /proc/self/oom_score_adj /proc/1/oom_score_adj
			echo 0 > /proc/self/oom_score_adj && cat /proc/self/oom_score_adj
			(echo -1 > /proc/self/oom_score_adj) 2>/dev/null && echo LOWERED; exit 0`)
		mustSucceed(t, r, "oom_score_adj inside")
		if got := strings.Fields(r.stdout); len(got) != 3 || got[0] != "1000" || got[1] != "0" || got[2] != "0" {
			t.Errorf("want the command at 1000, the holder at 0, the command back to 0 and no lower\n%v", r)
		}
	})
}

// A session with --memory 64M: a tmpfs write (/tmp, then /dev/shm) past the limit gets
// the writer killed (137, the memory-limit message), not the session's init: the session
// and a background sleep of an earlier request live on, and the next request works.
// Before, the init (the largest RSS of the group: tmpfs pages belong to no process)
// was killed first and the session ended. cgroup v1 here; v2 chooses the same way
// (oom_badness within the group; gosbx sets no memory.oom.group).
func TestMemorySessionTmpfsWriter(t *testing.T) {
	requireV1(t)
	t.Parallel()
	e := newSessionEnv(t, rootCaller)
	e.start("m", "--memory", "64M")
	link := e.sleepLink("oom")
	mustSucceed(t, e.gosbx("exec", "--session", "m", "--", shellPath, "-c", `"$0" 1000 </dev/null >/dev/null 2>&1 &`, link), "a background sleep")
	p := waitHostPIDs(link, 10*time.Second, func(n int) bool { return n == 1 })
	if len(p) != 1 {
		t.Fatalf("the background sleep on the host: %v", p)
	}
	for _, file := range []string{"/tmp/fill", "/dev/shm/fill"} {
		// dd's 2 MiB buffer: an RSS below the init's (about 8 MiB) and above the sleep's;
		// among the commands (all at 1000) the largest goes first
		r := e.gosbx("exec", "--session", "m", "--", "dd", "if=/dev/zero", "of="+file, "bs=2M", "count=400", "status=none")
		if r.code != 137 || !strings.Contains(r.stderr, "memory limit") {
			t.Errorf("%s: want the writer killed by the memory limit (137)\n%v", file, r)
		}
		if left := hostPIDs(link); len(left) != 1 || left[0] != p[0] {
			t.Errorf("%s: the session's background sleep %d is gone (now %v)", file, p[0], left)
		}
		r = e.gosbx("exec", "--session", "m", "--", shellPath, "-c", `rm -f "$0" && echo next-request-ok`, file)
		if r.code != 0 || !strings.Contains(r.stdout, "next-request-ok") {
			t.Fatalf("%s: the next request failed: the session did not survive\n%v", file, r)
		}
	}
	if in := e.info("m"); in.State != "running" {
		t.Errorf("session state %q after the OOM kills, want running", in.State)
	}
}

// One-shot: the same fill under --memory 64M kills dd, and the command's shell, which
// the init outlives, reports it and exits 0.
func TestMemoryOneShotTmpfsWriter(t *testing.T) {
	requireV1(t)
	t.Parallel()
	s := newSandbox(t, rootCaller)
	r := s.run("--memory", "64M", "--", shellPath, "-c", `dd if=/dev/zero of=/tmp/fill bs=2M count=400 status=none; echo "dd:$?"`)
	if r.code != 0 || !strings.Contains(r.stdout, "dd:137") {
		t.Errorf("want dd killed (dd:137) and the shell's exit 0\n%v", r)
	}
}

// The launcher's own oom_score_adj stays what it was throughout a launch, while the
// command gets 1000 (attack review 15 F2): the raw init shares the launcher's memory,
// and a write of its own oom_score_adj was the launcher's too (__set_oom_adj copies it
// to every process of the memory). strace delays each clone (the window between the
// raise and the command's clone, 0.2 s) while a loop samples the launcher's value.
func TestMemoryOOMScoreLauncherUntouched(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace to widen the window")
	}
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		ctx := s.limitCtx(runLimit)
		g := s.rawCommand(ctx, "exec", "--", shellPath, "-c", `echo "CMD $(cat /proc/self/oom_score_adj)"`).Args
		script := `S=$1; shift
"$S" -o /dev/null -f -e trace=clone,clone3 -e inject=clone,clone3:delay_enter=200000 "$@" </dev/null &
T=$!; seen=""
while kill -0 $T 2>/dev/null; do
  for c in $(cat /proc/$T/task/*/children 2>/dev/null); do
    v=$(cat /proc/$c/oom_score_adj 2>/dev/null) && case " $seen " in *" $v "*) ;; *) seen="$seen $v";; esac
  done
done
wait $T; echo "RC $?"; echo "LAUNCHER$seen"`
		cmd := exec.CommandContext(ctx, shellPath, append([]string{"-c", script, "_", strace}, g...)...)
		cmd.Env = s.env()
		cmd.Dir = s.base
		cmd.WaitDelay = 5 * time.Second
		r := s.runCmd(ctx, cmd)
		if !strings.Contains(r.stdout, "RC 0\n") || !strings.Contains(r.stdout, "CMD 1000\n") {
			t.Fatalf("want the command at 1000\n%v", r)
		}
		own, err := os.ReadFile("/proc/self/oom_score_adj")
		must(t, err)
		want := "LAUNCHER " + strings.TrimSpace(string(own)) + "\n"
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the launcher's oom_score_adj changed during the launch (want only %q)\n%v", want, r)
		}
	})
}
