package nsinit

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/seccomp"
)

// recorder is a recording double of both seams: initSys (the sandbox init) and rawSys
// (the process stage, whose plan it walks with runSteps instead of forking). It does
// nothing on the kernel; it records each call, and fails the call named by failAt.
type recorder struct {
	calls  []string
	spec   *config.Config
	failAt string
}

func (r *recorder) rec(format string, a ...any) error {
	c := fmt.Sprintf(format, a...)
	r.calls = append(r.calls, c)
	if r.failAt != "" && strings.HasPrefix(c, r.failAt) {
		return errors.New("failed by the test")
	}
	return nil
}

func (r *recorder) readConfig(pooled bool) (*config.Config, []int, error) {
	return r.spec, []int{7, 8}, r.rec("readConfig")
}
func (r *recorder) sethostname(name string) error { return r.rec("sethostname %s", name) }
func (r *recorder) setUserCounts(root *mounts.Root, counts []config.UserCount) error {
	return r.rec("setUserCounts %v", counts)
}
func (r *recorder) loopbackUp() error { return r.rec("loopbackUp") }
func (r *recorder) listenEgress(capture []uint16, keep bool) error {
	if len(capture) > 0 {
		return r.rec("listenEgress %v keep=%v", capture, keep)
	}
	return r.rec("listenEgress keep=%v", keep)
}
func (r *recorder) serveDials(ports []uint16) { r.rec("serveDials %v", ports) }
func (r *recorder) listenHostPorts(ports []uint16, keep bool) error {
	return r.rec("listenHostPorts %v keep=%v", ports, keep)
}
func (r *recorder) resolvConf(*mounts.Root) error       { return r.rec("resolvConf") }
func (r *recorder) unsharePID() error                   { return r.rec("unshare CLONE_NEWPID") }
func (r *recorder) setIDProc() error                    { return r.rec("setIDProc") }
func (r *recorder) startSetID(int) error                { return r.rec("startSetID") }
func (r *recorder) holderFiles() (int, int, int, error) { return 5, 6, 4, r.rec("holderFiles") }
func (r *recorder) startHolder(p *procPlan) (int, error) {
	if err := r.rec("startHolder"); err != nil {
		return 0, err
	}
	p.holder = true
	if i, errno := runSteps(p, r); i >= 0 {
		return 0, fmt.Errorf("%s: %s: %w", p.steps[p.ops[i].step], p.ops[i].what, errno)
	}
	return 41, nil
}
func (r *recorder) awaitHolder(p *procPlan, pid, send, recv, exe int) (int, error) {
	return 9, r.rec("awaitHolder %d %d %d %d", pid, send, recv, exe)
}
func (r *recorder) buildRoot(spec *config.Config, sources []int, trees bool, procFS int) (*mounts.Root, error) {
	return nil, r.rec("buildRoot sources=%v trees=%v procFS=%d", sources, trees, procFS)
}
func (r *recorder) closeFds(fds []int)                { r.rec("closeFds %v", fds) }
func (r *recorder) pivotRoot(root *mounts.Root) error { return r.rec("pivotRoot") }
func (r *recorder) setNotDumpable() error             { return r.rec("setNotDumpable") }
func (r *recorder) joinSessionKeyring() error         { return r.rec("joinSessionKeyring") }
func (r *recorder) limitCaps() error                  { return r.rec("limitCaps") }
func (r *recorder) unshareCgroup() error              { return r.rec("unshare CLONE_NEWCGROUP") }
func (r *recorder) send(m message)                    { r.rec("send %s", m.Type) }
func (r *recorder) readProcess() (*specs.Process, error) {
	return r.spec.Process, r.rec("readProcess")
}
func (r *recorder) openDir(root *mounts.Root, dir string) (*os.File, error) {
	if err := r.rec("openDir %s", dir); err != nil {
		return nil, err
	}
	return os.Open(os.DevNull)
}
func (r *recorder) lookPath(dir *os.File, name string, env []string) (string, error) {
	return "/usr/bin/" + name, r.rec("lookPath %s", name)
}
func (r *recorder) awaitGoAhead()         { r.rec("awaitGoAhead") }
func (r *recorder) defaultSignals() error { return r.rec("defaultSignals") }
func (r *recorder) claimTerminal()        { r.rec("claimTerminal") }
func (r *recorder) restoreStderr()        { r.rec("restoreStderr") }
func (r *recorder) dropAllCaps()          { r.rec("dropAllCaps") }
func (r *recorder) startCommand(p *procPlan) (int, int, error) {
	return 0, -1, r.rec("startCommand")
}
func (r *recorder) awaitCommand(p *procPlan, report int, kill func()) error {
	return r.rec("awaitCommand")
}
func (r *recorder) fork(p *procPlan) (int, error) {
	if err := r.rec("fork"); err != nil {
		return 0, err
	}
	if p.dir != nil {
		defer p.dir.Close()
	}
	copy(p.cwd[:], cwdAnswer) // what the kernel's getcwd would write
	if i, errno := runSteps(p, r); i >= 0 {
		return 0, fmt.Errorf("%s: %s: %w", p.steps[p.ops[i].step], p.ops[i].what, errno)
	}
	return 42, nil
}

// do is rawSys: one call of a plan, recorded as "  <step>: <syscall> <what>".
func (r *recorder) do(op *procOp) (uintptr, unix.Errno) {
	r.rec("  %s", describeOp(*op))
	if op.kind == opAbsCwd {
		return 1, 0
	}
	return 0, 0
}

func stageSpec() *config.Config {
	umask := uint32(0o22)
	return &config.Config{
		Hostname:   "gosbx",
		UserCounts: []config.UserCount{{Name: "max_inotify_instances", Max: 64}},
		Process: &specs.Process{
			Args: []string{"sh", "-c", "true"}, Env: []string{"PATH=/usr/bin"}, Cwd: "/work",
			User:    specs.User{Umask: &umask},
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 1024}, {Type: "RLIMIT_CORE"}},
		},
		Mounts: []specs.Mount{{Destination: "/proc", Type: "proc", Options: []string{"nosuid"}}},
		Linux: &config.Linux{Namespaces: []specs.LinuxNamespace{
			{Type: specs.UserNamespace}, {Type: specs.MountNamespace}, {Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace},
			{Type: specs.CgroupNamespace},
		}, Filter: seccomp.Program{{Code: 6, K: unix.SECCOMP_RET_ALLOW}}},
	}
}

// The sandbox init's steps and the process stage's calls, in their exact order, with
// the kernel replaced by a recording double: no privilege needed.
func TestStageOrder(t *testing.T) {
	capDrops := []string{}
	for c := 0; c <= caps.LastCap(); c++ {
		capDrops = append(capDrops, fmt.Sprintf("  drop capability %d from the bounding set", c))
	}
	build := []string{
		"readConfig",
		"unshare CLONE_NEWPID",
		"holderFiles",
		"startHolder",
		"  fsopen proc",
		"  send the procfs context",
		"  set securebits",
		"  capset to empty",
		"  set no_new_privs",
		"  block every signal",
		"  close_range 0-max CLOSE_RANGE_CLOEXEC",
		"  chdir /",
		"  execveat the holder (a memfd: vm.memfd_noexec=2 forbids it)",
		"sethostname gosbx",
		"loopbackUp",
		"awaitHolder 41 5 6 4",
		"buildRoot sources=[7 8] trees=false procFS=9",
		"closeFds [7 8]",
		"setUserCounts [{max_inotify_instances 64}]",
		"pivotRoot",
		"setNotDumpable",
		"joinSessionKeyring",
		"awaitGoAhead",
		"unshare CLONE_NEWCGROUP",
		"limitCaps",
	}
	start := []string{
		"openDir /work",
		"lookPath sh",
		"awaitGoAhead",
		"defaultSignals",
		"restoreStderr",
		"claimTerminal",
		"send forking",
		"fork",
		"  rt_sigaction SIGINT SIG_DFL",
		"  rt_sigaction SIGTERM SIG_DFL",
		"  rt_sigaction SIGHUP SIG_DFL",
		"  rt_sigaction SIGQUIT SIG_DFL",
		"  rt_sigaction SIGUSR1 SIG_DFL",
		"  rt_sigaction SIGUSR2 SIG_DFL",
		"  rt_sigaction SIGWINCH SIG_DFL",
		"  rt_sigaction SIGCONT SIG_DFL",
		"  rt_sigaction SIGALRM SIG_DFL",
		"  rt_sigaction SIGTSTP SIG_DFL",
		"  rt_sigaction SIGTTIN SIG_DFL",
		"  rt_sigaction SIGTTOU SIG_DFL",
		"  rt_sigaction SIGABRT SIG_DFL",
	}
	// then the runtime's handlers (childsig.go), each reset before the mask is set
	for _, sig := range childResetSignals()[len(redirected):] {
		start = append(start, "  rt_sigaction "+signalName(sig)+" SIG_DFL")
	}
	start = append(start,
		"  unblock every signal",
		"  setsid",
		"  setrlimit RLIMIT_NOFILE=1024:1024",
		"  setrlimit RLIMIT_CORE=0:0",
		"  close_range 3-max CLOSE_RANGE_CLOEXEC",
		"  fchdir /work",
		"  getcwd: working directory /work is outside the new root",
		"  umask 022",
	)
	start = append(start, capDrops...)
	start = append(start,
		"  set securebits",
		"  clear the ambient set",
		"  capset to empty",
		"  set no_new_privs",
		"  seccomp(SECCOMP_SET_MODE_FILTER)",
		"  execve /usr/bin/sh",
		// the exec report before the drop of every thread's capabilities, a
		// stop-the-world: the launcher reads the report and acknowledges it while pid
		// 1's threads drop theirs (docs/decisions.md, "Speed, third attempt")
		"send exec",
		"dropAllCaps",
	)

	t.Run("exec", func(t *testing.T) {
		r := &recorder{spec: stageSpec()}
		s := &sandboxInit{sys: r}
		path, pid, err := runWithCwd(s, "/work")
		if err != nil || path != "/usr/bin/sh" || pid != 42 {
			t.Fatalf("run = %q, %d, %v", path, pid, err)
		}
		want := append(append([]string{}, build...), start...)
		if !reflect.DeepEqual(r.calls, want) {
			t.Errorf("calls:\n%s", diffCalls(want, r.calls))
		}
		if s.holder != 41 {
			t.Errorf("the commands' pid 1 is %d, want the double's 41", s.holder)
		}
	})

	t.Run("pooled", func(t *testing.T) {
		r := &recorder{spec: stageSpec()}
		s := &sandboxInit{sys: r, pooled: true, trees: true}
		if _, _, err := runWithCwd(s, "/work"); err != nil {
			t.Fatal(err)
		}
		want := append([]string{}, build...)
		for i, c := range want {
			if strings.HasPrefix(c, "buildRoot") {
				want[i] = strings.Replace(c, "trees=false", "trees=true", 1)
			}
		}
		// trees are consumed by the mount: no closeFds
		for i, c := range want {
			if strings.HasPrefix(c, "closeFds") {
				want = append(want[:i], want[i+1:]...)
				break
			}
		}
		want = append(want, "restoreStderr", "send ready", "readProcess")
		want = append(want, start...)
		if !reflect.DeepEqual(r.calls, want) {
			t.Errorf("calls:\n%s", diffCalls(want, r.calls))
		}
	})

	// With egress: the listening sockets made right after lo is up (pid 1 still holds
	// CAP_NET_BIND_SERVICE), resolv.conf covered once the root is built, before
	// pivot_root seals it; a failure of either stops the launch.
	t.Run("egress", func(t *testing.T) {
		spec := stageSpec()
		spec.Egress = &config.Egress{}
		r := &recorder{spec: spec}
		s := &sandboxInit{sys: r}
		if _, _, err := runWithCwd(s, "/work"); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, c := range append(append([]string{}, build...), start...) {
			want = append(want, c)
			switch {
			case c == "loopbackUp":
				want = append(want, "listenEgress keep=false")
			case strings.HasPrefix(c, "closeFds"):
				want = append(want, "resolvConf")
			}
		}
		if !reflect.DeepEqual(r.calls, want) {
			t.Errorf("calls:\n%s", diffCalls(want, r.calls))
		}
		// with port forwards: fd 6 kept, the dials served from the same step
		spec2 := stageSpec()
		spec2.Egress = &config.Egress{}
		spec2.Publish = []config.Publish{{HostIP: "127.0.0.1", HostPort: 8000, Port: 8000}, {HostIP: "127.0.0.1", HostPort: 9000, Port: 3000}}
		r2 := &recorder{spec: spec2}
		if _, _, err := runWithCwd(&sandboxInit{sys: r2}, "/work"); err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(r2.calls, "loopbackUp"); i < 0 || !slices.Equal(r2.calls[i+1:i+3], []string{"listenEgress keep=true", "serveDials [8000 3000]"}) {
			t.Errorf("calls with port forwards: %v", r2.calls)
		}
		// with host ports: sent after the egress's sockets, fd 7 closed after them
		spec3 := stageSpec()
		spec3.Egress, spec3.HostPorts = &config.Egress{}, []uint16{5432}
		r3 := &recorder{spec: spec3}
		if _, _, err := runWithCwd(&sandboxInit{sys: r3}, "/work"); err != nil {
			t.Fatal(err)
		}
		if i := slices.Index(r3.calls, "loopbackUp"); i < 0 || !slices.Equal(r3.calls[i+1:i+3], []string{"listenEgress keep=true", "listenHostPorts [5432] keep=false"}) {
			t.Errorf("calls with host ports: %v", r3.calls)
		}
		for _, tc := range []struct{ failAt, step string }{{"listenEgress", "egress"}, {"resolvConf", "resolv.conf"}} {
			r := &recorder{spec: spec, failAt: tc.failAt}
			_, _, err := runWithCwd(&sandboxInit{sys: r}, "/work")
			var se *stepError
			if !errors.As(err, &se) || se.step != tc.step || strings.HasPrefix(r.calls[len(r.calls)-1], "pivotRoot") {
				t.Errorf("failing %s: err %v, calls %v", tc.failAt, err, r.calls)
			}
		}
	})

	// A step that fails stops everything after it, and names itself.
	t.Run("fail closed", func(t *testing.T) {
		for _, tc := range []struct{ failAt, step string }{
			{"setUserCounts", "user counts"}, {"sethostname", "hostname"}, {"unshare", "pid namespace"}, {"buildRoot", "mount"},
			{"pivotRoot", "pivot_root"}, {"limitCaps", "limit capabilities"}, {"unshare CLONE_NEWCGROUP", "cgroup namespace"}, {"startHolder", "pid namespace"}, {"awaitHolder", "mount"},
			{"openDir", "chdir"}, {"defaultSignals", "signal dispositions"},
		} {
			r := &recorder{spec: stageSpec(), failAt: tc.failAt}
			s := &sandboxInit{sys: r}
			_, _, err := runWithCwd(s, "/work")
			var se *stepError
			if !errors.As(err, &se) || se.step != tc.step {
				t.Errorf("failing %s: err %v, want a step error at %q", tc.failAt, err, tc.step)
			}
			for i := len(r.calls) - 1; i >= 0 && !strings.HasPrefix(r.calls[i], tc.failAt); i-- {
				if !strings.HasPrefix(r.calls[i], "closeFds") { // releasing, not a step
					t.Errorf("failing %s: calls went on to %q", tc.failAt, r.calls[i])
				}
			}
			for _, c := range r.calls {
				if c == "send forking" {
					t.Errorf("failing %s: the command was forked", tc.failAt)
				}
			}
		}
	})
}

// runWithCwd runs s with the double's getcwd answering dir.
// runWithCwd runs the init's steps as Init does: s.run, then the exec report.
func runWithCwd(s *sandboxInit, dir string) (string, int, error) {
	cwdAnswer = dir
	path, pid, err := s.run()
	if err == nil {
		s.reportExec(path, pid)
	}
	return path, pid, err
}

var cwdAnswer string

func diffCalls(want, got []string) string {
	var b strings.Builder
	for i := 0; i < len(want) || i < len(got); i++ {
		w, g := "", ""
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		mark := "  "
		if w != g {
			mark = "!="
		}
		fmt.Fprintf(&b, "%3d %s want %-50q got %q\n", i, mark, w, g)
	}
	return b.String()
}

// The plan's getcwd check: a working directory the kernel sees outside the root
// ("(unreachable)/…", CVE-2024-21626) stops the command at step chdir.
func TestPlanCwdOutsideRoot(t *testing.T) {
	dir, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planProcess(stageSpec().Process, nil, dir, "/usr/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	copy(p.cwd[:], "(unreachable)/work")
	i, errno := runSteps(p, &recorder{})
	if i < 0 || p.steps[p.ops[i].step] != "chdir" || errno != unix.ENOENT {
		t.Fatalf("runSteps = %d, %v; want chdir ENOENT", i, errno)
	}
	copy(p.cwd[:], "/work")
	if i, errno := runSteps(p, &recorder{}); i >= 0 {
		t.Fatalf("runSteps with cwd /work stopped at %s: %v", p.ops[i].what, errno)
	}
}
