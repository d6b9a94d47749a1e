package nsinit

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

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
