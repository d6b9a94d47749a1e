package mounts

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit/config"
)

// The default spec's root, built the way the sandbox's init builds it: in a child in new
// user, mount, pid, network, ipc, uts and cgroup namespaces (nsinit's clone flags), with
// the bind sources opened or cloned by the parent (the launcher) and passed as
// descriptors. The child reports the time of every step of Setup/SetupTrees and
// PivotRoot (phaseHook), then checks the root it built.
//
//	go test -count=1 -run 'TestDefaultSpec' -v ./mounts/                 # one run each, checks
//	GOSBX_MOUNTS_TIMING_RUNS=200 go test -count=1 -run TestDefaultSpecTiming -v ./mounts/
//
// TestDefaultSpecPropagation runs it under a "launcher" whose mount namespace has shared
// propagation (a systemd host): nothing the sandbox mounts may appear there, and nothing
// mounted there afterwards may appear in the sandbox.

const (
	modeEnv    = "GOSBX_MOUNTS_TEST_MODE"   // trees | paths: how bind sources arrive
	nfdEnv     = "GOSBX_MOUNTS_TEST_NFDS"   // how many, from fd 3
	waitEnv    = "GOSBX_MOUNTS_TEST_WAIT"   // "1": say READY, wait for a line on stdin, check inward propagation
	runsEnv    = "GOSBX_MOUNTS_TIMING_RUNS" // runs of TestDefaultSpecTiming
	wsDest     = "/var/tmp/ws"              // where the default spec binds the workspace
	inwardName = "gosbx-mounts-test-inward" // a file on a tmpfs the launcher mounts after the sandbox is built
	launchEnv  = "GOSBX_MOUNTS_TEST_LAUNCH" // in the launcher child: the mode of the init it starts
	sharedRoot = "GOSBX_MOUNTS_TEST_SHARED" // in the launcher child: make its mounts rshared first
	initFlags  = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET |
		syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP
)

func init() {
	scenarios["default"] = scenarioDefault
	scenarios["launcher"] = scenarioLauncher
}

// defaultSpec mirrors `gosbx policy export --oci --workspace /var/tmp/ws -- /bin/true`
// (the agent profile, as root), with the workspace's source at ws.
func defaultSpec(ws string) *config.Config {
	bind := func(p string, opts ...string) specs.Mount {
		return specs.Mount{Destination: p, Type: "bind", Source: p, Options: opts}
	}
	fs := func(typ, p string, opts ...string) specs.Mount {
		return specs.Mount{Destination: p, Type: typ, Source: typ, Options: opts}
	}
	dev := func(p string) specs.Mount { return bind(p, "bind", "nosuid", "noexec", "ro") }
	mounts := []specs.Mount{
		bind("/etc", "rbind", "nosuid", "nodev", "ro"),
		bind("/usr", "rbind", "nosuid", "nodev", "ro"),
		fs("tmpfs", "/tmp", "nosuid", "nodev", "mode=1777"),
		fs("tmpfs", "/run", "nosuid", "nodev", "mode=0755"),
		fs("tmpfs", "/root", "nosuid", "nodev", "mode=0700"),
		fs("tmpfs", "/dev", "nosuid", "noexec", "mode=0755", "ro"),
		fs("proc", "/proc", "nosuid", "nodev", "noexec"),
		fs("tmpfs", "/var/tmp", "nosuid", "nodev", "mode=1777"),
		dev("/dev/null"), dev("/dev/zero"), dev("/dev/full"), dev("/dev/random"), dev("/dev/urandom"), dev("/dev/tty"),
		fs("devpts", "/dev/pts", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"),
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777"}},
		{Destination: wsDest, Type: "bind", Source: ws, Options: []string{"rbind", "nosuid", "nodev"}},
	}
	links := []Symlink{{Path: "/dev/fd", Target: "/proc/self/fd"}, {Path: "/dev/stdin", Target: "/proc/self/fd/0"},
		{Path: "/dev/stdout", Target: "/proc/self/fd/1"}, {Path: "/dev/stderr", Target: "/proc/self/fd/2"},
		{Path: "/dev/ptmx", Target: "pts/ptmx"}, {Path: "/bin", Target: "usr/bin"}, {Path: "/sbin", Target: "usr/sbin"},
		{Path: "/lib", Target: "usr/lib"}, {Path: "/lib64", Target: "usr/lib64"}}
	ro := []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
	return &config.Config{
		Mounts: mounts,
		Linux: &config.Linux{
			ReadonlyPaths: ro,
			MaskedPaths: []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/sched_debug",
				"/proc/scsi", "/proc/timer_list", "/proc/timer_stats", "/etc/shadow", "/etc/shadow-", "/etc/gshadow",
				"/etc/gshadow-", "/etc/ssl/private", "/etc/security/opasswd"},
		},
		Symlinks:         links,
		ReadonlyOptional: ro,
	}
}

// sourceFds opens (paths) or clones (trees) the bind sources of spec as the launcher
// does; the caller closes them.
func sourceFds(spec *config.Config, mode string) ([]*os.File, error) {
	var out []*os.File
	if mode == "trees" {
		trees, err := CloneSources(spec)
		if err != nil {
			return nil, err
		}
		for _, t := range trees {
			out = append(out, os.NewFile(uintptr(t.Fd()), t.Path()))
		}
		return out, nil
	}
	for _, p := range BindSources(spec) {
		fd, err := OpenSourcePath(p)
		if err != nil {
			for _, f := range out {
				f.Close()
			}
			return nil, err
		}
		out = append(out, os.NewFile(uintptr(fd), p))
	}
	return out, nil
}

// initCommand is the child that plays the sandbox's init: scenario "default" in the
// init's namespaces, uid 0 inside mapped to the caller's uid.
func initCommand(ctx context.Context, mode, ws string, fds []*os.File, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{scenarioEnv + "=default", baseEnv + "=" + ws,
		modeEnv + "=" + mode, nfdEnv + "=" + strconv.Itoa(len(fds))}, env...)...)
	cmd.ExtraFiles = fds
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  initFlags,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	return cmd
}

func scenarioDefault(c *checker, ws string) {
	spec := defaultSpec(ws)
	n, _ := strconv.Atoi(os.Getenv(nfdEnv))
	fds := make([]int, n)
	for i := range fds {
		fds[i] = 3 + i
	}
	type stamp struct {
		step, path string
		at         time.Time
	}
	stamps := make([]stamp, 0, 64)
	phaseHook = func(step, path string) { stamps = append(stamps, stamp{step, path, time.Now()}) }
	setupRoot := Setup
	if os.Getenv(modeEnv) == "trees" {
		setupRoot = SetupTrees
	}
	start := time.Now()
	r, err := setupRoot(spec, fds)
	must(err)
	must(r.PivotRoot())
	phaseHook = nil
	prev := start
	for _, s := range stamps {
		fmt.Printf("PHASE %d %s\n", s.at.Sub(prev).Nanoseconds(), strings.TrimSpace(s.step+" "+s.path))
		prev = s.at
	}
	fmt.Printf("PHASE %d total\n", prev.Sub(start).Nanoseconds())
	checkDefaultRoot(c, r)
	if os.Getenv(waitEnv) == "1" {
		fmt.Println("READY")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			c.errorf("wait for the launcher: %v", err)
			return
		}
		for _, p := range []string{filepath.Join(wsDest, "inward", inwardName), "/usr/share/" + inwardName, "/etc/" + inwardName} {
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				c.errorf("a mount the launcher made after the sandbox was built reached it: %s: %v", p, err)
			}
		}
	}
}

// checkDefaultRoot checks the root the default spec describes, from inside it.
func checkDefaultRoot(c *checker, r *Root) {
	flags := func(p string) uint64 {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			c.errorf("statfs %s: %v", p, err)
			return 0
		}
		return uint64(st.Flags)
	}
	want := func(p string, set, clear uint64) {
		if f := flags(p); f&set != set || f&clear != 0 {
			c.errorf("%s mount flags %#x; want %#x set, %#x clear", p, f, set, clear)
		}
	}
	const ro, nosuid, nodev, noexec = unix.ST_RDONLY, unix.ST_NOSUID, unix.ST_NODEV, unix.ST_NOEXEC
	want("/", ro|nosuid|nodev, 0)
	want("/etc", ro|nosuid|nodev, 0)
	want("/usr", ro|nosuid|nodev, 0)
	want("/usr/bin", ro|nosuid|nodev, 0)
	want("/dev", ro|nosuid|noexec, nodev)
	want("/dev/null", ro|nosuid|noexec, nodev)
	want("/dev/tty", ro|nosuid|noexec, nodev)
	want("/dev/pts", nosuid|noexec, ro)
	want("/dev/shm", nosuid|nodev, ro)
	want("/tmp", nosuid|nodev, ro)
	want("/var/tmp", nosuid|nodev, ro)
	want(wsDest, nosuid|nodev, ro)
	want("/proc", nosuid|nodev|noexec, ro)
	want("/proc/sys", ro|nosuid|nodev|noexec, 0)
	want("/proc/irq", ro|nosuid|nodev|noexec, 0)
	want("/etc/shadow", ro|nosuid|noexec, 0)
	want("/etc/ssl/private", ro|nosuid|nodev|noexec, 0)
	want("/proc/keys", ro|nosuid|noexec, 0)
	want("/proc/acpi", ro|nosuid|nodev|noexec, 0)
	for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/proc/keys", "/proc/timer_list", "/etc/security/opasswd"} {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				c.errorf("stat %s: %v", p, err)
			}
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
			c.errorf("masked %s is mode %#o rdev %#x; want the null device", p, st.Mode, st.Rdev)
		}
	}
	for _, d := range []string{"/etc/ssl/private", "/proc/acpi"} {
		if entries, err := os.ReadDir(d); err == nil && len(entries) != 0 {
			c.errorf("masked directory %s lists %d entries", d, len(entries))
		}
	}
	if b, err := os.ReadFile("/etc/shadow"); err == nil && len(b) != 0 {
		c.errorf("/etc/shadow reads %d bytes", len(b))
	}
	for _, p := range []string{"/usr/gosbx-x", "/etc/gosbx-x", "/gosbx-x", "/dev/gosbx-x"} {
		if err := create(p); !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EACCES) {
			c.errorf("create %s: %v; want EROFS", p, err)
		}
	}
	c.errno("write /proc/sys/kernel/domainname", os.WriteFile("/proc/sys/kernel/domainname", []byte("x"), 0), unix.EROFS)
	for _, p := range []string{"/tmp/x", "/var/tmp/x", "/dev/shm/x", "/root/x", "/run/x", wsDest + "/gosbx-mounts-test-write"} {
		c.ok("write "+p, os.WriteFile(p, []byte("x"), 0o600))
	}
	os.Remove(wsDest + "/gosbx-mounts-test-write")
	c.ok("write /dev/null", os.WriteFile("/dev/null", []byte("x"), 0))
	for l, target := range map[string]string{"/dev/fd": "/proc/self/fd", "/bin": "usr/bin", "/dev/ptmx": "pts/ptmx"} {
		if got, err := os.Readlink(l); err != nil || got != target {
			c.errorf("readlink %s = %q, %v; want %q", l, got, err, target)
		}
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		c.errorf("stat /bin/sh: %v", err)
	}
	if f, err := r.OpenDir(wsDest); err != nil {
		c.errorf("open the workspace: %v", err)
	} else {
		f.Close()
	}
}

type phaseResult struct {
	names []string           // steps in the order of the first run
	ns    map[string][]int64 // per step, one duration per run
	kinds []string           // the first word of the steps, in order
	kind  map[string][]int64 // per kind, the sum of its steps in each run
}

func (p *phaseResult) add(out string) error {
	if p.ns == nil {
		p.ns, p.kind = map[string][]int64{}, map[string][]int64{}
	}
	sums := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "PHASE ")
		if !ok {
			continue
		}
		num, name, _ := strings.Cut(rest, " ")
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return fmt.Errorf("bad line %q", line)
		}
		if _, ok := p.ns[name]; !ok {
			p.names = append(p.names, name)
		}
		p.ns[name] = append(p.ns[name], v)
		k, _, _ := strings.Cut(name, " ")
		if _, ok := sums[k]; !ok && !slices.Contains(p.kinds, k) {
			p.kinds = append(p.kinds, k)
		}
		sums[k] += v
	}
	if len(sums) == 0 {
		return errors.New("no timings reported")
	}
	for k, v := range sums {
		p.kind[k] = append(p.kind[k], v)
	}
	return nil
}

func (p *phaseResult) median(name string) time.Duration {
	v := append([]int64(nil), p.ns[name]...)
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	return time.Duration(v[len(v)/2])
}

func (p *phaseResult) table() string {
	var b strings.Builder
	row := func(name string, v []int64) {
		v = slices.Clone(v)
		slices.Sort(v)
		fmt.Fprintf(&b, "%-28s %8.1fµs %8.1fµs\n", name, float64(v[len(v)/2])/1e3, float64(v[0])/1e3)
	}
	fmt.Fprintf(&b, "%-28s %10s %10s  (%d runs)\n", "step", "median", "min", len(p.ns["total"]))
	for _, name := range p.names {
		row(name, p.ns[name])
	}
	fmt.Fprintf(&b, "by kind (sum of its steps in a run):\n")
	for _, k := range p.kinds {
		if k != "total" {
			row(k, p.kind[k])
		}
	}
	return b.String()
}

// runDefault runs the default-spec child once with sources in mode, returning its output.
func runDefault(t testing.TB, mode, ws string) string {
	t.Helper()
	spec := defaultSpec(ws)
	fds, err := sourceFds(spec, mode)
	if err != nil {
		t.Fatalf("%s: %v", mode, err)
	}
	defer func() {
		for _, f := range fds {
			f.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := initCommand(ctx, mode, ws, fds)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
			t.Skipf("cannot create the init's namespaces here: %v", err)
		}
		reportFails(t, out.String())
		t.Fatalf("default spec (%s) in the init's namespaces: %v\n%s", mode, err, out.String())
	}
	reportFails(t, out.String())
	return out.String()
}

func reportFails(t testing.TB, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL ") {
			t.Error(strings.TrimPrefix(line, "FAIL "))
		}
	}
}

func modes(t testing.TB) []string {
	if os.Getuid() == 0 {
		return []string{"trees", "paths"}
	}
	return []string{"paths"}
}

func workspace(t testing.TB) string {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "inward"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestDefaultSpecTiming builds the default spec's root (runs: $GOSBX_MOUNTS_TIMING_RUNS,
// default 1) and logs the median time of each step.
func TestDefaultSpecTiming(t *testing.T) {
	runs := 1
	if v, err := strconv.Atoi(os.Getenv(runsEnv)); err == nil && v > 0 {
		runs = v
	}
	for _, mode := range modes(t) {
		t.Run(mode, func(t *testing.T) {
			ws := workspace(t)
			var res phaseResult
			for i := 0; i < runs; i++ {
				if err := res.add(runDefault(t, mode, ws)); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("SetupTrees/Setup + PivotRoot of the default spec, sources as %s:\n%s", mode, res.table())
		})
	}
}

// BenchmarkDefaultSpec reports the in-child time of Setup/SetupTrees + PivotRoot of the
// default spec (one child, so one fresh namespace, per iteration; process start-up is not
// counted).
func BenchmarkDefaultSpec(b *testing.B) {
	for _, mode := range modes(b) {
		b.Run(mode, func(b *testing.B) {
			ws := workspace(b)
			var res phaseResult
			for i := 0; i < b.N; i++ {
				if err := res.add(runDefault(b, mode, ws)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.median("total"))/1e3, "µs-median")
			b.ReportMetric(0, "ns/op")
			b.Logf("\n%s", res.table())
		})
	}
}

// TestDefaultSpecPropagation: a launcher whose mounts are shared (as on a systemd
// host) starts the init; while the sandbox runs, the launcher's namespace has no mount
// it did not have before, and a mount the launcher makes in a source afterwards (the
// workspace, /usr, /etc) does not appear inside.
func TestDefaultSpecPropagation(t *testing.T) {
	for _, mode := range []string{"trees", "paths"} {
		t.Run(mode, func(t *testing.T) {
			ws := workspace(t)
			runInNamespace(t, "launcher", baseEnv+"="+ws, launchEnv+"="+mode, sharedRoot+"=1")
		})
	}
}

// scenarioLauncher runs in a new user and mount namespace of its own (the "host"): it
// makes every mount shared, opens or clones the sources, starts the init, compares its
// mount table before and after the sandbox is built, then mounts tmpfs on the
// workspace's inward/, /usr/share and /etc and lets the init look.
func scenarioLauncher(c *checker, ws string) {
	if os.Getenv(sharedRoot) == "1" {
		// Private first: the copy of the real host's table must not be peered with it.
		must(unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""))
		must(unix.Mount("", "/", "", unix.MS_REC|unix.MS_SHARED, ""))
	}
	mode := os.Getenv(launchEnv)
	spec := defaultSpec(ws)
	fds, err := sourceFds(spec, mode)
	must(err)
	before, err := os.ReadFile("/proc/self/mountinfo")
	must(err)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := initCommand(ctx, mode, ws, fds, waitEnv+"=1")
	stdin, err := cmd.StdinPipe()
	must(err)
	stdout, err := cmd.StdoutPipe()
	must(err)
	cmd.Stderr = os.Stderr
	must(cmd.Start())
	for _, f := range fds {
		f.Close()
	}
	sc := bufio.NewScanner(stdout)
	ready := false
	var lines []string
	for sc.Scan() {
		if sc.Text() == "READY" {
			ready = true
			break
		}
		lines = append(lines, sc.Text())
	}
	if !ready {
		cmd.Wait()
		c.errorf("the init did not build the sandbox:\n%s", strings.Join(lines, "\n"))
		return
	}
	after, err := os.ReadFile("/proc/self/mountinfo")
	must(err)
	if d := mountsAdded(string(before), string(after)); d != "" {
		c.errorf("the sandbox's mounts reached the launcher's namespace:\n%s", d)
	}
	for _, d := range []string{filepath.Join(ws, "inward"), "/usr/share", "/etc"} {
		if err := unix.Mount("gosbx-inward", d, "tmpfs", 0, ""); err != nil {
			c.errorf("mount a tmpfs on %s in the launcher: %v", d, err)
			continue
		}
		c.ok("write the inward marker", os.WriteFile(filepath.Join(d, inwardName), nil, 0o644))
	}
	fmt.Fprintln(stdin, "go")
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	err = cmd.Wait()
	for _, l := range lines {
		if strings.HasPrefix(l, "FAIL ") {
			fmt.Println(l)
			c.failed = true
		}
	}
	if err != nil && !c.failed {
		c.errorf("the init: %v\n%s", err, strings.Join(lines, "\n"))
	}
}

// mountsAdded lists the mount points (field 5 of mountinfo) in after and not in before.
func mountsAdded(before, after string) string {
	points := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) > 4 {
				m[f[4]]++
			}
		}
		return m
	}
	b, a := points(before), points(after)
	var out []string
	for p, n := range a {
		if n > b[p] {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
