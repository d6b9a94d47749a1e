package doctor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit"
)

// forkErr is how a failed clone or id map write reaches checkUserns: Go's
// os.StartProcess wraps the errno of the clone, or of the parent's write to
// /proc/PID/uid_map, in a *os.PathError ("fork/exec EXE: operation not permitted").
func forkErr(errno syscall.Errno) error {
	return &os.PathError{Op: "fork/exec", Path: "/usr/local/bin/gosbx", Err: errno}
}

// wantAll fails unless s contains every one of subs.
func wantAll(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: want %q in\n%s", what, sub, s)
		}
	}
}

// wantNone fails if s contains any of subs.
func wantNone(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s: do not want %q in\n%s", what, sub, s)
		}
	}
}

// An Ubuntu 24.04 host as seen by a user: the restriction sysctl is set, user
// namespaces are otherwise enabled, no Debian sysctl.
func ubuntuFacts(uid int) Facts {
	return Facts{Kernel: "6.8.0-45-generic", UID: uid, Root: uid == 0, AppArmorRestrictUserns: "1", MaxUserNamespaces: "63382"}
}

func TestExplainUsernsAppArmorUnprivileged(t *testing.T) {
	// Recorded: unshare(CLONE_NEWUSER) succeeds, the write to uid_map fails with EPERM.
	err := forkErr(unix.EPERM)
	detail, fix := explainUserns(err, ubuntuFacts(1000))
	if detail != err.Error() {
		t.Errorf("detail = %q, want the error %q", detail, err.Error())
	}
	wantAll(t, "fix", fix,
		"kernel.apparmor_restrict_unprivileged_userns=1",        // the cause
		"contrib/apparmor/gosbx",                                // the profile shipped
		"/etc/apparmor.d/",                                      // where it goes
		"apparmor_parser -r",                                    // how it is loaded
		"sysctl kernel.apparmor_restrict_unprivileged_userns=0") // the blunt alternative
	wantNone(t, "fix", fix, "max_user_namespaces", "unprivileged_userns_clone", "seccomp profile")
	// EACCES is what some kernels give for the same refusal: same explanation.
	if _, fix2 := explainUserns(forkErr(unix.EACCES), ubuntuFacts(1000)); fix2 != fix {
		t.Errorf("EACCES under AppArmor: fix %q, want the AppArmor fix", fix2)
	}
}

func TestExplainUsernsAppArmorDoesNotBlameRoot(t *testing.T) {
	// The restriction only applies to callers without CAP_SYS_ADMIN: root failing with
	// EPERM on the same host is something else (a seccomp filter, another LSM).
	_, fix := explainUserns(forkErr(unix.EPERM), ubuntuFacts(0))
	wantNone(t, "root's fix", fix, "contrib/apparmor")
	wantAll(t, "root's fix", fix, "seccomp")
}

func TestExplainUsernsAppArmorSysctlOff(t *testing.T) {
	f := ubuntuFacts(1000)
	f.AppArmorRestrictUserns = "0"
	_, fix := explainUserns(forkErr(unix.EPERM), f)
	wantNone(t, "fix with the restriction off", fix, "contrib/apparmor")
}

func TestExplainUsernsENOSPC(t *testing.T) {
	// Exhausted (the count is per user namespace and per user): ENOSPC from clone.
	f := Facts{UID: 1000, MaxUserNamespaces: "15"}
	_, fix := explainUserns(forkErr(unix.ENOSPC), f)
	wantAll(t, "ENOSPC fix", fix, "user.max_user_namespaces=15", "sysctl user.max_user_namespaces=", "/etc/sysctl.d/")
}

func TestExplainUsernsMaxZero(t *testing.T) {
	// Disabled: user.max_user_namespaces=0 makes clone fail with ENOSPC, for root too;
	// the sysctl must win over every other guess (AppArmor set, inside docker, EPERM).
	for _, tc := range []struct {
		name string
		err  error
		f    Facts
	}{
		{"ENOSPC", forkErr(unix.ENOSPC), Facts{UID: 1000, MaxUserNamespaces: "0"}},
		{"root", forkErr(unix.ENOSPC), Facts{UID: 0, MaxUserNamespaces: "0"}},
		{"apparmor too", forkErr(unix.EPERM), Facts{UID: 1000, MaxUserNamespaces: "0", AppArmorRestrictUserns: "1"}},
		{"docker too", forkErr(unix.EPERM), Facts{UID: 0, MaxUserNamespaces: "0", Container: "docker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fix := explainUserns(tc.err, tc.f)
			wantAll(t, "fix", fix, "user.max_user_namespaces=0", "sysctl user.max_user_namespaces=")
			wantNone(t, "fix", fix, "contrib/apparmor", "seccomp profile")
		})
	}
}

func TestExplainUsernsDebianClone(t *testing.T) {
	f := Facts{Kernel: "6.1.0-18-amd64", UID: 1000, MaxUserNamespaces: "63382", UnprivUsernsClone: "0"}
	_, fix := explainUserns(forkErr(unix.EPERM), f)
	wantAll(t, "Debian fix", fix, "kernel.unprivileged_userns_clone=0", "sysctl kernel.unprivileged_userns_clone=1")
	wantNone(t, "Debian fix", fix, "contrib/apparmor")
	// A root caller (CAP_SYS_ADMIN) is exempt from the Debian switch; uid 0 without
	// CAP_SYS_ADMIN (a container's root) is not.
	f.UID, f.Root = 0, true
	_, fix = explainUserns(forkErr(unix.EPERM), f)
	wantNone(t, "root on Debian", fix, "unprivileged_userns_clone=1")
	f.Root = false
	_, fix = explainUserns(forkErr(unix.EPERM), f)
	wantAll(t, "uid 0 without CAP_SYS_ADMIN on Debian", fix, "unprivileged_userns_clone=1")
}

func TestExplainUsernsContainer(t *testing.T) {
	// Docker's and Kubernetes' default seccomp profiles refuse clone/unshare with
	// CLONE_NEWUSER with EPERM, for root inside the container too.
	for _, c := range []string{"docker", "kubernetes", "podman"} {
		for _, uid := range []int{0, 1000} {
			_, fix := explainUserns(forkErr(unix.EPERM), Facts{UID: uid, MaxUserNamespaces: "15000", Container: c})
			wantAll(t, c+" fix", fix, "inside "+c, "seccomp profile", "CLONE_NEWUSER", "seccomp=contrib/seccomp/gosbx.json", "localhostProfile")
			wantNone(t, c+" fix", fix, "contrib/apparmor", "max_user_namespaces=")
		}
	}
}

func TestExplainUsernsAnotherSandbox(t *testing.T) {
	// Inside gosbx exec (or bwrap, or any seccomp sandbox) on a plain host: EPERM, no
	// container marker, no sysctl set. This is what integration/doctor_test.go observes.
	_, fix := explainUserns(forkErr(unix.EPERM), Facts{UID: 65534, MaxUserNamespaces: "96364"})
	wantAll(t, "fix", fix, "seccomp", "another sandbox", "sysctl user.max_user_namespaces")
}

func TestExplainUsernsEINVAL(t *testing.T) {
	_, fix := explainUserns(forkErr(unix.EINVAL), Facts{UID: 1000, MaxUserNamespaces: "15000"})
	wantAll(t, "EINVAL fix", fix, "kernel", "CONFIG_USER_NS", "Linux 5.12")
	wantNone(t, "EINVAL fix", fix, "contrib/apparmor", "seccomp profile")
}

func TestExplainUsernsOther(t *testing.T) {
	detail, fix := explainUserns(errors.New("something odd"), Facts{UID: 1000})
	if detail != "something odd" || fix == "" {
		t.Errorf("detail %q fix %q: want the error and a generic fix", detail, fix)
	}
}

// checkUserns must keep what the probe printed when the child started but failed (an
// *exec.ExitError says only "exit status 1"), as checkNamespace does.
func TestCheckUsernsKeepsProbeOutput(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "fakegosbx")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho probe-said-why >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Only meaningful where this process can make a user namespace at all.
	probe := exec.Command("/bin/true")
	probe.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
	if err := probe.Run(); err != nil {
		t.Skipf("no user namespaces for this caller: %v", err)
	}
	c := checkUserns(exe, Facts{UID: os.Getuid()})
	if c.Status != Fail {
		t.Fatalf("status %s, want fail (the probe exited 1)", c.Status)
	}
	if !strings.Contains(c.Detail, "probe-said-why") {
		t.Errorf("detail %q: want the probe's own output (doctor/checks.go checkUserns drops clone's output)", c.Detail)
	}
}

// A procfs mount refused under a masked /proc, as a library caller of nsinit gets it:
// a *mounts.Error across the process boundary, unwrapping to EPERM.
func maskedProcErr() *nsinit.SetupError {
	return &nsinit.SetupError{Step: "mount", Err: &mounts.Error{Op: "mount", Source: "proc", Target: "/proc",
		Flags: "rw,nosuid,nodev,noexec", Err: unix.EPERM}}
}

func TestExplainSetupMaskedProc(t *testing.T) {
	f := Facts{UID: 0, Container: "docker", MaskedProc: []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/acpi"}}
	fix := explainSetup(maskedProcErr(), f)
	wantAll(t, "masked /proc fix", fix, "/proc/kcore, /proc/keys, /proc/timer_list, /proc/acpi",
		"new procfs", "systempaths=unconfined", "procMount: Unmasked", "on the host")
	// Without the list it still explains, without an empty "()".
	fix = explainSetup(maskedProcErr(), Facts{})
	wantAll(t, "masked /proc fix without the list", fix, "hidden by mounts", "systempaths=unconfined")
	wantNone(t, "masked /proc fix without the list", fix, "()")
	// The same failure wrapped with more words is the same failure: fields, not text.
	wrapped := &nsinit.SetupError{Step: "mount", Err: fmt.Errorf("root: %w", maskedProcErr().Err)}
	wantAll(t, "wrapped masked /proc", explainSetup(wrapped, Facts{}), "new procfs")
}

// A clone failure at the sandbox launch is the user namespace, not a masked /proc.
func TestExplainSetupCloneIsNotMaskedProc(t *testing.T) {
	fix := explainSetup(&nsinit.SetupError{Step: "clone", Err: forkErr(unix.EPERM)}, Facts{})
	wantAll(t, "clone fix", fix, "user namespace")
	wantNone(t, "clone fix", fix, "procfs", "systempaths")
}

// A bind mount refused, or a message that merely says "procfs", is not a masked /proc.
func TestExplainSetupBindOfProcNamedPathIsNotMaskedProc(t *testing.T) {
	for _, err := range []error{
		&mounts.Error{Op: "bind", Source: "/home/u/proc", Target: "/home/u/proc", Flags: "ro,nosuid,nodev", Err: unix.EPERM},
		errors.New("mount proc on /proc: operation not permitted (a new procfs, systempaths)"),
	} {
		fix := explainSetup(&nsinit.SetupError{Step: "mount", Err: err}, Facts{})
		wantNone(t, "bind fix", fix, "procfs", "systempaths")
	}
}

func TestExplainSetupOtherSteps(t *testing.T) {
	for _, tc := range []struct {
		step string
		err  error
		want []string
	}{
		{"mount", &mounts.Error{Op: "mount", Source: "tmpfs", Target: "/tmp", Err: fmt.Errorf("fsopen tmpfs: %w", unix.ENOSYS)},
			[]string{"kernel", "Linux 5.12"}},
		{"seccomp", fmt.Errorf("seccomp: %w", unix.EPERM), []string{"seccomp", "outer seccomp filter"}},
		{"cgroup", errors.New("the limits asked for cannot be applied"), []string{"cgroup checks"}},
		{"pivot_root", &mounts.Error{Op: "pivot_root", Target: "/", Err: unix.EINVAL}, []string{"step pivot_root"}},
	} {
		wantAll(t, "step "+tc.step, explainSetup(&nsinit.SetupError{Step: tc.step, Err: tc.err}, Facts{}), tc.want...)
	}
}

func TestExplainCgroup(t *testing.T) {
	// Root: the only reason root has no cgroup is a missing or read-only file system.
	for _, mode := range []string{"cgroup-v1", "cgroup-v2", "none"} {
		wantAll(t, "root "+mode, explainCgroup(mode, Facts{UID: 0, Root: true}, nil), "missing or read-only", "/sys/fs/cgroup")
	}
	// Non-root, v1 or hybrid: no delegation exists in v1.
	fix := explainCgroup("cgroup-v1", Facts{UID: 1000}, nil)
	wantAll(t, "non-root v1", fix, "cgroup v1", "not root", "systemd.unified_cgroup_hierarchy=1", "--limits best-effort")
	wantNone(t, "non-root v1", fix, "Delegate=yes")
	// the same in a container (this VM has /.dockerenv): the v1 rule, not the container's
	fix = explainCgroup("cgroup-v1", Facts{UID: 65534, Container: "docker"}, nil)
	wantAll(t, "non-root v1 in a container", fix, "unprivileged callers cannot create v1 groups")
	wantNone(t, "non-root v1 in a container", fix, "container")
	// Non-root, v2: delegation.
	fix = explainCgroup("cgroup-v2", Facts{UID: 1000}, nil)
	wantAll(t, "non-root v2", fix, "delegated", "systemd-run --user --scope -p Delegate=yes", "--cgroup-parent", "--limits best-effort")
	wantNone(t, "non-root v2", fix, "unified_cgroup_hierarchy")
}

// A container's root (uid 0 without CAP_SYS_ADMIN) on a cgroup v1 host is not told to
// run as root (recorded: "not root ... run as root" to a uid-0 caller in Podman); when
// its own group is not mounted (the host's cgroup namespace) the fix names that.
func TestExplainCgroupContainerRoot(t *testing.T) {
	f := Facts{UID: 0, Container: "podman"}
	missing := fmt.Errorf("no usable cgroup: create cgroup v1 group gosbx-x: this process's memory group is not in this mount namespace: %w",
		&os.PathError{Op: "stat", Path: "/sys/fs/cgroup/memory/libpod_parent/libpod-1", Err: unix.ENOENT})
	fix := explainCgroup("cgroup-v1", f, missing)
	wantAll(t, "container root, own group missing", fix, "/proc/self/cgroup", "cgroup namespace", "--cgroupns=private) does not help", "--limits best-effort")
	wantNone(t, "container root, own group missing", fix, "not root", "run as root")
	fix = explainCgroup("cgroup-v1", f, &os.PathError{Op: "mkdir", Path: "/sys/fs/cgroup/memory/gosbx-x", Err: unix.EROFS})
	wantAll(t, "container root, read-only", fix, "read-only", "--limits best-effort")
	wantNone(t, "container root, read-only", fix, "not root", "run as root")
	// the same cause for uid 65534 in the container (the new-user trial): the fix names
	// that cause, not "cgroup v1 and not root ... run as root, move the host to v2"
	// against the detail; nor a writable cgroup mount, which a non-root v1 caller
	// could not use
	fix = explainCgroup("cgroup-v1", Facts{UID: 65534, Container: "podman"}, missing)
	wantAll(t, "container non-root, own group missing", fix, "/proc/self/cgroup", "cgroup namespace", "--limits best-effort", "limit the container itself")
	wantNone(t, "container non-root, own group missing", fix, "not root", "unified_cgroup_hierarchy", "writable cgroup mount")
	// one fix, as the detail (cgroup.New's error) names it, for every uid (T15)
	if rootFix := explainCgroup("cgroup-v1", Facts{UID: 0, Container: "podman"}, missing); fix != rootFix || !strings.HasSuffix(fix, cgroup.FixContainerCgroup) {
		t.Errorf("container, own group missing: uid 65534's fix %q, uid 0's %q; want both to end in cgroup.FixContainerCgroup", fix, rootFix)
	}
	// a non-root caller whose own group is there (this VM as 65534): the v1 rule still
	fix = explainCgroup("cgroup-v1", Facts{UID: 65534, Container: "podman"}, &os.PathError{Op: "mkdir", Path: "/sys/fs/cgroup/memory/gosbx-x", Err: unix.EACCES})
	wantAll(t, "container non-root, mkdir refused", fix, "not root", "unprivileged callers cannot create v1 groups")
	fix = explainCgroup("cgroup-v2", Facts{UID: 0}, &os.PathError{Op: "mkdir", Path: "/sys/fs/cgroup/gosbx-x", Err: unix.EROFS})
	wantNone(t, "uid 0 without CAP_SYS_ADMIN, v2", fix, "delegated to this user")
}

// With no cgroup file system at all (inside another sandbox, a container without
// /sys/fs/cgroup), a non-root caller's problem is not delegation.
func TestExplainCgroupNoneNonRoot(t *testing.T) {
	fix := explainCgroup("none", Facts{UID: 65534}, nil)
	wantNone(t, "non-root, no cgroup fs", fix, "delegated", "Delegate=yes")
	wantAll(t, "non-root, no cgroup fs", fix, "/sys/fs/cgroup")
}

// The container check names the runtime and what said so, and warns of a masked
// /proc with the flags that unmask it; outside a container it is skipped.
func TestCheckContainer(t *testing.T) {
	c := checkContainer(Facts{UID: 0, Container: "podman", ContainerHow: "/run/.containerenv", Seccomp: "2",
		MaskedProc: []string{"/proc/kcore", "/proc/keys"}})
	if c.Status != Warn {
		t.Errorf("masked /proc: status %s, want warn", c.Status)
	}
	wantAll(t, "container detail", c.Detail, "podman (/run/.containerenv)", "seccomp filter", "without CAP_SYS_ADMIN", "/proc/kcore, /proc/keys")
	wantAll(t, "container fix", c.Fix, "unmask=ALL", "systempaths=unconfined", "procMount: Unmasked", "hostUsers: false")
	c = checkContainer(Facts{UID: 65534, Container: "docker", ContainerHow: "/.dockerenv"})
	if c.Status != OK || c.Fix != "" {
		t.Errorf("unmasked /proc: %+v", c)
	}
	if c := checkContainer(Facts{}); c.Status != Skip {
		t.Errorf("no container: %+v", c)
	}
}

// A launch error's own hint wins: a root caller's init (an unprivileged host id) could
// not execute a 0700 binary, which the launch says (the user namespace check passed).
func TestExplainSetupKeepsTheErrorsHint(t *testing.T) {
	hint := "a root caller's init runs as the unprivileged host id 2100000000: the gosbx binary must be executable by other users, e.g. mode 0755"
	fix := explainSetup(&nsinit.SetupError{Step: "clone", Err: forkErr(unix.EACCES), Hint: hint}, Facts{})
	if fix != hint {
		t.Errorf("fix %q; want the error's hint %q", fix, hint)
	}
}

// A probe child that said why it failed is shown by its words alone (the trial saw
// "mount overlay: permission denied exit status 1"); one that said nothing, by its status.
func TestProbeDetail(t *testing.T) {
	err := exec.Command("sh", "-c", "exit 1").Run()
	if got := probeDetail("mount overlay: permission denied", err); got != "mount overlay: permission denied" {
		t.Errorf("with a message: %q", got)
	}
	if got := probeDetail("", err); got != "exit status 1" {
		t.Errorf("without one: %q", got)
	}
}
