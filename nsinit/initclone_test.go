package nsinit

import (
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeKernel records the init child's calls and keeps a descriptor table (fd → the
// open file it names, and close-on-exec) so that the moves can be checked.
type fakeKernel struct {
	calls    []uintptr // system call numbers, in order
	fds      map[int]fakeFd
	eof      bool      // read(2) returns end of file
	handler  uintptr   // what rt_sigaction reports as the old handler
	handled  []uintptr // set to SIG_DFL
	restored []uintptr // set back to SIG_IGN
	caps     []uintptr // capabilities raised into the ambient set
	capData  *[2]unix.CapUserData
	old      *kernelSigaction
}

type fakeFd struct {
	file    int
	cloexec bool
}

func (k *fakeKernel) call(op *initOp) (uintptr, unix.Errno) {
	k.calls = append(k.calls, op.nr)
	a := op.a
	switch op.nr {
	case unix.SYS_READ:
		if k.eof {
			return 0, 0
		}
		return 1, 0
	case unix.SYS_RT_SIGACTION:
		if a[2] != 0 {
			k.old.handler = k.handler // a[2] is &initPlan.old
			k.handled = append(k.handled, a[0])
		} else {
			k.restored = append(k.restored, a[0])
		}
	case unix.SYS_CLOSE:
		if _, ok := k.fds[int(a[0])]; !ok {
			return 0, unix.EBADF
		}
		delete(k.fds, int(a[0]))
	case unix.SYS_DUP3:
		f, ok := k.fds[int(a[0])]
		if !ok || a[0] == a[1] {
			return 0, unix.EBADF
		}
		k.fds[int(a[1])] = fakeFd{file: f.file, cloexec: a[2]&unix.O_CLOEXEC != 0}
	case unix.SYS_FCNTL:
		f, ok := k.fds[int(a[0])]
		if !ok {
			return 0, unix.EBADF
		}
		f.cloexec = a[2]&unix.FD_CLOEXEC != 0
		k.fds[int(a[0])] = f
	case unix.SYS_PRCTL:
		if a[0] == unix.PR_CAP_AMBIENT {
			w, bit := a[2]/32, uint32(1)<<(a[2]%32)
			if k.capData[w].Inheritable&bit == 0 || k.capData[w].Permitted&bit == 0 {
				return 0, unix.EPERM // the kernel's rule: ambient ⊆ permitted ∩ inheritable
			}
			k.caps = append(k.caps, a[2])
		}
	}
	return 0, 0
}

// The child's calls, in syscall.forkAndExecInChild1's order, for each kind of caller
// the launcher clones for: a step left out or moved fails here.
func TestInitPlanSteps(t *testing.T) {
	const report, mapR, mapW = 20, 21, 22
	files := []uintptr{10, 11, 12, 13, 14, 15, 16}
	maps := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 1}}
	cases := []struct {
		name string
		sys  *syscall.SysProcAttr
		want []uintptr // after the signal handlers' resets
	}{
		{"unprivileged caller", &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWUSER,
			UidMappings: maps, GidMappings: maps, AmbientCaps: initCaps}, nil},
		{"root caller, its host id", &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWUSER,
			UidMappings: maps, GidMappings: maps, GidMappingsEnableSetgroups: true, AmbientCaps: initCaps,
			Credential: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}},
			[]uintptr{unix.SYS_SETGROUPS, unix.SYS_SETGID, unix.SYS_SETUID}},
		{"uid 0 in a namespace a host id owns", &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWUSER,
			UidMappings: maps, GidMappings: maps, AmbientCaps: initCaps,
			Credential: &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}},
			[]uintptr{unix.SYS_SETGID, unix.SYS_SETUID}},
	}
	for _, c := range cases {
		p, err := planInit([]string{InitArg}, []string{"GOMAXPROCS=2"}, files, c.sys, report, mapR, mapW, 0x1234)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if max := planOpsCap(len(files), len(c.sys.AmbientCaps)); len(p.ops) > max {
			t.Errorf("%s: %d ops, more than the %d planOpsCap made room for", c.name, len(p.ops), max)
		}
		k := &fakeKernel{fds: map[int]fakeFd{}, handler: 0x4000, capData: &p.capData, old: &p.old}
		for _, f := range append(slices.Clone(files), report, mapR, mapW) {
			k.fds[int(f)] = fakeFd{file: int(f), cloexec: true}
		}
		if i, e := runInit(p, k); i != -1 || e != 0 || k.calls[len(k.calls)-1] != unix.SYS_EXECVE {
			t.Fatalf("%s: stopped at op %d (%v), want the plan's end at execve", c.name, i, e)
		}
		want := []uintptr{unix.SYS_RT_SIGPROCMASK, unix.SYS_PRCTL, unix.SYS_CLOSE, unix.SYS_READ, unix.SYS_SETSID}
		if !slices.Equal(k.calls[:len(want)], want) {
			t.Errorf("%s: first calls %v, want block signals, keep caps, the maps' pipe, setsid %v", c.name, k.calls[:len(want)], want)
		}
		rest := k.calls[len(want):]
		n := 0
		for n < len(rest) && rest[n] == unix.SYS_RT_SIGACTION {
			n++
		}
		if n != 62 || len(k.handled) != 62 {
			t.Errorf("%s: %d rt_sigaction calls, %d handlers reset; want every signal but SIGKILL and SIGSTOP reset", c.name, n, len(k.handled))
		}
		rest = rest[n:]
		if rest[0] != unix.SYS_RT_SIGPROCMASK || p.mask != 0x1234 {
			t.Errorf("%s: the signal mask is not restored after the handlers", c.name)
		}
		rest = rest[1:]
		if !slices.Equal(rest[:len(c.want)], c.want) {
			t.Errorf("%s: credentials %v, want %v", c.name, rest[:len(c.want)], c.want)
		}
		rest = rest[len(c.want):]
		if rest[0] != unix.SYS_CAPGET || rest[1] != unix.SYS_CAPSET {
			t.Errorf("%s: want capget, capset before the ambient raises, got %v", c.name, rest[:2])
		}
		if len(k.caps) != len(initCaps) {
			t.Errorf("%s: ambient capabilities raised %v, want %v", c.name, k.caps, initCaps)
		}
		for i, f := range files {
			if got := k.fds[i]; got.file != int(f) || got.cloexec {
				t.Errorf("%s: fd %d is %+v, want file %d without close-on-exec", c.name, i, got, f)
			}
		}
		if got := k.fds[p.report]; got.file != report || !got.cloexec {
			t.Errorf("%s: the report pipe at %d is %+v", c.name, p.report, got)
		}
	}
}

// The descriptor moves with the awkward layouts: a descriptor below its place, one at
// its own place, the report pipe among the places.
func TestInitPlanFds(t *testing.T) {
	for _, c := range []struct {
		files  []uintptr
		report int
	}{
		{[]uintptr{2, 1, 0, 3, 9, 4, 5}, 6},
		{[]uintptr{5, 5, 5}, 1},
		{[]uintptr{7, 8, 9, 3, 4, 5, 6}, 2},
	} {
		p, err := planInit([]string{"x"}, nil, c.files, &syscall.SysProcAttr{}, c.report, -1, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		k := &fakeKernel{fds: map[int]fakeFd{}, old: &p.old}
		for _, f := range c.files {
			k.fds[int(f)] = fakeFd{file: int(f) + 100, cloexec: true}
		}
		k.fds[c.report] = fakeFd{file: 99, cloexec: true}
		if i, e := runInit(p, k); e != 0 || i != -1 {
			t.Fatalf("%v: stopped at %d: %v", c.files, i, e)
		}
		for i, f := range c.files {
			if got := k.fds[i]; got.file != int(f)+100 || got.cloexec {
				t.Errorf("%v, report %d: fd %d is %+v, want file %d", c.files, c.report, i, got, f+100)
			}
		}
		if got := k.fds[p.report]; got.file != 99 {
			t.Errorf("%v, report %d: the report pipe moved to %d holds %+v", c.files, c.report, p.report, got)
		}
	}
}

// The child stops where a step fails: end of file on the maps' pipe (the parent could
// not write them) stops it before setsid, and signals the launcher ignores or leaves at
// their default are not touched.
func TestInitPlanStops(t *testing.T) {
	maps := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 1000, Size: 1}}
	sys := &syscall.SysProcAttr{Setsid: true, UidMappings: maps, GidMappings: maps}
	p, err := planInit([]string{"x"}, nil, []uintptr{0, 1, 2}, sys, 5, 6, 7, 0)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKernel{fds: map[int]fakeFd{0: {}, 1: {}, 2: {}, 5: {}, 6: {}, 7: {}}, eof: true, old: &p.old}
	i, e := runInit(p, k)
	if e != unix.EPIPE || p.ops[i].step != stepMaps || slices.Contains(k.calls, unix.SYS_SETSID) {
		t.Errorf("end of file on the maps' pipe: stopped at %q (%v), calls %v", initSteps[p.ops[i].step], e, k.calls)
	}
	p, _ = planInit([]string{"x"}, nil, []uintptr{0, 1, 2}, &syscall.SysProcAttr{}, 5, -1, -1, 0)
	for _, h := range []uintptr{0, 1, 0x4000} { // SIG_DFL, SIG_IGN, a handler
		k = &fakeKernel{fds: map[int]fakeFd{0: {}, 1: {}, 2: {}, 5: {}}, handler: h, old: &p.old}
		runInit(p, k)
		if h == 1 && len(k.restored) != 62 || h != 1 && len(k.restored) != 0 {
			t.Errorf("old handler %d: %d signals set back to SIG_IGN (an ignored signal stays ignored, no other)", h, len(k.restored))
		}
	}
	if _, err := planInit([]string{"x"}, nil, nil, &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL}, 5, -1, -1, 0); err == nil {
		t.Error("a SysProcAttr field the clone does not implement was accepted")
	}
}

// A step that fails before the report pipe is moved reports on the pipe's own number,
// not on the number it is to be moved to, which the launcher may have open for
// something else (a library caller whose stdio has higher numbers than a free hole:
// review6 F1); after the move, on the new number.
func TestInitPlanReportBeforeMove(t *testing.T) {
	files := []uintptr{0, 1, 40} // the report pipe (5) is below 40: it moves to 41
	for _, failAt := range []uint8{stepSetsid, stepFds} {
		p, err := planInit([]string{"x"}, nil, files, &syscall.SysProcAttr{Setsid: true}, 5, -1, -1, 0)
		if err != nil {
			t.Fatal(err)
		}
		// the first op of the failing step fails (the move itself for stepFds)
		for i := range p.ops {
			if p.ops[i].step == failAt {
				p.ops[i].kind = initFail
				break
			}
		}
		k := &fakeKernel{fds: map[int]fakeFd{0: {}, 1: {}, 40: {}, 5: {file: 99}, 41: {file: 7}}, old: &p.old}
		if i, e := runInit(p, k); e == 0 || p.ops[i].step != failAt {
			t.Fatalf("%s: stopped at %d (%v)", initSteps[failAt], i, e)
		}
		if p.report != 5 {
			t.Errorf("failure at %q: reported on fd %d, want the report pipe's own 5 (41 is another file)", initSteps[failAt], p.report)
		}
	}
	p, _ := planInit([]string{"x"}, nil, files, &syscall.SysProcAttr{}, 5, -1, -1, 0)
	k := &fakeKernel{fds: map[int]fakeFd{0: {}, 1: {}, 40: {}, 5: {file: 99}}, old: &p.old}
	if i, e := runInit(p, k); e != 0 {
		t.Fatalf("stopped at %d: %v", i, e)
	}
	if p.report != 41 || k.fds[41].file != 99 {
		t.Errorf("after the move the report pipe is fd %d (%+v), want 41 holding it", p.report, k.fds[p.report])
	}
}

// The clone3(2) form of the init's clone (a cgroup v2 group's CLONE_INTO_CGROUP, which
// this hybrid host's launches do not use): the child starts in the group, on its own
// stack, and executes. The child is this test binary again, running only
// TestInitCloneHelper, which waits for its stdin to close.
func TestInitCloneIntoCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a cgroup v2 group")
	}
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup/unified", &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skip("no cgroup v2 hierarchy at /sys/fs/cgroup/unified")
	}
	dir := "/sys/fs/cgroup/unified/nsinit-clone3-test-" + strconv.Itoa(os.Getpid())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Skipf("make a v2 group: %v", err)
	}
	t.Cleanup(func() { os.Remove(dir) })
	gfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(gfd)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	attr := &syscall.ProcAttr{
		Env:   []string{"GOSBX_CLONE_HELPER=1"},
		Files: []uintptr{r.Fd(), null.Fd(), 2},
		Sys:   &syscall.SysProcAttr{Setsid: true, UseCgroupFD: true, CgroupFD: gfd},
	}
	pid, err := forkExecInit([]string{"helper", "-test.run=^TestInitCloneHelper$"}, attr)
	if err != nil {
		t.Fatalf("forkExecInit with CLONE_INTO_CGROUP: %v", err)
	}
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	w.Close()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("the child: %v, %v", describe(ws), err)
	}
	if !strings.Contains(string(b), "0::/nsinit-clone3-test-"+strconv.Itoa(os.Getpid())+"\n") {
		t.Errorf("the child's cgroups:\n%s\nwant the v2 group %s", b, dir)
	}
}

// TestInitCloneHelper is TestInitCloneIntoCgroup's child: it waits for stdin to close.
func TestInitCloneHelper(t *testing.T) {
	if os.Getenv("GOSBX_CLONE_HELPER") == "" {
		t.Skip("the child of TestInitCloneIntoCgroup")
	}
	io.Copy(io.Discard, os.Stdin)
}
