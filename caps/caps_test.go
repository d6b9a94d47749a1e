package caps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// scenarioEnv makes TestMain run a check in a re-executed child that sits in a new user
// namespace (uid 0 inside, every capability there) and exit with its result.
const scenarioEnv = "GOSBX_CAPS_TEST_SCENARIO"

func TestMain(m *testing.M) {
	if name := os.Getenv(scenarioEnv); name != "" {
		os.Exit(runScenario(name))
	}
	os.Exit(m.Run())
}

func runScenario(name string) int {
	// Capabilities are per thread: every check below runs on this one.
	runtime.LockOSThread()
	var failed bool
	fail := func(format string, a ...any) {
		fmt.Printf("FAIL "+format+"\n", a...)
		failed = true
	}
	switch name {
	case "dropall":
		scenarioDropAll(fail)
	default:
		fail("unknown scenario %q", name)
	}
	if failed {
		return 1
	}
	return 0
}

func allCaps() uint64 { return 1<<(uint(LastCap())+1) - 1 }

func scenarioDropAll(fail func(string, ...any)) {
	before, err := Current()
	if err != nil {
		fail("Current before DropAll: %v", err)
		return
	}
	// uid 0 in a new user namespace holds every capability there.
	if before.Effective != allCaps() || before.Permitted != allCaps() || before.Bounding != allCaps() {
		fail("before DropAll: %+v; want effective, permitted and bounding = %#x", before, allCaps())
	}
	if before.NoNewPrivs {
		fail("no_new_privs already set before DropAll")
	}
	// An ambient capability must be cleared too: raise one first.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_NET_ADMIN, 0, 0); err != nil {
		fail("cannot raise an ambient capability before DropAll (needs it inheritable): %v", err)
	}
	if err := DropAll(); err != nil {
		fail("DropAll: %v", err)
		return
	}
	after, err := Current()
	if err != nil {
		fail("Current after DropAll: %v", err)
		return
	}
	want := State{NoNewPrivs: true}
	if after != want {
		fail("after DropAll: %+v; want every set empty and NoNewPrivs", after)
	}
	if st, err := statusCaps(); err != nil {
		fail("%v", err)
	} else {
		for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
			if st[k] != 0 {
				fail("/proc/thread-self/status %s = %#x; want 0", k, st[k])
			}
		}
		if st["NoNewPrivs"] != 1 {
			fail("/proc/thread-self/status NoNewPrivs = %d", st["NoNewPrivs"])
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_SYS_ADMIN, 0, 0); !errors.Is(err, unix.EPERM) {
		fail("PR_CAP_AMBIENT_RAISE after DropAll: %v; want EPERM", err)
	}
	for _, bits := range []uintptr{0, LockedNoRoot &^ secbitNoRootLocked, LockedNoRoot} {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); !errors.Is(err, unix.EPERM) {
			fail("PR_SET_SECUREBITS(%#x) after DropAll: %v; want EPERM", bits, err)
		}
	}
	if got, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0); err != nil || got != LockedNoRoot {
		fail("securebits = %#x, %v; want %#x", got, err, LockedNoRoot)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil {
		fail("no_new_privs could be cleared")
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: 1 << unix.CAP_SYS_ADMIN, Permitted: 1 << unix.CAP_SYS_ADMIN}}
	if err := unix.Capset(&hdr, &data[0]); !errors.Is(err, unix.EPERM) {
		fail("capset raising CAP_SYS_ADMIN after DropAll: %v; want EPERM", err)
	}
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_CHOWN, 0, 0, 0); !errors.Is(err, unix.EPERM) {
		fail("PR_CAPBSET_DROP after DropAll: %v; want EPERM (no CAP_SETPCAP)", err)
	}
	if err := unix.Sethostname([]byte("x")); !errors.Is(err, unix.EPERM) {
		fail("sethostname without capabilities: %v; want EPERM", err)
	}
	if err := unix.Setuid(1); !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
		fail("setuid(1) without capabilities: %v; want EPERM", err)
	}
}

// statusCaps parses the capability lines of /proc/thread-self/status.
func statusCaps() (map[string]uint64, error) {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return nil, err
	}
	m := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			n, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", line, err)
			}
			m[k] = n
		case "NoNewPrivs":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", line, err)
			}
			m[k] = n
		}
	}
	return m, nil
}

func TestDropAllInUserNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDropAllInUserNamespace$")
	cmd.Env = append(os.Environ(), scenarioEnv+"=dropall")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		// Ambient raise needs the capability inheritable; exec as uid 0 in the new
		// namespace gives every capability permitted and effective, not inheritable.
		AmbientCaps: []uintptr{unix.CAP_NET_ADMIN},
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL) {
			t.Skipf("cannot create a user namespace here (unprivileged user namespaces disabled?): %v", err)
		}
		t.Fatal(err)
	}
	err := cmd.Wait()
	for _, line := range strings.Split(out.String(), "\n") {
		if s, ok := strings.CutPrefix(line, "FAIL "); ok {
			t.Error(s)
		}
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
}

func TestLastCap(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		t.Skipf("no cap_last_cap: %v", err)
	}
	want, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := LastCap(); got != want {
		t.Errorf("LastCap() = %d; /proc/sys/kernel/cap_last_cap says %d", got, want)
	}
}

// TestCurrentMatchesProc compares Current with the kernel's own view of this thread.
func TestCurrentMatchesProc(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	st, err := statusCaps()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{"CapInh": s.Inheritable, "CapPrm": s.Permitted, "CapEff": s.Effective,
		"CapBnd": s.Bounding, "CapAmb": s.Ambient}
	for k, v := range got {
		if v != st[k] {
			t.Errorf("%s: Current says %#x, /proc/thread-self/status %#x", k, v, st[k])
		}
	}
	if nnp := st["NoNewPrivs"] == 1; s.NoNewPrivs != nnp {
		t.Errorf("NoNewPrivs: Current says %v, /proc says %v", s.NoNewPrivs, nnp)
	}
	if s.Bounding&^allCaps() != 0 {
		t.Errorf("bounding set %#x has bits above LastCap %d", s.Bounding, LastCap())
	}
}

// TestDropAllWithoutPrivilege: a caller without CAP_SETPCAP cannot empty its bounding
// set, and DropAll says so at the first step. Run on a thread that is discarded.
func TestDropAllWithoutPrivilege(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("as root DropAll succeeds on the host; covered in a user namespace instead")
	}
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		errc <- DropAll()
	}()
	err := <-errc
	if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "bounding set") {
		t.Errorf("DropAll without CAP_SETPCAP = %v; want EPERM at the bounding set", err)
	}
}
