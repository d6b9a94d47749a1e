package nsinit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/internal/ownmountns"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

// withoutNotify returns spec with its filter compiled again without the set-ID rules
// that notify the init (SCMP_ACT_NOTIFY): a root caller's config the raw init takes
// while it has no set-ID listener (rawEligible). The rest of the filter (the foreign
// owner rules of a uid 0 caller included) stays.
func withoutNotify(t *testing.T, spec *config.Config) *config.Config {
	t.Helper()
	s := *spec
	l := *spec.Linux
	src := *spec.Linux.Seccomp
	src.Syscalls = slices.DeleteFunc(slices.Clone(src.Syscalls), func(sc specs.LinuxSyscall) bool { return sc.Action == specs.ActNotify })
	prog, err := seccomp.Compile(&src)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Notifies() {
		t.Fatal("the filter still notifies")
	}
	l.Seccomp, l.Filter = &src, prog
	s.Linux = &l
	return &s
}

// rawCallerRun is what one launch of TestRawRootCaller saw: the command's output, from
// the host its ids (/proc/PID/status Uid, Gid, Groups), the init's threads and command
// line, the holder's working directory, and the launch's host id.
type rawCallerRun struct {
	out, ids, initArgv, holderCwd string
	initThreads                   int
	hostUID                       int64
}

// runRawCaller launches spec (its command prints, says "ready" and waits for a line)
// with the raw init allowed or not, and looks at it from the host while it waits.
func runRawCaller(t *testing.T, spec *config.Config, raw bool) rawCallerRun {
	t.Helper()
	rawAllowed.Store(raw)
	rawTaken.Store(false)
	defer rawAllowed.Store(false)
	var log eventLog
	c := Command(spec)
	c.Events = log.add
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdin, c.Stdout, c.Stderr = stdinR, stdoutW, os.Stderr
	err = c.Start()
	stdinR.Close()
	stdoutW.Close()
	defer stdinW.Close()
	defer stdoutR.Close()
	if err != nil {
		t.Fatalf("raw %v: Start: %v", raw, err)
	}
	var r rawCallerRun
	br := bufio.NewReader(stdoutR)
	var out strings.Builder
	for {
		line, err := br.ReadString('\n')
		if line == "ready\n" || err != nil {
			break
		}
		out.WriteString(line)
	}
	r.out = out.String()
	var cmdPid int
	for _, e := range log.events() {
		if e.Exec {
			cmdPid = e.Pid
		}
	}
	init := c.init.pid
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(cmdPid) + "/status")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Uid:") || strings.HasPrefix(l, "Gid:") || strings.HasPrefix(l, "Groups:") {
			r.ids += l + "\n"
		}
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(init) + "/task")
	r.initThreads = len(tasks)
	argv, _ := os.ReadFile("/proc/" + strconv.Itoa(init) + "/cmdline")
	r.initArgv = string(argv)
	kids, _ := os.ReadFile("/proc/" + strconv.Itoa(init) + "/task/" + strconv.Itoa(init) + "/children")
	if f := strings.Fields(string(kids)); len(f) > 0 {
		// the holder's working directory against the command's root: the same
		// directory, or the path the holder's cwd has from here
		var cwd, root unix.Stat_t
		r.holderCwd, _ = os.Readlink("/proc/" + f[0] + "/cwd")
		if unix.Stat("/proc/"+f[0]+"/cwd", &cwd) == nil && unix.Stat("/proc/"+strconv.Itoa(cmdPid)+"/root", &root) == nil &&
			cwd.Dev == root.Dev && cwd.Ino == root.Ino {
			r.holderCwd = "the sandbox's root"
		}
	}
	stdinW.Write([]byte("go\n"))
	rest, _ := io.ReadAll(br)
	r.out += string(rest)
	if err := c.Wait(); err != nil {
		t.Errorf("raw %v: Wait: %v (output %q)", raw, err, r.out)
	}
	r.hostUID = c.Result.HostUID
	return r
}

// A root caller's launch (a host id of the range, the trees the launcher clones and
// idmaps, the credentials set inside, setgroups allowed) set up by the raw init gives
// the command exactly what the Go init gives it, seen from the host and from inside:
// its ids on the host (the host id, no supplementary group), its ids, groups,
// capabilities, no_new_privs and seccomp inside, a file it makes in the workspace
// owned on the host by the workspace's owner (the idmap), a read-only bind it cannot
// write, root's home hidden. The raw init is one thread sharing the launcher's command
// line; the Go init is executed as gosbx-init. The commands' pid 1 (the holder) has the
// sandbox's root as its working directory with both inits (not the launcher's on the
// old root).
func TestRawRootCaller(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a root caller's launch")
	}
	ws := testWorkspace(t)
	ro := testWorkspace(t)
	if err := os.WriteFile(filepath.Join(ro, "f"), []byte("ro\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `id -u; id -g; id -G; grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
touch "$1/made-$2" && stat -c '%u %g' "$1/made-$2"
(echo x > "$3/f") 2>/dev/null && echo wrote-ro; cat "$3/f"; ls /root 2>&1 | head -1; pwd; echo ready; read x; echo done`
	runs := map[bool]rawCallerRun{}
	for _, raw := range []bool{false, true} {
		spec := compile(t, policy.Options{Workspace: ws, ReadOnly: []string{ro},
			Args: []string{"/bin/sh", "-c", script, "sh", ws, strconv.FormatBool(raw), ro}}, nil)
		if spec.RootID == nil {
			t.Fatal("a root caller's config without a host id range")
		}
		spec = withoutNotify(t, spec)
		runs[raw] = runRawCaller(t, spec, raw)
	}
	g, r := runs[false], runs[true]
	t.Logf("Go init: %+v\nraw init: %+v", g, r)
	if g.initThreads < 2 || !strings.HasPrefix(g.initArgv, InitArg+"\x00") {
		t.Errorf("without AllowRawInit: the init has %d threads, command line %q: want the Go init", g.initThreads, g.initArgv)
	}
	if r.initThreads != 1 || strings.HasPrefix(r.initArgv, InitArg+"\x00") {
		t.Errorf("with AllowRawInit: the init has %d threads, command line %q: want the raw init", r.initThreads, r.initArgv)
	}
	if g.hostUID <= 0 || r.hostUID <= 0 {
		t.Errorf("host ids: Go %d, raw %d: want a host id of the range", g.hostUID, r.hostUID)
	}
	for _, run := range []rawCallerRun{g, r} {
		want := "Uid:\t" + strings.Repeat(strconv.FormatInt(run.hostUID, 10)+"\t", 3) + strconv.FormatInt(run.hostUID, 10) + "\n"
		groups := ""
		for _, l := range strings.Split(run.ids, "\n") {
			if g, ok := strings.CutPrefix(l, "Groups:"); ok {
				groups = strings.TrimSpace(g)
			}
		}
		if !strings.Contains(run.ids, want) || groups != "" {
			t.Errorf("the command's ids on the host:\n%s\nwant %q and no supplementary group", run.ids, want)
		}
		if run.holderCwd != "the sandbox's root" {
			t.Errorf("the holder's working directory %q, want the sandbox's root", run.holderCwd)
		}
	}
	for _, raw := range []bool{false, true} {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(ws, "made-"+strconv.FormatBool(raw)), &st); err != nil {
			t.Fatalf("raw %v: the file the command made: %v", raw, err)
		}
		if st.Uid != 0 || st.Gid != 0 {
			t.Errorf("raw %v: the command's file is owned by %d:%d on the host, want the workspace's owner 0:0 (idmapped)", raw, st.Uid, st.Gid)
		}
	}
	norm := func(s string) string { return strings.ReplaceAll(s, "made-true", "made-X") }
	if norm(g.out) != norm(strings.ReplaceAll(r.out, "made-true", "made-false")) {
		t.Errorf("the command saw differently:\nGo init:\n%s\nraw init:\n%s", g.out, r.out)
	}
	if strings.Contains(r.out, "wrote-ro") || !strings.Contains(r.out, "\nro\n") {
		t.Errorf("the read-only bind: %q", r.out)
	}
}

// runRaw runs spec to its end with the raw init allowed or not and returns its result,
// its output and whether the raw init was taken (rawTaken: one launch per process).
func runRaw(t *testing.T, spec *config.Config, raw bool) (*Result, string, bool) {
	t.Helper()
	rawAllowed.Store(raw)
	rawTaken.Store(false)
	defer rawAllowed.Store(false)
	var out strings.Builder
	c := Command(spec)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("raw %v: %v", raw, err)
	}
	return c.Result, out.String(), rawTaken.Load()
}

// A root caller's launch with a cgroup (v1 here: memory, pids, cpu) set up by the raw
// init: the raw init, which shares the launcher's memory, and the holder stay out of
// the group; the command is in every hierarchy of it from its start, sees its own
// cgroup as / (a cgroup namespace rooted at the group, as with the Go init), and holds
// no descriptor of the group's files (the tasks files the launcher opened); and the
// limits hold for it and all it forks as with the Go init: an OOM in the group kills
// the command, never the launcher (this test process), with the same exit status and
// report; a fork bomb stops at the pids limit, reported as such.
func TestRawRootCgroup(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a cgroup")
	}
	if cgroup.Mode() != cgroup.V1 {
		t.Skip("the raw init's cgroups are v1 only")
	}
	ws := testWorkspace(t)
	limited := func(args ...string) *config.Config {
		spec := compile(t, policy.Options{Workspace: ws, Args: args, Resources: policy.Resources{Memory: "64M", Pids: 32}}, nil)
		return withoutNotify(t, spec)
	}

	// the placement, seen from the host while the command waits
	spec := limited("/bin/sh", "-c", "grep -E ':(memory|pids):' /proc/self/cgroup; echo ready; read x")
	runs := map[bool]rawCallerRun{}
	for _, raw := range []bool{false, true} {
		runs[raw] = runRawCgroup(t, spec, raw)
	}
	g, r := runs[false], runs[true]
	if r.initThreads != 1 || g.initThreads < 2 {
		t.Errorf("init threads: Go %d, raw %d: want the raw init taken with AllowRawInit only", g.initThreads, r.initThreads)
	}
	if g.out != r.out || !strings.Contains(r.out, ":memory:/\n") {
		t.Errorf("the command's own cgroups:\nGo init:\n%s\nraw init:\n%s\nwant both at / of their namespace", g.out, r.out)
	}
	if !strings.Contains(r.ids, "command in group") || strings.Contains(r.ids, "init in group") || strings.Contains(r.ids, "holder in group") ||
		strings.Contains(r.ids, " holds ") {
		t.Errorf("raw init: %s; want the command alone in the group, no file of it held", r.ids)
	}
	if !strings.Contains(g.ids, "command in group") || !strings.Contains(g.ids, "init in group") {
		t.Errorf("Go init: %s; want the init and the command in the group", g.ids)
	}

	// an OOM in the group: the command killed, the launcher alive (this process), the
	// same report
	oom := limited("/bin/sh", "-c", "head -c 300M /dev/zero | tail -n 1 >/dev/null; echo after $?")
	var oomRes [2]*Result
	for i, raw := range []bool{false, true} {
		res, out, taken := runRaw(t, oom, raw)
		if taken != raw {
			t.Errorf("OOM run: raw init taken %v, want %v", taken, raw)
		}
		if !res.OOMKilled || res.LimitHit != "memory" || !strings.Contains(out, "after 137") {
			t.Errorf("raw %v: an OOM in the group: %+v, output %q; want the command's tail killed, limit-hit memory", raw, res, out)
		}
		oomRes[i] = res
	}
	if oomRes[0].ExitCode != oomRes[1].ExitCode {
		t.Errorf("OOM exit: Go init %d, raw init %d", oomRes[0].ExitCode, oomRes[1].ExitCode)
	}

	// a fork bomb at the pids limit (32): refused forks, said so
	bomb := limited("/bin/sh", "-c", "i=0; while [ $i -lt 64 ]; do sleep 1 & i=$((i+1)); done 2>/dev/null; wait; echo bombed")
	for _, raw := range []bool{false, true} {
		res, out, taken := runRaw(t, bomb, raw)
		if taken != raw {
			t.Errorf("pids run: raw init taken %v, want %v", taken, raw)
		}
		if res.LimitHit != "pids" || res.PidsPeak > 32 {
			t.Errorf("raw %v: a fork bomb under a 32-process limit: %+v, output %q; want limit-hit pids", raw, res, out)
		}
	}
}

// runRawCgroup is runRawCaller for a launch with a cgroup: ids says, from the host,
// which of the command, the init and the holder are in the sandbox's memory and pids
// groups, and names any file of a cgroup hierarchy (a tasks file, a v2 group's
// directory) the command or the init holds open.
func runRawCgroup(t *testing.T, spec *config.Config, raw bool) rawCallerRun {
	return runRawCgroupAs(t, spec, raw, func(cgroupFile, id string) bool {
		n := 0
		for _, l := range strings.Split(cgroupFile, "\n") {
			if (strings.Contains(l, ":memory:") || strings.Contains(l, ":pids:")) && strings.Contains(l, id) {
				n++
			}
		}
		return n == 2
	})
}

// runRawCgroupAs is runRawCgroup with in saying whether a /proc/PID/cgroup's text puts
// the process in the sandbox id's group.
func runRawCgroupAs(t *testing.T, spec *config.Config, raw bool, in func(cgroupFile, id string) bool) rawCallerRun {
	t.Helper()
	rawAllowed.Store(raw)
	rawTaken.Store(false)
	defer rawAllowed.Store(false)
	var log eventLog
	c := Command(spec)
	c.Events = log.add
	stdinR, stdinW, _ := os.Pipe()
	stdoutR, stdoutW, _ := os.Pipe()
	c.Stdin, c.Stdout, c.Stderr = stdinR, stdoutW, os.Stderr
	err := c.Start()
	stdinR.Close()
	stdoutW.Close()
	defer stdinW.Close()
	defer stdoutR.Close()
	if err != nil {
		t.Fatalf("raw %v: Start: %v", raw, err)
	}
	br := bufio.NewReader(stdoutR)
	var r rawCallerRun
	for {
		line, err := br.ReadString('\n')
		if line == "ready\n" || err != nil {
			break
		}
		r.out += line
	}
	var cmdPid int
	for _, e := range log.events() {
		if e.Exec {
			cmdPid = e.Pid
		}
	}
	init := c.init.pid
	kids, _ := os.ReadFile("/proc/" + strconv.Itoa(init) + "/task/" + strconv.Itoa(init) + "/children")
	holder := strings.Fields(string(kids))
	id := c.SandboxID()
	inGroup := func(pid string) bool {
		b, _ := os.ReadFile("/proc/" + pid + "/cgroup")
		return in(string(b), id)
	}
	for who, pid := range map[string]string{"command": strconv.Itoa(cmdPid), "init": strconv.Itoa(init)} {
		if inGroup(pid) {
			r.ids += who + " in group; "
		}
		fds, _ := os.ReadDir("/proc/" + pid + "/fd")
		for _, f := range fds {
			if l, _ := os.Readlink("/proc/" + pid + "/fd/" + f.Name()); strings.HasPrefix(l, "/sys/fs/cgroup") {
				r.ids += who + " holds " + l + "; "
			}
		}
	}
	if len(holder) > 0 && inGroup(holder[0]) {
		r.ids += "holder in group; "
	}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(init) + "/task")
	r.initThreads = len(tasks)
	stdinW.Write([]byte("go\n"))
	io.Copy(io.Discard, br)
	if err := c.Wait(); err != nil {
		t.Errorf("raw %v: Wait: %v", raw, err)
	}
	return r
}

// v2Group is a cgroup v2 group without controllers on the unified hierarchy of a hybrid
// host: placement and teardown as cgroup's v2 group, no limits (there are none here).
type v2Group struct {
	dir string
	fd  int
}

func (g *v2Group) Kind() cgroup.Kind                          { return cgroup.V2 }
func (g *v2Group) CloneFd() int                               { return g.fd }
func (g *v2Group) Add(int) error                              { return nil }
func (g *v2Group) Stats() cgroup.Stats                        { return cgroup.Stats{} }
func (g *v2Group) LimitEvents() (oomKills, pidsMaxHits int64) { return 0, 0 }
func (g *v2Group) Dirs() []cgroup.Dir                         { return []cgroup.Dir{{Path: g.dir}} }
func (g *v2Group) Destroy() error {
	if g.fd < 0 {
		return nil
	}
	os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0)
	unix.Close(g.fd)
	g.fd = -1
	var err error
	for range 1000 {
		if err = unix.Rmdir(g.dir); err != unix.EBUSY {
			break
		}
		time.Sleep(time.Millisecond)
	}
	return err
}

// fakeV2 makes each sandbox's group a new directory of parent, a cgroup v2 group
// without controllers (this hybrid host's unified hierarchy): placement and teardown
// as cgroup's v2 groups, no limits.
func fakeV2(t *testing.T, parent string) {
	old := newCgroup
	t.Cleanup(func() { newCgroup = old })
	newCgroup = func(_ *specs.LinuxResources, o cgroup.Options) (cgroup.Group, error) {
		dir := filepath.Join(parent, "gosbx-"+o.ID)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Rmdir(dir)
			return nil, err
		}
		return &v2Group{dir: dir, fd: fd}, nil
	}
}

// unifiedV2 is this host's cgroup v2 hierarchy beside the v1 ones, or "".
func unifiedV2() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup/unified", &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		return ""
	}
	return "/sys/fs/cgroup/unified"
}

// inV2 says whether a /proc/PID/cgroup's text puts the process in gosbx-<id>.
func inV2(cgroupFile, id string) bool {
	for _, l := range strings.Split(cgroupFile, "\n") {
		if strings.HasPrefix(l, "0::") && strings.HasSuffix(l, "/gosbx-"+id) {
			return true
		}
	}
	return false
}

// rawV2Env names the delegated group TestRawCgroupV2Delegated's child side runs in.
const rawV2Env = "GOSBX_RAWV2_DELEGATED"

// With a cgroup v2 group (CLONE_INTO_CGROUP), a caller other than root, in a subtree
// delegated to it (a directory of this host's unified hierarchy, no controllers, owned
// by uid 65534, the test binary run in it as that uid): the raw init is cloned outside
// the group and the command's process stage into it (clone3): from the host the
// command is in the group and the raw init and the holder are not, where the Go init
// is cloned into it; the command sees its group as / of its cgroup namespace with both,
// and holds no descriptor of a cgroup hierarchy (the raw init's own descriptors are
// not readable to that uid, it is not dumpable: TestRawRootCgroup checks them as root).
// A root caller's host id may not clone into a v2 group (its group's ancestors'
// cgroup.procs are root's): it takes the Go init.
func TestRawCgroupV2Delegated(t *testing.T) {
	unified := unifiedV2()
	if unified == "" {
		t.Skip("no cgroup v2 hierarchy here")
	}
	if d := os.Getenv(rawV2Env); d != "" {
		rawCgroupV2Side(t, d)
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root: a delegated group")
	}
	// a root caller: the Go init
	fakeV2(t, unified)
	ws := testWorkspace(t)
	spec := withoutNotify(t, compile(t, policy.Options{Workspace: ws, Resources: policy.Resources{Memory: "64M"},
		Args: []string{"/bin/sh", "-c", "grep '^0::' /proc/self/cgroup; echo ready; read x"}}, nil))
	if r := runRawCgroupAs(t, spec, true, inV2); r.initThreads < 2 || !strings.Contains(r.ids, "init in group") {
		t.Errorf("root with a v2 group: %d init threads, %q: want the Go init, in the group", r.initThreads, r.ids)
	}

	// a caller other than root, delegated a subtree
	deleg := filepath.Join(unified, fmt.Sprintf("gosbx-test-delegated-%d", os.Getpid()))
	if err := os.Mkdir(deleg, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(deleg)
	for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
		if err := os.Chown(filepath.Join(deleg, f), 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		self, "-test.run=^TestRawCgroupV2Delegated$", "-test.v")
	cmd.Env = append(os.Environ(), rawV2Env+"="+deleg)
	gate, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// in the delegated group before it launches anything
	werr := os.WriteFile(filepath.Join(deleg, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0)
	gate.Write([]byte("go\n"))
	gate.Close()
	err = cmd.Wait()
	t.Logf("the delegated caller's side:\n%s", out.String())
	if werr != nil || err != nil || !strings.Contains(out.String(), "--- PASS") {
		t.Errorf("the delegated caller's side: %v, %v:\n%s", werr, err, out.String())
	}
}

// rawCgroupV2Side is TestRawCgroupV2Delegated's side run as the delegated uid, in
// deleg once its stdin says so.
func rawCgroupV2Side(t *testing.T, deleg string) {
	bufio.NewReader(os.Stdin).ReadString('\n')
	fakeV2(t, deleg)
	ws := testWorkspace(t)
	spec := compile(t, policy.Options{Workspace: ws, Resources: policy.Resources{Memory: "64M"},
		Args: []string{"/bin/sh", "-c", "grep '^0::' /proc/self/cgroup; echo ready; read x"}}, nil)
	g := runRawCgroupAs(t, spec, false, inV2)
	r := runRawCgroupAs(t, spec, true, inV2)
	t.Logf("uid %d: Go init %+v; raw init %+v", os.Getuid(), g, r)
	if r.initThreads != 1 || g.initThreads < 2 {
		t.Errorf("init threads: Go %d, raw %d: want the raw init taken with AllowRawInit only", g.initThreads, r.initThreads)
	}
	if g.out != "0::/\n" || r.out != g.out {
		t.Errorf("the command's own v2 cgroup: Go init %q, raw init %q; want 0::/ with both", g.out, r.out)
	}
	if r.ids != "command in group; " {
		t.Errorf("raw init: %q; want the command alone in the group", r.ids)
	}
	if !strings.Contains(g.ids, "command in group") || !strings.Contains(g.ids, "init in group") {
		t.Errorf("Go init: %q; want the init and the command in the group", g.ids)
	}
}

// A root caller's read-write bind that cannot be idmapped (an overlayfs workspace,
// mounted in a mount namespace of this test's own): under the default
// root_identity_map: allow the raw init's launch, like the Go init's, gives the host id
// back and runs the command as host uid 0 (Result.IdentityMap says why, the same
// words); the raw init was tried first (the idmap follows its clone).
func TestRawRootIdentityFallback(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: a root caller, an overlay mount")
	}
	if !ownmountns.Active() {
		ownmountns.Rerun(t)
		return
	}
	base := testWorkspace(t)
	ws := filepath.Join(base, "mnt")
	for _, d := range []string{"lo", "up", "wk", "mnt"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mount("gosbx-test", ws, "overlay", unix.MS_NOSUID|unix.MS_NODEV,
		"lowerdir="+filepath.Join(base, "lo")+",upperdir="+filepath.Join(base, "up")+",workdir="+filepath.Join(base, "wk")); err != nil {
		t.Skipf("overlayfs: %v", err)
	}
	defer unix.Unmount(ws, unix.MNT_DETACH)
	var maps [2]string
	for i, raw := range []bool{false, true} {
		marker := filepath.Join(ws, "made-"+strconv.FormatBool(raw))
		spec := withoutNotify(t, compile(t, policy.Options{Workspace: ws, Args: []string{"touch", marker}}, nil))
		res, out, taken := runRaw(t, spec, raw)
		var st unix.Stat_t
		if err := unix.Stat(marker, &st); err != nil || st.Uid != 0 || res.ExitCode != 0 {
			t.Errorf("raw %v: %+v, output %q, the command's file: %v (owner %d)", raw, res, out, err, st.Uid)
		}
		if taken != raw || res.IdentityMap == "" || res.HostUID != -1 {
			t.Errorf("raw %v: raw init tried %v, identity map %q, host id %d: want the fallback to host uid 0", raw, taken, res.IdentityMap, res.HostUID)
		}
		maps[i] = res.IdentityMap
	}
	if maps[0] != maps[1] {
		t.Errorf("why host uid 0: Go init %q, raw init %q", maps[0], maps[1])
	}
}
