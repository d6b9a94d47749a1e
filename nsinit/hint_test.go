package nsinit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

// Under a seccomp filter, a mount step's EPERM is blamed on the filter only when the
// filter refuses the mount calls (the probe); when they reach the kernel, the kernel's
// own refusal gets its own hint. The probe is asked only for a mount step's EPERM or
// ENOSYS.
func TestHintKernelRefusalUnderFilter(t *testing.T) {
	asked := 0
	env := func(pass bool) launchEnv {
		return launchEnv{filtered: true, container: true, mountCallsPass: func() bool { asked++; return pass }}
	}
	sysfs := &mounts.Error{Op: "mount", Source: "sysfs", Target: "/sys", Err: fmt.Errorf("fsopen: %w", unix.EPERM)}
	bind := &mounts.Error{Op: "bind", Source: "/usr", Target: "/usr", Err: unix.EPERM}
	proc := &mounts.Error{Op: "mount", Source: "proc", Target: "/proc", Err: unix.EPERM}

	h := hintIn("mount", sysfs, env(true))
	if !strings.HasPrefix(h, "the kernel refused the mount") || !strings.Contains(h, "not the seccomp filter") ||
		!strings.Contains(h, "owns the network namespace") || !strings.Contains(h, "--net host") || strings.Contains(h, "gosbx.json") {
		t.Errorf("sysfs EPERM, the filter lets mounts through: %q; want the kernel's sysfs hint", h)
	}
	if h := hintIn("mount", bind, env(true)); !strings.HasPrefix(h, "the kernel refused the mount") || strings.Contains(h, "gosbx.json") {
		t.Errorf("bind EPERM, the filter lets mounts through: %q; want the kernel's hint", h)
	}
	if h := hintIn("pivot_root", unix.EPERM, env(true)); !strings.HasPrefix(h, "the kernel refused the mount") {
		t.Errorf("pivot_root EPERM, the filter lets mounts through: %q; want the kernel's hint", h)
	}
	if h := hintIn("mount", &mounts.Error{Op: "mount", Source: "tmpfs", Err: unix.ENOSYS}, env(true)); h != hintNoSys {
		t.Errorf("ENOSYS, the filter lets mounts through: %q; want %q", h, hintNoSys)
	}
	if h := hintIn("mount", proc, env(true)); h != hintMaskedProc {
		t.Errorf("proc EPERM: %q; want the masked /proc hint", h)
	}
	// the filter refuses them, or it is not known: the filter's hint, as before
	for _, e := range []launchEnv{env(false), {filtered: true, container: true}} {
		if h := hintIn("mount", sysfs, e); !strings.Contains(h, "seccomp profile") || !strings.Contains(h, "gosbx.json") {
			t.Errorf("sysfs EPERM, the filter refuses mounts (probe %v): %q; want the filter's hint", e.mountCallsPass != nil, h)
		}
	}
	// without a filter, the kernel's hint, without the probe's words
	if h := hintIn("mount", sysfs, launchEnv{}); !strings.HasPrefix(h, "the kernel refused the mount in the sandbox's user namespace: it mounts a sysfs") {
		t.Errorf("sysfs EPERM without a filter: %q", h)
	}
	// not asked for other steps, nor for other errors
	asked = 0
	hintIn("hostname", unix.EPERM, env(true))
	hintIn("mount", &mounts.Error{Op: "bind", Source: "/usr", Err: unix.EINVAL}, env(true))
	hintIn("seccomp", unix.EPERM, env(true))
	if asked != 0 {
		t.Errorf("the probe was asked %d times for steps or errors that are not a mount step's EPERM/ENOSYS", asked)
	}
	if h := hintIn("hostname", unix.EPERM, env(true)); !strings.Contains(h, "sethostname") {
		t.Errorf("hostname EPERM under a filter that lets mounts through: %q; want the filter's hint", h)
	}
}

// filterEnv, in a child of TestMountProbeUnderFilter, names the system calls its filter
// refuses with EPERM.
const filterEnv = "GOSBX_TEST_MOUNT_PROBE_FILTER"

// The probe against real filters: in a child process under a filter that refuses the
// mount calls with EPERM (as a container's profile does) the mount step's EPERM is the
// filter's; under one that refuses only an unrelated call, the kernel's. Without a
// filter every probe gets the kernel's argument error.
func TestMountProbeUnderFilter(t *testing.T) {
	if names := os.Getenv(filterEnv); names != "" {
		mountProbeChild(strings.Split(names, ","))
		return
	}
	if currentEnv().filtered {
		t.Skip("this test runs under a seccomp filter already")
	}
	if !mountCallsReachKernel() {
		for _, p := range mountProbes {
			_, _, e := unix.Syscall6(p.nr, p.args[0], p.args[1], p.args[2], p.args[3], p.args[4], p.args[5])
			t.Logf("%s: %v (want %v)", p.name, e, p.want)
		}
		t.Fatal("without a filter, a probe did not get the kernel's argument error")
	}
	for _, c := range []struct {
		refused string
		want    string
	}{
		{"mount,umount2,pivot_root,open_tree,move_mount,fsopen,fsconfig,fsmount,fspick,mount_setattr", "refused a mount call"},
		{"acct", "HINT: the kernel refused the mount in the sandbox's user namespace (not the seccomp filter"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMountProbeUnderFilter$", "-test.count=1")
		cmd.Env = append(os.Environ(), filterEnv+"="+c.refused)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child under a filter refusing %s: %v\n%s", c.refused, err, out)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("under a filter refusing %s: %s; want a hint starting %q", c.refused, out, c.want)
		}
	}
}

// mountProbeChild loads a filter refusing names with EPERM and prints the hint for a
// sysfs mount's EPERM.
func mountProbeChild(names []string) {
	eperm := uint(unix.EPERM)
	prog, err := seccomp.Compile(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{{Names: names, Action: specs.ActErrno, ErrnoRet: &eperm}}})
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err == nil {
		err = seccomp.Load(prog)
	}
	if err != nil {
		fmt.Println("FILTER:", err)
		os.Exit(1)
	}
	if !currentEnv().filtered {
		fmt.Println("FILTER: not seen in /proc/self/status")
		os.Exit(1)
	}
	sysfs := &mounts.Error{Op: "mount", Source: "sysfs", Target: "/sys", Err: fmt.Errorf("fsopen: %w", unix.EPERM)}
	fmt.Println("HINT: " + Hint("mount", sysfs))
}

// launchEnvVar, in a child of TestHintSysfsRefusedLive, names the system calls its
// filter refuses before it launches a sandbox whose sysfs the kernel refuses.
const launchEnvVar = "GOSBX_TEST_SYSFS_LAUNCH_FILTER"

// End to end: a sandbox sharing the host's network namespace (--net host) that asks for
// a sysfs mount is refused by the kernel (EPERM: its user namespace does not own the
// network namespace). Launched under a filter that lets the mount calls through, the
// SetupError's hint is the kernel's; under one that refuses them, the launch stops at
// the mount step too and the hint is the filter's.
func TestHintSysfsRefusedLive(t *testing.T) {
	if names := os.Getenv(launchEnvVar); names != "" {
		sysfsLaunchChild(t, strings.Split(names, ","))
		return
	}
	if currentEnv().filtered {
		t.Skip("this test runs under a seccomp filter already")
	}
	for _, c := range []struct {
		refused string
		want    string
	}{
		{"acct", "HINT: the kernel refused the mount in the sandbox's user namespace (not the seccomp filter gosbx runs under"},
		// (not open_tree, mount_setattr: a root caller's launcher clones its bind
		// sources with them; not fsopen: pid 1 opens the procfs context with it before
		// the mount step; either would stop the launch at another step)
		{"mount,umount2,fsconfig,fsmount", "refused a mount call"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHintSysfsRefusedLive$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), launchEnvVar+"="+c.refused)
		out, _ := cmd.CombinedOutput()
		if strings.Contains(string(out), "SKIP") {
			t.Skipf("child: %s", out)
		}
		if !strings.Contains(string(out), "STEP: mount\n") || !strings.Contains(string(out), c.want) {
			t.Errorf("under a filter refusing %s: %s\nwant step mount and %q", c.refused, out, c.want)
		}
	}
}

func sysfsLaunchChild(t *testing.T, names []string) {
	ws := testWorkspace(t)
	spec := compile(t, policy.Options{Args: []string{"true"}, Workspace: ws, Net: policy.NetHost}, nil)
	spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/sys/devices/system/cpu", Type: "sysfs", Source: "sysfs",
		Options: []string{"ro", "nosuid", "nodev", "noexec"}})
	eperm := uint(unix.EPERM)
	prog, err := seccomp.Compile(&specs.LinuxSeccomp{DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{{Names: names, Action: specs.ActErrno, ErrnoRet: &eperm}}})
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	}
	if err == nil {
		err = seccomp.Load(prog)
	}
	if err != nil {
		t.Fatal("filter:", err)
	}
	err = Command(spec).Run()
	skipIfNoSandbox(t, err)
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v; want a SetupError", err)
	}
	fmt.Printf("ERR: %v\nSTEP: %s\nHINT: %s\n", se.Err, se.Step, se.Hint)
}

// A step of the init's clone child failing after the clone (setsid, setuid, ...) is not
// the user namespace's refusal: no hintUserns for it (review6 F2); under a filter, the
// filter is named with the step. The clone's own EPERM keeps hintUserns.
func TestHintCloneChildStep(t *testing.T) {
	child := fmt.Errorf("fork/exec /proc/self/exe: %w", &cloneStepError{Step: "setsid", Err: unix.EPERM})
	if h := hintIn("clone", child, launchEnv{}); h != "" {
		t.Errorf("setsid EPERM in the clone child, no filter: hint %q, want none", h)
	}
	if h := hintIn("clone", child, launchEnv{filtered: true}); !strings.Contains(h, "seccomp filter") || !strings.Contains(h, "setsid") || strings.Contains(h, "CLONE_NEWUSER") {
		t.Errorf("setsid EPERM in the clone child under a filter: hint %q, want the filter and the step named", h)
	}
	if h := hintIn("clone", fmt.Errorf("clone: %w", unix.EPERM), launchEnv{}); h != hintUserns {
		t.Errorf("the clone's own EPERM: hint %q, want hintUserns", h)
	}
}

// In a container whose seccomp profile refuses a step and whose /proc is masked, the
// hint names both fixes at once (trial 2026-12-02, T3: fixing the first showed the
// second only at the next launch); with /proc unmasked, only the profile.
func TestHintContainerNamesMaskedProcToo(t *testing.T) {
	for _, masked := range []bool{false, true} {
		h := hintIn("hostname", unix.EPERM, launchEnv{filtered: true, container: true, maskedProc: masked})
		if !strings.Contains(h, "seccomp=contrib/seccomp/gosbx.json") || strings.Contains(h, "unmask=ALL") != masked {
			t.Errorf("masked /proc %v: hint %q; want the profile, and unmask=ALL exactly when masked", masked, h)
		}
	}
}
