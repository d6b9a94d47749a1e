package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/ownmountns"
)

// Leak soak (issue 7, item 8): many launches of `gosbx exec`, one after another and
// from 8 concurrent callers, leave the host with the same processes, mounts and cgroups
// as before. GOSBX_SOAK=full (make soak) runs 1,000 sequential launches and 8 × 100
// concurrent ones; the normal test run does 100 and 8 × 10.
//
// The test is not parallel, so no other test of the package runs during it (Go starts
// parallel tests only once every sequential top-level test has returned) and the
// snapshots see only its own launches; it runs in a mount namespace of its own
// (runInOwnMountNS), so that mounts elsewhere on the host do not show in its mount table.

const (
	soakConcurrency = 8
	soakSettle      = 2 * time.Second // the after-snapshot may take this long to match
	soakMaxProblems = 20              // stop launching after this many failures
)

// soakScale reads GOSBX_SOAK: the sequential launch count N and the launches per
// concurrent caller M.
func soakScale(t *testing.T) (n, m int) {
	t.Helper()
	switch v := os.Getenv("GOSBX_SOAK"); v {
	case "":
		return 100, 10
	case "full":
		return 1000, 100
	default:
		t.Fatalf("GOSBX_SOAK=%q: want unset (reduced soak) or full", v)
	}
	return 0, 0
}

// ---------------------------------------------------------------------------
// Host snapshot.

// hostSnap is what a launch must not leave behind on the host.
type hostSnap struct {
	procs      map[string]bool // "pid argv" of processes that are ours (see soakProcs)
	others     map[string]bool // other gosbx processes on the host, not counted
	mountLines []string        // /proc/self/mountinfo of the host's mount namespace
	base       string          // the sandbox's base directory: no mount may appear under it
	cgroups    []string        // gosbx-* groups under the test process's own groups
}

// takeHostSnap snapshots the host as seen from the test process. base is the sandbox's
// base directory (the workspace is under it).
func takeHostSnap(base string) (hostSnap, error) {
	var h hostSnap
	var err error
	if h.procs, h.others, err = soakProcs(base); err != nil {
		return h, err
	}
	if h.mountLines, err = ownmountns.Table(); err != nil {
		return h, err
	}
	h.base = base
	h.cgroups = gosbxCgroups()
	return h, nil
}

// soakProcs lists the processes that a launch of this test could leave behind: every
// process whose argv mentions base (the workspace's parent: the sandboxed commands of
// the mix are named by a path in it) or the binary under test (setpriv running it),
// whose executable is the binary under test (gosbx exec, the sandbox's init
// "gosbx-init"), or whose parent is the test process (a zombie has no argv). The test
// process itself is not listed. Processes of other gosbx binaries (another test run on
// the same host) are in others: reported, not counted.
func soakProcs(base string) (ours, others map[string]bool, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, err
	}
	self := os.Getpid()
	ours, others = map[string]bool{}, map[string]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + e.Name()
		raw, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue // gone meanwhile
		}
		argv := strings.TrimRight(strings.ReplaceAll(string(raw), "\x00", " "), " ")
		exe, _ := os.Readlink(dir + "/exe")
		mine := strings.Contains(argv, base) ||
			(gosbxBin != "" && (exe == gosbxBin || strings.Contains(argv, gosbxBin)))
		if !mine {
			if st, err := os.ReadFile(dir + "/stat"); err == nil && statPPid(string(st)) == self {
				mine = true
			}
		}
		if argv == "" {
			argv = "(no argv: a zombie)"
		}
		key := fmt.Sprintf("%d %s", pid, argv)
		switch {
		case mine:
			ours[key] = true
		case strings.Contains(argv, "gosbx") || strings.Contains(exe, "gosbx"):
			others[key] = true
		}
	}
	return ours, others, nil
}

// statPPid is field 4 of /proc/PID/stat (after the parenthesised comm).
func statPPid(stat string) int {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return -1
	}
	return n
}

// gosbxCgroups lists the gosbx-* directories under the calling process's own groups in
// the v1 memory, pids, cpu and cpuacct hierarchies and in the unified hierarchy (and
// its /gosbx, the default v2 parent), sorted.
func gosbxCgroups() []string {
	const prefix = "gosbx-"
	own := map[string]string{} // controller ("" for v2) → path
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			parts := strings.SplitN(line, ":", 3)
			if len(parts) != 3 {
				continue
			}
			if parts[1] == "" {
				own[""] = parts[2]
				continue
			}
			for _, c := range strings.Split(parts[1], ",") {
				own[c] = parts[2]
			}
		}
	}
	var dirs []string
	for _, c := range []string{"memory", "pids", "cpu", "cpuacct"} {
		if p, ok := own[c]; ok {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, p))
		}
	}
	for _, mp := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		var st unix.Statfs_t
		if unix.Statfs(mp, &st) != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
			continue
		}
		dirs = append(dirs, filepath.Join(mp, own[""]), filepath.Join(mp, "gosbx"))
		break
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			p := filepath.Join(d, e.Name())
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// soakLaunched holds the sandbox ids of the launches this test started (their first
// status line's sandbox-id): gosbx names a sandbox's group gosbx-<sandbox id>, so a
// group is this test's when its id is here (another test run on the same host makes
// groups under the same parent).
var soakLaunched = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

func launched(id string) {
	soakLaunched.Lock()
	defer soakLaunched.Unlock()
	soakLaunched.m[id] = true
}

// launchedFrom records the sandbox id of the first status line of a launch, read from
// r (its --status-fd), and returns it; "" when the launch had none (it failed first).
func launchedFrom(r *bufio.Reader) string {
	line, _ := r.ReadBytes('\n')
	var ev struct {
		ID string `json:"sandbox-id"`
	}
	if json.Unmarshal(line, &ev) == nil && ev.ID != "" {
		launched(ev.ID)
	}
	return ev.ID
}

// ourGroup says whether a group was made by a gosbx this test started.
func ourGroup(path string) bool {
	soakLaunched.Lock()
	defer soakLaunched.Unlock()
	return soakLaunched.m[strings.TrimPrefix(filepath.Base(path), "gosbx-")]
}

// newGroups is the groups of cur, made by this test's launches, that before lacks.
func newGroups(cur, before []string) []string {
	var out []string
	for _, g := range stringsMinus(cur, before) {
		if ourGroup(g) {
			out = append(out, g)
		}
	}
	return out
}

// leaks compares two snapshots: what appeared (processes, mounts, cgroups) is a leak.
// What disappeared (a process of someone else that ended) is not.
func (h hostSnap) leaks(after hostSnap) []string {
	var out []string
	for p := range after.procs {
		if !h.procs[p] {
			out = append(out, "process left running: "+p)
		}
	}
	added, removed := ownmountns.Changes(h.mountLines, after.mountLines)
	if len(added)+len(removed) > 0 {
		out = append(out, fmt.Sprintf("host mount table: %d entries before, %d after", len(h.mountLines), len(after.mountLines)))
		for _, l := range added {
			out = append(out, "  new mount: "+l)
		}
		for _, l := range removed {
			out = append(out, "  mount gone: "+l)
		}
	}
	for _, l := range added {
		if mp := ownmountns.MountPoint(l); mp == h.base || strings.HasPrefix(mp, h.base+"/") {
			out = append(out, "mount left under the workspace: "+mp)
		}
	}
	for _, g := range newGroups(after.cgroups, h.cgroups) {
		out = append(out, "cgroup left: "+g)
	}
	sort.Strings(out)
	return out
}

// stringsMinus is a − b as multisets, in a's order.
func stringsMinus(a, b []string) []string {
	n := map[string]int{}
	for _, s := range b {
		n[s]++
	}
	var out []string
	for _, s := range a {
		if n[s] > 0 {
			n[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// settledLeaks polls, for up to soakSettle, until the host matches before again.
func settledLeaks(before hostSnap, base string) ([]string, hostSnap, error) {
	deadline := time.Now().Add(soakSettle)
	for {
		after, err := takeHostSnap(base)
		if err != nil {
			return nil, after, err
		}
		l := before.leaks(after)
		if len(l) == 0 || time.Now().After(deadline) {
			return l, after, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// Launches.

// soakCase is one kind of launch and the exit status it must give.
type soakCase struct {
	name string
	args []string // gosbx exec flags, "--", command
	want int
	// also, if set, is a second acceptable outcome: exit 125 whose output has this
	// text (a timeout that expires while the sandbox is still being built).
	also string
}

func soakCases(s *sandbox) []soakCase {
	// A sleep named by a path in the workspace: a background job that outlived its
	// sandbox would show in the process snapshot by its argv.
	sleep := s.sleepLink("soak")
	return []soakCase{
		{name: "true", args: []string{"--", "true"}, want: 0},
		{name: "background job", args: []string{"--", shellPath, "-c", "sleep 0.01 & " + sleep + " 60 &"}, want: 0},
		{name: "failing command", args: []string{"--", shellPath, "-c", "exit 3"}, want: 3},
		{name: "command not found", args: []string{"--", "gosbx-soak-no-such-command"}, want: 127},
		// a limit asked for: a cgroup where one can be made (root's default process limit
		// is an rlimit), best effort so that nobody runs without one
		{name: "process limit", args: []string{"--pids", "64", "--limits", "best-effort", "--", shellPath, "-c", sleep + " 0.01 & wait"}, want: 0},
		// Under load the limit may expire before the command starts: that is a kill
		// too, reported as a setup failure at the step "timeout".
		{name: "timeout", args: []string{"--timeout", "200ms", "--", shellPath, "-c", sleep + " 60 & " + sleep + " 60"},
			want: 124, also: "setup failed at timeout"},
	}
}

// launch runs one `gosbx exec` as s's caller, without touching s.t (safe from any
// goroutine), and returns an error unless it exited with c.want.
func (s *sandbox) launch(c soakCase) error {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := s.command(ctx, append([]string{"--status-fd", "3"}, c.args...)...)
	cmd.Stdin = bytes.NewReader(nil)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	sr, sw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer sr.Close()
	cmd.ExtraFiles = []*os.File{sw}
	err = cmd.Start()
	sw.Close()
	if err == nil {
		status := bufio.NewReader(sr)
		launchedFrom(status) // the sandbox's id, before its group could be left
		io.Copy(io.Discard, status)
		err = cmd.Wait()
	}
	code := exitCode(err, cmd.ProcessState)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: gosbx did not finish within %v (killed); output %q", c.name, runLimit, clip(stderr.String()))
	case cmd.ProcessState == nil:
		return fmt.Errorf("%s: cannot start gosbx: %v", c.name, err)
	case code == 125 && c.also != "" && strings.Contains(stderr.String(), c.also):
		return nil
	case code != c.want:
		return fmt.Errorf("%s: exit %d, want %d; output %q", c.name, code, c.want, clip(stderr.String()))
	}
	return nil
}

// problems collects failures from many goroutines; full says to stop launching.
type problems struct {
	mu   sync.Mutex
	list []string
	n    atomic.Int32
}

func (p *problems) add(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n.Add(1)
	if len(p.list) < soakMaxProblems {
		p.list = append(p.list, fmt.Sprintf(format, a...))
	}
}

func (p *problems) full() bool { return p.n.Load() >= soakMaxProblems }

// soakCLI is the soak for one caller: n sequential `gosbx exec -- true`, then
// soakConcurrency callers × m launches of the mix, and the host compared before/after.
func soakCLI(t *testing.T, c caller, n, m int) {
	s := newSandbox(t, c)
	cases := soakCases(s)
	before, err := takeHostSnap(s.base)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before: %d processes of ours, %d host mounts, %d gosbx cgroups", len(before.procs), len(before.mountLines), len(before.cgroups))
	for p := range before.procs {
		t.Logf("before: process %s", p)
	}
	// One launch of each kind first, so a case that is broken in itself fails here,
	// once, with its output. (Only what appears counts as a leak: a leftover group of
	// an earlier, dead launcher that gosbx's gc removes meanwhile is not one.)
	for _, sc := range cases {
		if err := s.launch(sc); err != nil {
			t.Fatalf("first launch: %v", err)
		}
	}
	var p problems
	start := time.Now()

	// Sequential launches. The cgroups are compared after each one as well: gosbx
	// removes the groups of dead launchers at the next launch, so one launch's leaked
	// group would otherwise be hidden by the launch after it.
	cgroupLeakSeen := false
	for i := 0; i < n && !p.full(); i++ {
		if err := s.launch(cases[0]); err != nil {
			p.add("sequential launch %d: %v", i, err)
			continue
		}
		if cgroupLeakSeen {
			continue
		}
		if left := newGroups(gosbxCgroups(), before.cgroups); len(left) > 0 {
			deadline := time.Now().Add(soakSettle)
			for len(left) > 0 && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
				left = newGroups(gosbxCgroups(), before.cgroups)
			}
			if len(left) > 0 {
				cgroupLeakSeen = true
				p.add("sequential launch %d left its cgroup after gosbx exited: %v", i, left)
			}
		}
	}
	seq := time.Since(start)

	// Concurrent callers, each running the mix.
	start = time.Now()
	var wg sync.WaitGroup
	for g := 0; g < soakConcurrency; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < m && !p.full(); i++ {
				if err := s.launch(cases[(g+i)%len(cases)]); err != nil {
					p.add("caller %d, launch %d: %v", g, i, err)
				}
			}
		}(g)
	}
	wg.Wait()
	conc := time.Since(start)
	t.Logf("%d sequential launches in %v, %d×%d concurrent in %v", n, seq.Round(time.Millisecond), soakConcurrency, m, conc.Round(time.Millisecond))

	for _, e := range p.list {
		t.Error(e)
	}
	if n := p.n.Load(); n > int32(len(p.list)) {
		t.Errorf("… and %d more failures", n-int32(len(p.list)))
	}
	leaks, after, err := settledLeaks(before, s.base)
	if err != nil {
		t.Fatal(err)
	}
	for p := range after.others {
		if !before.others[p] {
			t.Logf("not counted (another gosbx binary, not this test's): %s", p)
		}
	}
	for _, l := range leaks {
		t.Errorf("after the soak (and %v to settle): %s", soakSettle, l)
	}
}

func TestSoakCLI(t *testing.T) {
	requireBinary(t)
	if !ownmountns.Active() {
		ownmountns.Rerun(t, "GOSBX_TEST_BINARY="+gosbxBin)
		return
	}
	n, m := soakScale(t)
	// Not parallel: see the top of the file. The nobody variant is smaller.
	t.Run("root", func(t *testing.T) { soakCLI(t, rootCaller, n, m) })
	t.Run("nobody", func(t *testing.T) { soakCLI(t, nobodyCaller, n/4, m/2) })
}

// TestSoakDetectsLeaks: the comparison the soak relies on sees each kind of leak: a
// process of the workspace left running (a real one), a mount under the workspace and
// a group of one of the test's launches (added to the snapshot: a real mount or group
// on the host would disturb another soak running on it). And the cgroup snapshot looks
// where gosbx really makes its groups.
func TestSoakDetectsLeaks(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	soakSeesSandboxGroups(t, s)
	before, err := takeHostSnap(s.base)
	if err != nil {
		t.Fatal(err)
	}
	if l := before.leaks(before); len(l) != 0 {
		t.Fatalf("a snapshot differs from itself: %v", l)
	}

	sleep := s.sleepLink("detect")
	cmd := exec.Command(sleep, "60")
	must(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()

	after, err := takeHostSnap(s.base)
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(s.ws, "a dir")
	after.mountLines = append(after.mountLines,
		"999 1 0:99 / "+strings.ReplaceAll(mnt, " ", `\040`)+" rw,nosuid,nodev - tmpfs gosbx-soak rw")
	const fakeID = "ffffffff00000001" // no real sandbox
	launched(fakeID)
	group := "/sys/fs/cgroup/pids/gosbx-" + fakeID
	after.cgroups = append(after.cgroups, group, "/sys/fs/cgroup/pids/gosbx-ffffffff00000002") // the second is not ours

	got := strings.Join(before.leaks(after), "\n")
	for _, w := range []string{
		"process left running: " + strconv.Itoa(cmd.Process.Pid) + " " + sleep + " 60",
		"host mount table: ", "new mount: 999 ", "mount left under the workspace: " + mnt,
		"cgroup left: " + group,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("the leak check did not report %q; it reported:\n%s", w, got)
		}
	}
	if strings.Contains(got, "gosbx-ffffffff00000002") {
		t.Errorf("a group of another launcher was reported:\n%s", got)
	}
}

// soakSeesSandboxGroups: while a sandbox that has a cgroup runs, its group is among
// those the snapshot lists (so the cgroup comparison looks where gosbx makes groups).
func soakSeesSandboxGroups(t *testing.T, s *sandbox) {
	t.Helper()
	ctx := s.limitCtx(runLimit)
	// a limit asked for: a cgroup wherever one can be made (a root caller's default
	// process limit is an rlimit, without one)
	cmd := s.command(ctx, "--status-fd", "3", "--pids", "64", "--limits", "best-effort", "--", shellPath, "-c", "sleep 0.5")
	r, w, err := os.Pipe()
	must(t, err)
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	must(t, cmd.Start())
	w.Close()
	br := bufio.NewReader(r)
	first := launchedFrom(br)
	var seen []string
	for deadline := time.Now().Add(time.Second); len(seen) == 0 && time.Now().Before(deadline); {
		seen = newGroups(gosbxCgroups(), nil)
		time.Sleep(10 * time.Millisecond)
	}
	rest, _ := io.ReadAll(br)
	status := append([]byte("sandbox "+first+": "), rest...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gosbx exec: %v; status %s", err, status)
	}
	switch {
	case bytes.Contains(status, []byte(`"limits":"cgroup-v`)) && len(seen) == 0:
		t.Errorf("the sandbox had a cgroup (%s) but the snapshot saw none", bytes.TrimSpace(status))
	case len(seen) == 0:
		t.Logf("the sandbox had no cgroup here: %s", bytes.TrimSpace(status))
	default:
		t.Logf("while the sandbox ran: %v", seen)
	}
}
