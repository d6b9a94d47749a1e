package rawplan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// rawRecorder records the raw child's calls (number and arguments as the kernel would
// get them) and answers each from a table of results, in order.
type rawRecorder struct {
	calls   []rawRec
	answers []rawAnswer
}

type rawRec struct {
	nr uintptr
	a  [6]uintptr
}

type rawAnswer struct {
	r uintptr
	e unix.Errno
}

func (k *rawRecorder) clone(nr, a1, a2 uintptr, sub *State) (uintptr, unix.Errno) {
	return 0, unix.ENOSYS
}

func (k *rawRecorder) raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno) {
	k.calls = append(k.calls, rawRec{nr, *a})
	if len(k.answers) == 0 {
		return 0, 0
	}
	ans := k.answers[0]
	k.answers = k.answers[1:]
	return ans.r, ans.e
}

func newTestPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := New(64<<10, 256)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Free() })
	return p
}

// A result stored in a register reaches every later op that names it, in place of the
// register's number; a closed register reads -1 after.
func TestRawPlanRegisters(t *testing.T) {
	p := newTestPlan(t)
	s := p.Begin("mount")
	fs, mnt := p.Reg(), p.Reg()
	p.Call(s, nil, unix.SYS_FSOPEN, Lit(p.Str("tmpfs")), Lit(unix.FSOPEN_CLOEXEC)).Into(fs)
	p.Call(s, nil, unix.SYS_FSCONFIG, fs.Arg(), Lit(unix.FSCONFIG_CMD_CREATE), Lit(0), Lit(0), Lit(0))
	p.Call(s, nil, unix.SYS_FSMOUNT, fs.Arg(), Lit(unix.FSMOUNT_CLOEXEC), Lit(0)).Into(mnt)
	p.CloseReg(s, fs)
	p.Call(s, nil, unix.SYS_MOVE_MOUNT, mnt.Arg(), Lit(p.Str("")), Lit(AtFdcwd), Lit(p.Str("/tmp")), Lit(unix.MOVE_MOUNT_F_EMPTY_PATH))
	p.Call(s, nil, unix.SYS_GETPID, fs.Arg()) // reads the closed register
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	k := &rawRecorder{answers: []rawAnswer{{7, 0}, {0, 0}, {9, 0}, {0, 0}, {0, 0}, {0, 0}}}
	if i, e := Run(p.St, k); i != -1 {
		t.Fatalf("op %d failed: %v", i, e)
	}
	want := []rawRec{
		{unix.SYS_FSOPEN, [6]uintptr{p.St.ops[0].a[0], unix.FSOPEN_CLOEXEC}},
		{unix.SYS_FSCONFIG, [6]uintptr{7, unix.FSCONFIG_CMD_CREATE}},
		{unix.SYS_FSMOUNT, [6]uintptr{7, unix.FSMOUNT_CLOEXEC}},
		{unix.SYS_CLOSE, [6]uintptr{7}},
		{unix.SYS_MOVE_MOUNT, [6]uintptr{9, p.St.ops[4].a[1], AtFdcwd, p.St.ops[4].a[3], unix.MOVE_MOUNT_F_EMPTY_PATH}},
		{unix.SYS_GETPID, [6]uintptr{^uintptr(0)}},
	}
	if len(k.calls) != len(want) {
		t.Fatalf("calls %v, want %v", k.calls, want)
	}
	for i := range want {
		if k.calls[i] != want[i] {
			t.Errorf("call %d: %v, want %v", i, k.calls[i], want[i])
		}
	}
	if got := cString(p, p.St.ops[0].a[0]); got != "tmpfs" {
		t.Errorf("fsopen's argument is %q in the arena", got)
	}
}

// cString reads the C string at addr, an address inside p's arena.
func cString(p *Plan, addr uintptr) string {
	base := p.arena.addr(0)
	off := int(addr - base)
	end := off
	for p.arena.mem[end] != 0 {
		end++
	}
	return string(p.arena.mem[off:end])
}

// A tolerated errno is no failure: the op's register holds -errno and the ops it guards
// are passed over; any other errno stops the plan at that op, and the error is the Go
// init step's.
func TestRawPlanTolerated(t *testing.T) {
	p := newTestPlan(t)
	s := p.Begin("mount")
	r := p.Reg()
	p.Call(s, nil, unix.SYS_MKDIRAT, Lit(3), Lit(p.Str("a")), Lit(0o555)).Tolerate(unix.EEXIST)
	i := p.Mark()
	p.Call(s, nil, unix.SYS_OPENAT2, Lit(3), Lit(p.Str("b"))).Tolerate(unix.ENOENT).Into(r)
	p.Call(s, nil, unix.SYS_OPEN_TREE, r.Arg())
	p.Call(s, nil, unix.SYS_MOVE_MOUNT, r.Arg())
	p.SkipTo(i)
	r2 := p.Reg()
	p.Call(s, nil, unix.SYS_OPENAT2, Lit(3), Lit(p.Str("c"))).Tolerate(unix.ENOENT).Into(r2)
	p.Call(s, func(e unix.Errno) error { return fmt.Errorf("open_tree c: %w", e) }, unix.SYS_OPEN_TREE, r2.Arg())
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	k := &rawRecorder{answers: []rawAnswer{{0, unix.EEXIST}, {0, unix.ENOENT}, {5, 0}, {0, unix.EPERM}}}
	i, e := Run(p.St, k)
	if i != 5 || e != unix.EPERM {
		t.Fatalf("stopped at op %d (%v), want 5 (EPERM)", i, e)
	}
	var nrs []uintptr
	for _, c := range k.calls {
		nrs = append(nrs, c.nr)
	}
	if want := []uintptr{unix.SYS_MKDIRAT, unix.SYS_OPENAT2, unix.SYS_OPENAT2, unix.SYS_OPEN_TREE}; !equalNrs(nrs, want) {
		t.Errorf("calls %v, want %v (the skipped pair left out)", nrs, want)
	}
	if p.St.regs[r] != -int64(unix.ENOENT) || p.St.regs[r2] != 5 {
		t.Errorf("registers %d, %d; want -ENOENT, 5", p.St.regs[r], p.St.regs[r2])
	}
	step, err := p.Failure(i, e)
	if step != "mount" || err.Error() != "open_tree c: operation not permitted" || !errors.Is(err, unix.EPERM) {
		t.Errorf("failure %s: %v, want the step's error wrapping EPERM", step, err)
	}
	// an untolerated errno at the first op
	p.St.regs[r] = -1
	k = &rawRecorder{answers: []rawAnswer{{0, unix.EACCES}}}
	if i, e := Run(p.St, k); i != 0 || e != unix.EACCES {
		t.Errorf("stopped at %d (%v), want 0 (EACCES)", i, e)
	}
}

func equalNrs(a, b []uintptr) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// EINTR restarts an op; end of file on a one-byte read fails with EPIPE.
func TestRawPlanRestartAndRead(t *testing.T) {
	p := newTestPlan(t)
	s := p.Begin("go-ahead")
	p.Op(s, nil, ReadOne, unix.SYS_READ, Lit(5), Lit(p.Str("x")), Lit(1))
	k := &rawRecorder{answers: []rawAnswer{{0, unix.EINTR}, {0, 0}}}
	if i, e := Run(p.St, k); i != 0 || e != unix.EPIPE || len(k.calls) != 2 {
		t.Errorf("op %d, %v after %d calls; want 0, EPIPE after 2", i, e, len(k.calls))
	}
}

// The plan on the kernel: mount-point directories made under a directory descriptor
// with EEXIST tolerated, each opened with RESOLVE_NO_SYMLINKS into a register that the
// next mkdirat takes; a symlink on the way stops the plan with ELOOP at that openat2.
// The directories exist on disk afterwards, and nothing is made beyond the symlink.
func TestRawPlanKernelWalk(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	root, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(root)

	walk := func(path string) (*Plan, int, unix.Errno) {
		p := newTestPlan(t)
		how, err := arenaNew[unix.OpenHow](p.arena)
		if err != nil {
			t.Fatal(err)
		}
		*how = unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH}
		s := p.Begin("mount")
		cur := p.Reg()
		p.Call(s, nil, unix.SYS_DUP, Lit(uintptr(root))).Into(cur)
		for _, c := range strings.Split(path, "/") {
			p.Call(s, nil, unix.SYS_MKDIRAT, cur.Arg(), Lit(p.Str(c)), Lit(0o555)).Tolerate(unix.EEXIST)
			next := p.Reg()
			p.Call(s, nil, unix.SYS_OPENAT2, cur.Arg(), Lit(p.Str(c)), Lit(ptr(how)), Lit(unix.SizeofOpenHow)).Into(next)
			p.CloseReg(s, cur)
			cur = next
		}
		p.CloseReg(s, cur)
		if err := p.Finish(); err != nil {
			t.Fatal(err)
		}
		i, e := Run(p.St, &TheKernel)
		for _, v := range p.St.regs {
			if v >= 0 {
				unix.Close(int(v))
			}
		}
		return p, i, e
	}
	if _, i, e := walk("a/b/c"); i != -1 {
		t.Fatalf("op %d failed: %v", i, e)
	}
	if st, err := os.Stat(filepath.Join(dir, "a/b/c")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o555 {
		t.Fatalf("a/b/c after the walk: %v, %v", st, err)
	}
	p, i, e := walk("a/link/x")
	if e != unix.ELOOP || p.St.ops[i].nr != unix.SYS_OPENAT2 {
		t.Fatalf("walk through a symlink stopped at op %d with %v, want openat2 ELOOP", i, e)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the walk made %v beyond the symlink", ents)
	}
}

// A descriptor sent with SCM_RIGHTS lands in the register, and names the sent file.
func TestRawPlanRecvFd(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	f, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Sendmsg(fds[0], []byte{'P'}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	p := newTestPlan(t)
	s := p.Begin("mount")
	r := p.Reg()
	p.RecvFd(s, nil, Lit(uintptr(fds[1])), r)
	if err := p.Finish(); err != nil {
		t.Fatal(err)
	}
	if i, e := Run(p.St, &TheKernel); i != -1 {
		t.Fatalf("op %d: %v", i, e)
	}
	got := int(p.St.regs[r])
	defer unix.Close(got)
	var a, b unix.Stat_t
	if unix.Fstat(got, &a) != nil || unix.Fstat(int(f.Fd()), &b) != nil || a.Ino != b.Ino || a.Dev != b.Dev {
		t.Errorf("register holds %d, not the sent directory", got)
	}
	if fl, _ := unix.FcntlInt(uintptr(got), unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("received descriptor is not close-on-exec")
	}
	// the peer closed: end of file is a failure
	unix.Close(fds[0])
	p.St.regs[r] = -1
	if i, e := Run(p.St, &TheKernel); i != 0 || e != unix.EBADMSG {
		t.Errorf("receipt at end of file: op %d, %v; want 0, EBADMSG", i, e)
	}
}

// The walk allocates nothing (it runs in a child that shares the launcher's heap).
func TestRawPlanNoAlloc(t *testing.T) {
	p := newTestPlan(t)
	s := p.Begin("x")
	r := p.Reg()
	p.Call(s, nil, unix.SYS_GETPID).Into(r)
	p.Call(s, nil, unix.SYS_GETPGID, r.Arg())
	if n := testing.AllocsPerRun(100, func() { Run(p.St, &TheKernel) }); n != 0 {
		t.Errorf("Run allocates %v times a run", n)
	}
}

// Compiling stops at the arena's bound or a NUL in a path, with an error, never a
// partial plan that runs.
func TestRawPlanLimits(t *testing.T) {
	p, err := New(16<<10, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	s := p.Begin("x")
	for range 5 {
		p.Call(s, nil, unix.SYS_GETPID)
	}
	if !errors.Is(p.Finish(), ErrFull) {
		t.Errorf("5 ops in a plan of 4: %v", p.Finish())
	}
	q := newTestPlan(t)
	q.Str("a\x00b")
	if !errors.Is(q.Finish(), unix.EINVAL) {
		t.Errorf("a NUL in a path: %v", q.Finish())
	}
}

// The checking kinds on the kernel: SameFile, ReadlinkIs, WriteAll, SkipUnlessDir,
// SkipIfSet and Skip, each with the case that passes and the one that fails or skips.
func TestRawPlanKernelKinds(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("usr/bin", filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func(name string) uintptr {
		fd, err := unix.Open(filepath.Join(dir, name), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return uintptr(fd)
	}
	d, f, f2 := open("."), open("f"), open("f")
	run := func(build func(p *Plan, s uint16)) (*Plan, int, unix.Errno) {
		p := newTestPlan(t)
		build(p, p.Begin("x"))
		if err := p.Finish(); err != nil {
			t.Fatal(err)
		}
		i, e := Run(p.St, &TheKernel)
		return p, i, e
	}
	if _, i, e := run(func(p *Plan, s uint16) { p.Op(s, nil, SameFile, 0, Lit(f), Lit(f2)) }); i != -1 {
		t.Errorf("SameFile of one file: op %d, %v", i, e)
	}
	if _, i, e := run(func(p *Plan, s uint16) { p.Op(s, nil, SameFile, 0, Lit(f), Lit(d)) }); i != 0 || e != unix.ESTALE {
		t.Errorf("SameFile of two files: op %d, %v; want ESTALE", i, e)
	}
	if _, i, e := run(func(p *Plan, s uint16) { p.ReadlinkIs(s, nil, Lit(d), "bin", "usr/bin") }); i != -1 {
		t.Errorf("ReadlinkIs of the same target: op %d, %v", i, e)
	}
	for _, other := range []string{"usr/bi", "usr/bin2", "usr/sbin"} {
		if _, i, e := run(func(p *Plan, s uint16) { p.ReadlinkIs(s, nil, Lit(d), "bin", other) }); i != 0 || e != unix.EEXIST {
			t.Errorf("ReadlinkIs %q: op %d, %v; want EEXIST", other, i, e)
		}
	}
	content := strings.Repeat("x", 10000)
	_, i, e := run(func(p *Plan, s uint16) {
		r := p.Reg()
		p.Call(s, nil, unix.SYS_OPENAT, Lit(d), Lit(p.Str("new")), Lit(unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC), Lit(0o640)).Into(r)
		p.Op(s, nil, WriteAll, unix.SYS_WRITE, r.Arg(), Lit(p.Bytes([]byte(content))), Lit(uintptr(len(content))))
		p.CloseReg(s, r)
	})
	if b, err := os.ReadFile(filepath.Join(dir, "new")); i != -1 || err != nil || string(b) != content {
		t.Errorf("WriteAll: op %d, %v; %d bytes on disk (%v)", i, e, len(b), err)
	}
	// SkipUnlessDir: a directory runs the guarded op (getppid), a file skips it; SkipIfSet
	// skips when the register holds a descriptor, Skip always.
	for _, c := range []struct {
		fd    uintptr
		calls int
	}{{d, 1}, {f, 0}} {
		k := &kernelCounter{}
		p := newTestPlan(t)
		s := p.Begin("x")
		m := p.Mark()
		p.Op(s, nil, SkipUnlessDir, 0, Lit(c.fd))
		p.Call(s, nil, unix.SYS_GETPPID)
		p.Guard(m)
		r := p.Reg()
		p.Call(s, nil, unix.SYS_DUP, Lit(c.fd)).Into(r)
		m = p.Mark()
		p.Op(s, nil, SkipIfSet, 0, r.Arg())
		p.Call(s, nil, unix.SYS_GETPPID)
		p.Guard(m)
		m = p.Mark()
		p.Op(s, nil, Skip, 0)
		p.Call(s, nil, unix.SYS_GETPPID)
		p.Guard(m)
		p.CloseReg(s, r)
		if i, e := Run(p.St, k); i != -1 || k.n[unix.SYS_GETPPID] != c.calls {
			t.Errorf("skips: op %d, %v; %d guarded calls, want %d", i, e, k.n[unix.SYS_GETPPID], c.calls)
		}
	}
}

// kernelCounter is the kernel, counting calls by number.
type kernelCounter struct{ n map[uintptr]int }

func (k *kernelCounter) clone(nr, a1, a2 uintptr, sub *State) (uintptr, unix.Errno) {
	return TheKernel.clone(nr, a1, a2, sub)
}

func (k *kernelCounter) raw(nr uintptr, a *[6]uintptr) (uintptr, unix.Errno) {
	if k.n == nil {
		k.n = map[uintptr]int{}
	}
	k.n[nr]++
	return TheKernel.raw(nr, a)
}

// A sub-plan runs in a child of the raw child: it sends a descriptor that the parent's
// plan receives and uses (a directory made through it, seen on disk), and its failure
// fails the parent's plan at the sub-plan's own step and errno.
func TestRawPlanSub(t *testing.T) {
	for _, fail := range []bool{false, true} {
		dir := t.TempDir()
		var rep, subRep [2]int
		for _, fds := range []*[2]int{&rep, &subRep} {
			if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
		}
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		p := newTestPlan(t)
		s := p.Begin("main")
		sub := p.BeginSub(s)
		ss := p.Begin("sub")
		r := p.Reg()
		p.Call(ss, nil, unix.SYS_OPENAT, Lit(AtFdcwd), Lit(p.Str(dir)), Lit(unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)).Into(r)
		p.Op(ss, nil, SendFd, 0, Lit(uintptr(sp[0])), r.Arg())
		if fail {
			p.Call(ss, nil, unix.SYS_MKDIRAT, r.Arg(), Lit(p.Str(".")), Lit(0o700))
		}
		p.EndSub(sub, subRep[1])
		pid := p.Reg()
		p.CloneSub(s, nil, sub, 0, pid)
		p.Call(s, nil, unix.SYS_CLOSE, Lit(uintptr(subRep[1])))
		got := p.Reg()
		p.RecvFd(s, nil, Lit(uintptr(sp[1])), got)
		p.AwaitSub(s, nil, sub, Lit(uintptr(subRep[0])))
		p.Call(s, nil, unix.SYS_MKDIRAT, got.Arg(), Lit(p.Str("fromsub")), Lit(0o700))
		child, err := Start(p, 0, rep[1])
		for _, fd := range []int{rep[1], subRep[0], subRep[1], sp[0], sp[1]} {
			unix.Close(fd)
		}
		if err != nil {
			t.Fatal(err)
		}
		step, rerr := ReadReport(p, rep[0])
		var ws unix.WaitStatus
		unix.Wait4(child, &ws, 0, nil)
		_, statErr := os.Stat(filepath.Join(dir, "fromsub"))
		switch {
		case !fail && (rerr != nil || statErr != nil || ws.ExitStatus() != 0):
			t.Errorf("sub-plan: %s: %v; made through the sent descriptor: %v; %v", step, rerr, statErr, ws)
		case fail && (step != "sub" || !errors.Is(rerr, unix.EEXIST) || statErr == nil || ws.ExitStatus() != ExitFailed):
			t.Errorf("failing sub-plan: %s: %v, %v, %v; want sub: EEXIST, nothing made, 125", step, rerr, statErr, ws)
		}
	}
}

// A sub-plan cloned with CloneSubInto starts in the cgroup v2 group given (seen from
// the host in its /proc/PID/cgroup while it waits), and CLONE_VFORK holds its parent
// until it has ended.
func TestRawPlanSubIntoCgroup(t *testing.T) {
	unified := "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		unified = "/sys/fs/cgroup"
	}
	if os.Getuid() != 0 {
		t.Skip("needs root: a cgroup v2 group")
	}
	var st unix.Statfs_t
	if unix.Statfs(unified, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Skip("no cgroup v2 hierarchy mounted")
	}
	name := fmt.Sprintf("gosbx-rawplan-test-%d", os.Getpid())
	dir := filepath.Join(unified, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(dir)
	cg, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rep, subRep, ready, gate [2]int
	for _, fds := range []*[2]int{&rep, &subRep, &ready, &gate} {
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
	}
	p := newTestPlan(t)
	s := p.Begin("main")
	sub := p.BeginSub(s)
	ss := p.Begin("sub")
	p.Call(ss, nil, unix.SYS_WRITE, Lit(uintptr(ready[1])), Lit(p.Str("r")), Lit(1))
	p.Op(ss, nil, ReadOne, unix.SYS_READ, Lit(uintptr(gate[0])), Lit(0), Lit(1))
	p.EndSub(sub, subRep[1])
	pid := p.Reg()
	p.CloneSubInto(s, nil, sub, unix.CLONE_VFORK, cg, pid)
	p.Call(s, nil, unix.SYS_CLOSE, Lit(uintptr(subRep[1])))
	p.AwaitSub(s, nil, sub, Lit(uintptr(subRep[0])))
	p.Call(s, nil, unix.SYS_WRITE, Lit(uintptr(ready[1])), Lit(p.Str("p")), Lit(1))
	child, err := Start(p, 0, rep[1])
	for _, fd := range []int{rep[1], subRep[0], subRep[1], ready[1], gate[0], cg} {
		unix.Close(fd)
	}
	if err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, _ := unix.Read(ready[0], b[:]); n != 1 || b[0] != 'r' {
		t.Fatalf("the sub-plan did not start: %q", b[:n])
	}
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", child, child))
	f := strings.Fields(string(kids))
	if len(f) != 1 {
		t.Fatalf("the raw child's children: %q", kids)
	}
	sub0, _ := os.ReadFile("/proc/" + f[0] + "/cgroup")
	parent, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", child))
	if !strings.Contains(string(sub0), "0::/"+name+"\n") || strings.Contains(string(parent), name) {
		t.Errorf("the sub-plan's cgroups:\n%s\nits parent's:\n%s\nwant the sub-plan alone in %s", sub0, parent, name)
	}
	unix.Write(gate[1], []byte{1})
	unix.Close(gate[1])
	if n, _ := unix.Read(ready[0], b[:]); n != 1 || b[0] != 'p' {
		t.Errorf("the parent plan did not go on after the sub-plan ended: %q", b[:n])
	}
	unix.Close(ready[0])
	if step, rerr := ReadReport(p, rep[0]); rerr != nil {
		t.Errorf("%s: %v", step, rerr)
	}
	var ws unix.WaitStatus
	unix.Wait4(child, &ws, 0, nil)
}
