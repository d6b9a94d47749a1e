package nsinit

import (
	"errors"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/lazy"
	"github.com/gosbx/gosbx/mounts"
)

// The hints, each written once: SetupError carries the one that fits (Hint), gosbx
// exec prints it, and doctor explains from it.
const (
	hintUserns = "creating a user namespace failed: a seccomp filter (inside another sandbox?), a container's " +
		"seccomp profile, an LSM policy or a sysctl forbids it: check `sysctl user.max_user_namespaces " +
		"kernel.unprivileged_userns_clone kernel.apparmor_restrict_unprivileged_userns` (ENOSPC: " +
		"user.max_user_namespaces is exhausted)"
	hintMaskedProc = "the kernel refuses a new procfs when the host's /proc has entries hidden by mounts, " +
		"as inside Docker, Podman or Kubernetes (a subset=pid procfs is refused too): run the container with an unmasked /proc " +
		"(" + FixUnmaskProc + ") or run gosbx on the host; gosbx never falls back to the host's /proc"
	hintNoSys   = "the kernel lacks a feature gosbx needs (the new mount API, openat2: Linux 5.12 or later)"
	hintSeccomp = "loading the seccomp filter failed: an outer seccomp filter may forbid seccomp(2); run gosbx where seccomp is allowed"

	// FixSeccompProfile is how a container is given gosbx's seccomp profile
	// (contrib/seccomp/gosbx.json, made by `gosbx seccomp container-profile`).
	FixSeccompProfile = "docker run / podman run --security-opt seccomp=contrib/seccomp/gosbx.json; compose: " +
		"security_opt: [\"seccomp=gosbx.json\"]; Kubernetes: securityContext.seccompProfile: {type: Localhost, " +
		"localhostProfile: gosbx.json} (see contrib/docker/)"
	// FixUnmaskProc is how a container's /proc is left unmasked. With it, a container
	// whose root is the host's root can write /proc/sys: give it a user namespace too.
	FixUnmaskProc = "docker run --security-opt systempaths=unconfined; podman run --security-opt unmask=ALL; compose: " +
		"security_opt: [\"systempaths=unconfined\"]; Kubernetes: securityContext.procMount: Unmasked with hostUsers: false. " +
		"A container running as the host's root then has a writable /proc/sys: run it in a user namespace " +
		"(podman --userns=auto, Docker userns-remap, hostUsers: false) or as a non-root user"
	// FixAppArmor is how a container is run without an AppArmor profile that denies mounts.
	FixAppArmor = "docker run / podman run --security-opt apparmor=unconfined (or a profile that allows mount and " +
		"userns: contrib/apparmor/gosbx); Kubernetes: securityContext.appArmorProfile: {type: Unconfined} or Localhost"
)

// launchEnv is what the launcher knows of the process it runs in, for hints: whether
// a seccomp filter confines it (Seccomp: 2 in /proc/self/status, as inside a
// container with its runtime's profile; the init inherits it) and its AppArmor label.
type launchEnv struct {
	filtered  bool
	container bool   // Container found one
	apparmor  string // /proc/self/attr/current, "" when none or unconfined
	// maskedProc: in a container, /proc has entries hidden by mounts (its runtime's
	// default), where the kernel refuses the sandbox's procfs (hintMaskedProc)
	maskedProc bool
	// mountCallsPass says whether the filter lets the mount calls through to the
	// kernel (mountCallsReachKernel, asked once, only for a mount step's failure);
	// nil: not known, the filter is taken to refuse them.
	mountCallsPass func() bool
}

// currentEnv is probeEnv's answer, asked once per process.
func currentEnv() launchEnv { return launchEnvOnce.Get(probeEnv) }

var launchEnvOnce lazy.Value[launchEnv]

func probeEnv() launchEnv {
	var e launchEnv
	name, _ := Container()
	e.container = name != ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok {
				e.filtered = strings.TrimSpace(v) == "2"
			}
		}
	}
	if e.filtered {
		e.mountCallsPass = sync.OnceValue(mountCallsReachKernel)
	}
	if e.container {
		e.maskedProc = procMasked()
	}
	if b, err := os.ReadFile("/proc/self/attr/current"); err == nil {
		if l := strings.TrimSpace(strings.TrimRight(string(b), "\x00")); l != "" && l != "unconfined" {
			e.apparmor = l
		}
	}
	return e
}

// procMasked says whether /proc has mounts below it (/proc/self/mountinfo), as a
// container runtime's masked paths are (/proc/kcore, /proc/keys, …: a bind of /dev/null
// or a tmpfs), which make the kernel refuse a new procfs.
func procMasked() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], "/proc/") {
			return true
		}
	}
	return false
}

// Hint says what usually fixes a setup failure at step with err, decided from the
// error's fields (the step, a *mounts.Error's operation and source, the errno) and
// from whether a seccomp filter or AppArmor profile confines gosbx itself, never from
// the error's text; "" when nothing specific is known. A mount step's EPERM under a
// filter is the filter's only when the filter refuses mount calls (probed:
// mountCallsReachKernel); else it is the kernel's own refusal, with its own hint. A step may also be the name of a
// system call gosbx needs ("openat2", "close_range", "pidfd_open"), as doctor's probes
// give it.
func Hint(step string, err error) string { return hintIn(step, err, currentEnv()) }

func hintIn(step string, err error, env launchEnv) string {
	var me *mounts.Error
	denied := errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS)
	if cs := (*cloneStepError)(nil); step == "clone" && errors.As(err, &cs) {
		// the clone succeeded and a later step of its child failed: no namespace hint
		if env.filtered && denied {
			return "a seccomp filter around gosbx (Seccomp: 2 in /proc/self/status) may have refused the " +
				"init's " + cs.Step + " step: run gosbx outside it"
		}
		return ""
	}
	proc := errors.As(err, &me) && me.Op == "mount" && me.Source == "proc" && errors.Is(err, unix.EPERM)
	mountStep := step == "mount" || step == "pivot_root"
	kernels := func() bool { return mountStep && env.mountCallsPass != nil && env.mountCallsPass() }
	if call := filteredCall(step); env.filtered && denied && !proc && call != "" && !kernels() {
		switch {
		case env.container:
			h := "the seccomp filter gosbx runs under (Seccomp: 2 in /proc/self/status: inside a container, its " +
				"seccomp profile; Docker's and Podman's defaults allow this only with CAP_SYS_ADMIN) refused " + call +
				": run the container with gosbx's profile: " + FixSeccompProfile
			if env.maskedProc {
				// the next refusal, said now: one round trip, not two (trial finding T3)
				h += "; and its /proc has entries hidden by mounts, where the kernel refuses the sandbox's procfs " +
					"next: unmask it too (" + FixUnmaskProc + "); gosbx doctor lists every layer"
			}
			return h
		case step != "clone": // clone keeps hintUserns, which names this case too
			return "a seccomp filter around gosbx (Seccomp: 2 in /proc/self/status: another sandbox, gosbx exec's own " +
				"filter included, or a service manager's SystemCallFilter=) refused " + call + ": run gosbx outside it"
		}
	}
	if env.apparmor != "" && errors.Is(err, unix.EACCES) && (step == "mount" || step == "pivot_root") {
		return "the AppArmor profile " + env.apparmor + " that confines gosbx refused a mount: " + FixAppArmor
	}
	switch {
	case step == "clone" && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
		errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL)):
		return hintUserns
	case proc:
		return hintMaskedProc
	case errors.Is(err, unix.ENOSYS):
		return hintNoSys
	case mountStep && errors.Is(err, unix.EPERM):
		return kernelMountHint(me, env.filtered)
	case step == "seccomp":
		return hintSeccomp
	}
	return ""
}

// kernelMountHint explains a mount step's EPERM that no seccomp filter gave (none
// confines gosbx, or the one that does lets the mount calls through): the kernel's own
// refusals of a mount in a user namespace (mount_namespaces(7), user_namespaces(7);
// sysfs: fs/sysfs/mount.c, mount_too_revealing in fs/namespace.c). me may be nil.
func kernelMountHint(me *mounts.Error, filtered bool) string {
	who := "the kernel refused the mount in the sandbox's user namespace"
	if filtered {
		who += " (not the seccomp filter gosbx runs under: it lets mount calls through, probed)"
	}
	var src string
	if me != nil {
		src = me.Source
	}
	switch src {
	case "sysfs":
		return who + ": it mounts a sysfs only for a user namespace that owns the network namespace (not with " +
			"--net host or a network namespace shared with the host), and only where the host's /sys has no entries " +
			"hidden by mounts, as inside Docker, Podman or Kubernetes (" + FixUnmaskProc + "); a read-only bind of " +
			"the host's /sys subtree needs neither"
	case "cgroup":
		return who + ": a cgroup v1 hierarchy cannot be mounted in a user namespace; mount cgroup2 with a cgroup namespace"
	}
	const landlock = "or a Landlock ruleset around gosbx (another sandbox) forbids every mount"
	if me != nil && me.Op == "mount" && src != "" {
		return who + ": " + src + " is a file system type only the host's root may mount, " + landlock
	}
	return who + ": the host's mount locks a flag this one would clear (a bind's read-only, nosuid, nodev, noexec " +
		"and atime flags cannot be cleared in a user namespace), " + landlock
}

// filteredCall names the system call of a setup step that container seccomp profiles
// refuse (seccomp.ContainerNeeds), "" for other steps.
func filteredCall(step string) string {
	switch step {
	case "clone":
		return "clone with CLONE_NEWUSER"
	case "pid namespace":
		return "unshare(CLONE_NEWPID)"
	case "hostname":
		return "sethostname"
	case "mount", "pivot_root":
		return "a mount call (mount, umount2, pivot_root, open_tree, fsopen, fsconfig, fsmount, move_mount, mount_setattr)"
	case "openat2", "close_range", "pidfd_open": // doctor's probes of these calls, named as the step
		return step
	}
	return ""
}

// Container says which container runtime this process runs under ("podman", "docker",
// "kubernetes", "containerd", "lxc"; "" for none found) and what said so: the files
// runtimes leave in the root (/run/.containerenv, /.dockerenv), the Kubernetes service
// variables, or the cgroup path of this process or of pid 1 (cgroups(7)).
func Container() (name, evidence string) {
	switch {
	case fileExists("/run/.containerenv"):
		return "podman", "/run/.containerenv"
	case fileExists("/.dockerenv"):
		return "docker", "/.dockerenv"
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		return "kubernetes", "KUBERNETES_SERVICE_HOST"
	}
	for _, p := range []string{"/proc/self/cgroup", "/proc/1/cgroup"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		for _, c := range []struct{ key, name string }{{"kubepods", "kubernetes"}, {"libpod", "podman"},
			{"docker", "docker"}, {"containerd", "containerd"}, {"lxc", "lxc"}} {
			if strings.Contains(s, c.key) {
				return c.name, p
			}
		}
	}
	return "", ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }
