package doctor

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/nsinit"
)

// TestMain makes the test binary a stand-in for gosbx: it is the init stage when
// nsinit re-executes it, and runs Probe when argv[1] is ProbeArg, as cmd/gosbx/main.go
// does. So the checks can be run with os.Args[0] as the exe.
func TestMain(m *testing.M) {
	nsinit.Init()
	if len(os.Args) > 1 && os.Args[1] == ProbeArg {
		os.Exit(Probe(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func requireUserns(t *testing.T) {
	t.Helper()
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		t.Skipf("no user namespaces for this caller here: %v", err)
	}
}

func TestProbeUsage(t *testing.T) {
	if Probe(nil) == 0 || Probe([]string{"no-such-probe"}) == 0 {
		t.Error("an empty or unknown probe succeeded")
	}
	if probeNamespace([]string{"net"}) == nil {
		t.Error("ns with one argument succeeded")
	}
	// In the parent's own namespace the ns probe must fail: it compares inodes.
	if err := probeNamespace([]string{"uts", strconv.FormatUint(nsInode("uts"), 10)}); err == nil {
		t.Error("ns probe passed in the parent's namespace")
	}
	if probeEscape([]string{"too", "few"}) == 0 {
		t.Error("escape probe with two arguments succeeded")
	}
}

// The namespace checks pass on this host through the same probes gosbx runs.
func TestNamespaceChecks(t *testing.T) {
	requireUserns(t)
	exe := testExe(t)
	if c := checkUserns(exe, ReadFacts()); c.Status != OK {
		t.Fatalf("user namespace: %+v", c)
	}
	for name, flag := range map[string]uintptr{"mnt": unix.CLONE_NEWNS, "pid": unix.CLONE_NEWPID, "net": unix.CLONE_NEWNET,
		"ipc": unix.CLONE_NEWIPC, "uts": unix.CLONE_NEWUTS, "cgroup": unix.CLONE_NEWCGROUP} {
		if c := checkNamespace(exe, name, flag); c.Status != OK {
			t.Errorf("%s namespace: %+v", name, c)
		}
	}
	// Without the namespace flag the probe sees the parent's inode and must fail.
	if c := checkNamespace(exe, "uts", 0); c.Status != Fail || !strings.Contains(c.Detail, "still in the parent's uts namespace") {
		t.Errorf("uts check without CLONE_NEWUTS: %+v, want a failure saying so", c)
	}
	if c := childCheck(exe, "new mount API", "mountapi", Fail, "x"); c.Status != OK {
		t.Errorf("new mount API: %+v", c)
	}
}

func TestSyscallAndLandlockChecks(t *testing.T) {
	if c := checkSyscalls(); c.Status != OK {
		t.Errorf("syscalls: %+v", c)
	}
	if c := checkLandlock(); c.Status == Fail || c.Status == Warn {
		t.Errorf("Landlock must be ok or skip (not used by the default policy): %+v", c)
	}
}

// The escape probe run without any sandbox must report every escape it tries: a
// probe that always said "denied" would make the doctor's escape checks worthless.
// (The verdict logic of checkSandbox, which combines the probe's report with the
// host-side evidence, is a closure and cannot be unit-tested without a refactor.)
func TestEscapeProbeDetectsEscapesUnconfined(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: TIOCSTI into a non-controlling terminal and a write to / need privileges")
	}
	const rootFile = "/escaped-gosbx-doctor"
	if _, err := os.Lstat(rootFile); err == nil {
		t.Skipf("%s already exists; not touching it", rootFile)
	}
	t.Cleanup(func() { os.Remove(rootFile) })
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	canary := filepath.Join(dir, "canary")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(canary, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(testExe(t), ProbeArg, "escape", canary, outside, port)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("escape probe: %v\n%s", err, out.String())
	}
	var res EscapeResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("escape probe report: %v\n%s", err, out.String())
	}
	if res.WriteOutside == "" {
		t.Error("write outside not detected")
	}
	if _, err := os.Stat(filepath.Join(outside, "escaped")); err != nil {
		t.Errorf("the probe said %q but left no file: %v", res.WriteOutside, err)
	}
	if res.ReadHost == "" {
		t.Error("host file read not detected")
	}
	if res.HostLoopback == "" {
		t.Error("loopback connection not detected")
	}
	if res.NewUserns == "" {
		t.Error("user namespace creation not detected")
	}
	if res.SeccompProof == "" {
		t.Error("absence of the seccomp filter not detected (ioctl(-1, TIOCSTI) gives EBADF without it)")
	}
	if strings.Trim(res.CapEff, "0") == "" || res.NoNewPrivs == "1" {
		t.Errorf("root's capabilities not seen: CapEff %q NoNewPrivs %q", res.CapEff, res.NoNewPrivs)
	}
	// TIOCSTI: root has CAP_SYS_ADMIN, which the kernel accepts for a non-controlling
	// terminal (and with dev.tty.legacy_tiocsti=0).
	if res.TIOCSTI == "" {
		t.Error("TIOCSTI not detected")
	}
}

// Run end to end with the test binary as gosbx: it must pass here, as root, and
// leave no scratch directory behind.
func TestRunHere(t *testing.T) {
	requireUserns(t)
	if testing.Short() {
		t.Skip("launches a sandbox")
	}
	before, _ := filepath.Glob("/var/tmp/gosbx-doctor-*")
	r := Run(testExe(t))
	var b bytes.Buffer
	r.WriteTable(&b, 0)
	if !r.OK {
		t.Fatalf("doctor failed here:\n%s", b.String())
	}
	if r.Version != 1 || r.UID != os.Getuid() || len(r.Checks) < 15 {
		t.Errorf("version %d uid %d %d checks", r.Version, r.UID, len(r.Checks))
	}
	after, _ := filepath.Glob("/var/tmp/gosbx-doctor-*")
	if len(after) > len(before) {
		t.Errorf("scratch left behind: %q", after)
	}
	t.Log("\n" + b.String())
}

// The sessions check passes here (Linux 6.18, root or a caller with XDG_RUNTIME_DIR),
// makes nothing, and warns, naming the fix, when the caller has no runtime directory.
func TestCheckSessions(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: /run/gosbx is root's runtime directory")
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if c := checkSessions(); c.Status != OK || !strings.Contains(c.Detail, "/run/gosbx") {
		t.Fatalf("sessions check as root: %+v", c)
	}
	x := t.TempDir()
	if err := os.Chmod(x, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_RUNTIME_DIR", x)
	if c := checkSessions(); c.Status != OK {
		t.Fatalf("XDG_RUNTIME_DIR of mode 0755 falls back to /run/gosbx for root: %+v", c)
	}
	if _, err := os.Stat(x + "/gosbx"); err == nil {
		t.Fatalf("the check made %s/gosbx", x)
	}
	if err := os.Chmod(x, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(x+"/gosbx", 0o755); err != nil {
		t.Fatal(err)
	}
	if c := checkSessions(); c.Status != Warn || !strings.Contains(c.Detail, "mode") || c.Fix == "" {
		t.Fatalf("a runtime directory open to others: %+v", c)
	}
}

// Every check appears in the report, in the same order, whatever fails: with no user
// namespace (a probe binary that fails, as inside a sandbox) the mount API, overlayfs,
// sandbox and escape checks are skip with the reason; a failed sandbox launch leaves
// the escape checks skip, not absent (docs/doctor.md: "every check, in order").
func TestEveryCheckAlwaysPresent(t *testing.T) {
	requireUserns(t)
	if testing.Short() {
		t.Skip("launches a sandbox")
	}
	names := func(r []Check) []string {
		var out []string
		for _, c := range r {
			out = append(out, c.Name)
		}
		return out
	}
	want := names(Run(testExe(t)).Checks)
	failing := Run("/bin/false")
	if got := names(failing.Checks); !slices.Equal(got, want) {
		t.Errorf("with no user namespace the checks are\n%q\nwant\n%q", got, want)
	}
	for _, c := range failing.Checks {
		if c.Status == Skip && c.Detail == "" {
			t.Errorf("%q skipped without a reason", c.Name)
		}
		if strings.HasPrefix(c.Name, "escape: ") && c.Status != Skip {
			t.Errorf("%+v with no user namespace: want skip", c)
		}
	}
	launch := checkSandbox("/bin/false", "", ReadFacts())
	if len(launch) != len(escapeChecks)+1 || launch[0].Status != Fail {
		t.Fatalf("a failed launch gives %+v; want the launch failed, then every escape check", launch)
	}
	for i, c := range launch[1:] {
		if c.Name != "escape: "+escapeChecks[i] || c.Status != Skip || !strings.Contains(c.Detail, "sandbox launch failed") {
			t.Errorf("after a failed launch: %+v; want escape: %s, skip", c, escapeChecks[i])
		}
	}
}

// A refused overlayfs mount (uid 65534 here: "mount overlay: permission denied") is a
// skip saying the default policy does not need it, with no fix to list: it was a warn
// whose fix said "not needed".
func TestOverlayRefusedIsSkip(t *testing.T) {
	requireUserns(t)
	c := overlayCheck("/bin/false") // the probe fails as a refused mount does
	if c.Status != Skip || c.Fix != "" || !strings.Contains(c.Detail, "not needed by the default policy") {
		t.Errorf("a refused overlayfs mount: %+v; want skip, not needed, no fix", c)
	}
	if c := overlayCheck(testExe(t)); c.Status != OK && c.Status != Skip {
		t.Errorf("overlayfs here: %+v", c)
	}
}
