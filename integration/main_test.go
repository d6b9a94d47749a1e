// Package integration holds the end-to-end tests of gosbx: they build the
// real binary once, run it as root and as an unprivileged user (uid 65534),
// and check every effect of the sandbox from the host side.
package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	python    = "/usr/bin/python3"
	nobodyID  = 65534
	runLimit  = 60 * time.Second // upper bound for a single gosbx run
	shellPath = "/bin/sh"
)

var (
	// gosbxBin is the binary under test (built by TestMain, or $GOSBX_TEST_BINARY).
	gosbxBin string
	// skipReason is set when the package cannot run on this machine.
	skipReason string
	// buildFailure is set when the binary could not be built.
	buildFailure string
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Most tests wait on sleeping sandboxes, not on the CPU: run more of them
	// at once than GOMAXPROCS unless the caller chose -test.parallel.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			parallelSet = true
		}
	})
	if !parallelSet {
		_ = flag.Set("test.parallel", "6")
	}

	var cleanup func()
	skipReason = checkHost()
	if skipReason == "" {
		cleanup = buildBinary()
	}
	code := m.Run()
	if cleanup != nil {
		cleanup()
	}
	removeTestnetBinary()
	os.Exit(code)
}

// checkHost says why the package cannot run here, or "".
func checkHost() string {
	if os.Geteuid() != 0 {
		return "the integration tests must run as root (they also run gosbx as uid 65534 through setpriv)"
	}
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		return "the kernel has no user namespaces (/proc/self/ns/user missing)"
	}
	// An unprivileged process must be able to create a user namespace.
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		Credential:  &syscall.Credential{Uid: nobodyID, Gid: nobodyID, NoSetGroups: true},
		UidMappings: []syscall.SysProcIDMap{{ContainerID: nobodyID, HostID: nobodyID, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: nobodyID, HostID: nobodyID, Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("unprivileged user namespaces are unavailable: %v", err)
	}
	for _, p := range []string{"/usr/bin/setpriv", python, shellPath} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Sprintf("%s is needed by the integration tests: %v", p, err)
		}
	}
	return ""
}

// buildBinary builds ./cmd/gosbx into a 0755 directory under /var/tmp so
// uid 65534 can execute it, and returns the cleanup function.
func buildBinary() func() {
	if b := os.Getenv("GOSBX_TEST_BINARY"); b != "" {
		gosbxBin = b
		return nil
	}
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-it-bin-")
	if err != nil {
		buildFailure = err.Error()
		return nil
	}
	cleanup := func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		buildFailure = err.Error()
		return cleanup
	}
	bin := filepath.Join(dir, "gosbx")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/gosbx")
	cmd.Dir = ".." // the module root: tests run in the package directory
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		buildFailure = fmt.Sprintf("go build ./cmd/gosbx: %v\n%s", err, out)
		return cleanup
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		buildFailure = err.Error()
	}
	gosbxBin = bin
	return cleanup
}

// requireBinary skips or fails the test when the package cannot run.
func requireBinary(t *testing.T) {
	t.Helper()
	if skipReason != "" {
		t.Skip(skipReason)
	}
	if buildFailure != "" {
		t.Fatal(buildFailure)
	}
}

// ---------------------------------------------------------------------------
// Callers: root and nobody.

type caller struct {
	name     string
	uid, gid int
	home     string   // the caller's home as gosbx sees it (passwd and $HOME agree)
	setpriv  []string // for uid 0: setpriv(1) options gosbx runs under (capabilities dropped)
}

var (
	rootCaller   = caller{"root", 0, 0, "/root", nil}
	nobodyCaller = caller{"nobody", nobodyID, nobodyID, "/nonexistent", nil}
	// rootNoAdmin is uid 0 without CAP_SYS_ADMIN (a container's root): not a root
	// caller, so it takes the unprivileged path (caps.CurrentCaller).
	rootNoAdmin = caller{"root-without-sys-admin", 0, 0, "/root",
		[]string{"--inh-caps=-sys_admin", "--bounding-set=-sys_admin"}}
	callers = []caller{rootCaller, nobodyCaller}
)

// forEachCaller runs f as a parallel subtest for root and for nobody.
func forEachCaller(t *testing.T, f func(t *testing.T, c caller)) {
	t.Helper()
	requireBinary(t)
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f(t, c)
		})
	}
}

// ---------------------------------------------------------------------------
// The sandbox helper.

// sandbox is one workspace and the caller who runs gosbx on it.
type sandbox struct {
	t    *testing.T
	c    caller
	base string // 0755 dir under /var/tmp; parent of ws; host-only files go here
	ws   string // the workspace, owned by the caller
	id   string // random token unique to this sandbox
	// scope, when set, is where every gosbx of rawCommand starts (cgroupscope_test.go)
	scope *cgroupScope
}

// result of one gosbx run.
type result struct {
	stdout, stderr string
	code           int // exit status; 128+S when gosbx itself died of signal S
	elapsed        time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, clip(r.stdout), clip(r.stderr))
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "...(truncated)"
	}
	return s
}

func token() string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// newSandbox makes a fresh workspace for caller c.
func newSandbox(t *testing.T, c caller) *sandbox {
	t.Helper()
	requireBinary(t)
	id := token()
	base, err := os.MkdirTemp("/var/tmp", "gosbx-it-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	s := &sandbox{t: t, c: c, base: base, ws: filepath.Join(base, "ws"), id: id}
	must(t, os.Mkdir(s.ws, 0o755))
	s.chown(s.ws)
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// chown gives path to the caller.
func (s *sandbox) chown(path string) {
	s.t.Helper()
	must(s.t, os.Lchown(path, s.c.uid, s.c.gid))
}

// writeWS writes a file in the workspace, owned by the caller.
func (s *sandbox) writeWS(rel, content string, mode os.FileMode) string {
	s.t.Helper()
	p := filepath.Join(s.ws, rel)
	must(s.t, os.MkdirAll(filepath.Dir(p), 0o755))
	if mode&0o111 != 0 {
		mustWriteExecutable(s.t, p, []byte(content), mode) // not ETXTBSY when run
	} else {
		must(s.t, os.WriteFile(p, []byte(content), mode))
	}
	must(s.t, os.Chmod(p, mode))
	s.chown(p)
	return p
}

// env is the caller's environment for gosbx: minimal and deterministic.
func (s *sandbox) env(extra ...string) []string {
	return append([]string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"HOME=" + s.c.home,
		"LANG=C.UTF-8",
	}, extra...)
}

// command prepares `gosbx exec --workspace WS ARGS...` as the caller. The
// process started is gosbx itself (setpriv execs it), so signals sent to
// cmd.Process reach gosbx.
func (s *sandbox) command(ctx context.Context, args ...string) *exec.Cmd {
	full := append([]string{"exec", "--workspace", s.ws}, args...)
	return s.rawCommand(ctx, full...)
}

// rawCommand runs gosbx with exactly these arguments, as the caller.
func (s *sandbox) rawCommand(ctx context.Context, args ...string) *exec.Cmd {
	var cmd *exec.Cmd
	switch {
	case s.c.uid == 0 && len(s.c.setpriv) > 0:
		pre := append(append([]string{}, s.c.setpriv...), "--", gosbxBin)
		cmd = exec.CommandContext(ctx, "/usr/bin/setpriv", append(pre, args...)...)
	case s.c.uid == 0:
		cmd = exec.CommandContext(ctx, gosbxBin, args...)
	default:
		pre := []string{fmt.Sprintf("--reuid=%d", s.c.uid), fmt.Sprintf("--regid=%d", s.c.gid), "--clear-groups", "--", gosbxBin}
		cmd = exec.CommandContext(ctx, "/usr/bin/setpriv", append(pre, args...)...)
	}
	cmd.Env = s.env()
	cmd.Dir = s.base // outside the workspace: the command starts at the workspace root
	cmd.WaitDelay = 5 * time.Second
	s.scope.wrap(cmd)
	return cmd
}

// limitCtx is a context that ends after d (and at the end of the test).
func (s *sandbox) limitCtx(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	s.t.Cleanup(cancel)
	return ctx
}

// run runs gosbx exec with args (flags, "--", command...) and stdin empty.
func (s *sandbox) run(args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	return s.runCmd(ctx, s.command(ctx, args...))
}

// runIn is run with a given stdin.
func (s *sandbox) runIn(stdin io.Reader, args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.command(ctx, args...)
	cmd.Stdin = stdin
	return s.runCmd(ctx, cmd)
}

// runCmd runs a prepared command made with ctx. Stdout and stderr are
// captured unless already set; an unset stdin is empty.
func (s *sandbox) runCmd(ctx context.Context, cmd *exec.Cmd) result {
	s.t.Helper()
	if cmd.Stdin == nil {
		cmd.Stdin = bytes.NewReader(nil)
	}
	var out, errb bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &errb
	}
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	r.code = exitCode(err, cmd.ProcessState)
	if ctx.Err() != nil {
		s.t.Fatalf("gosbx did not finish in time (killed): %q\n%v", cmd.Args, r)
	}
	if err != nil && cmd.ProcessState == nil {
		s.t.Fatalf("cannot start %q: %v", cmd.Args, err)
	}
	return r
}

// exitCode maps a finished process to a shell-like status.
func exitCode(err error, ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && ps.ExitCode() == 0 {
		return -1 // I/O error after a clean exit
	}
	return ps.ExitCode()
}

// sh runs `sh -c script _ args...` in the sandbox with gosbx flags.
func (s *sandbox) sh(flags []string, script string, args ...string) result {
	s.t.Helper()
	full := append(append(append([]string{}, flags...), "--", shellPath, "-c", script, "_"), args...)
	return s.run(full...)
}

// mustSucceed fails the test unless r exited 0.
func mustSucceed(t *testing.T, r result, what string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("%s: want exit 0\n%v", what, r)
	}
}

// ---------------------------------------------------------------------------
// Host-side process inspection.

// hostPIDs lists host processes whose argv[0] starts with prefix (zombies,
// whose cmdline is empty, are not listed).
func hostPIDs(prefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		if strings.HasPrefix(string(b), prefix) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitHostPIDs polls until the count of matching processes satisfies ok.
func waitHostPIDs(prefix string, d time.Duration, ok func(n int) bool) []int {
	end := time.Now().Add(d)
	for {
		p := hostPIDs(prefix)
		if ok(len(p)) || time.Now().After(end) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killHostPIDs is a cleanup for processes that a broken sandbox left behind.
func killHostPIDs(prefix string) {
	for _, p := range hostPIDs(prefix) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}

// sleepLink makes a uniquely named symlink to sleep in the workspace, so its
// processes can be found on the host by argv[0]; leftovers are killed at cleanup.
func (s *sandbox) sleepLink(name string) string {
	s.t.Helper()
	p := filepath.Join(s.ws, "gosbx-it-sleep-"+name+"-"+s.id)
	must(s.t, os.Symlink("/usr/bin/sleep", p))
	_ = os.Lchown(p, s.c.uid, s.c.gid)
	s.t.Cleanup(func() { killHostPIDs(p) })
	return p
}

// nsInode reads the inode of /proc/PID/ns/NAME ("self" allowed).
func nsInode(pid, name string) (uint64, error) {
	l, err := os.Readlink("/proc/" + pid + "/ns/" + name)
	if err != nil {
		return 0, err
	}
	i, j := strings.IndexByte(l, '['), strings.IndexByte(l, ']')
	if i < 0 || j < i {
		return 0, fmt.Errorf("odd ns link %q", l)
	}
	return strconv.ParseUint(l[i+1:j], 10, 64)
}

// procStatus parses /proc/.../status text into a map.
func procStatus(text string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
