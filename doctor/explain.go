package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/mounts"
	"github.com/gosbx/gosbx/nsinit"
)

const apparmorFix = "Ubuntu restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1): " +
	"install the AppArmor profile shipped in contrib/apparmor/gosbx (edit the binary's path, copy it to /etc/apparmor.d/, " +
	"then `apparmor_parser -r /etc/apparmor.d/gosbx`), or, less safely, `sysctl kernel.apparmor_restrict_unprivileged_userns=0`"

// explainUserns says why a user namespace could not be created, from the error of the
// clone or of the id map write and the host's facts.
func explainUserns(err error, f Facts) (detail, fix string) {
	detail = err.Error()
	switch {
	case errors.Is(err, unix.ENOSPC) || f.MaxUserNamespaces == "0":
		fix = "user namespaces are disabled or exhausted (user.max_user_namespaces=" + f.MaxUserNamespaces +
			"): `sysctl user.max_user_namespaces=15000` (and in /etc/sysctl.d/ to keep it)"
	case f.UnprivUsernsClone == "0" && !f.Root:
		fix = "Debian's kernel.unprivileged_userns_clone=0 forbids them to unprivileged users: `sysctl kernel.unprivileged_userns_clone=1`"
	case f.AppArmorRestrictUserns == "1" && !f.Root:
		fix = apparmorFix
	case f.Container != "" && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)):
		fix = fmt.Sprintf("inside %s, the container's seccomp profile refused clone with CLONE_NEWUSER: "+
			"run the container with gosbx's seccomp profile: %s", f.Container, nsinit.FixSeccompProfile)
	case errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		fix = nsinit.Hint("clone", err)
	case errors.Is(err, unix.EINVAL):
		fix = "the kernel lacks user namespaces (CONFIG_USER_NS) or the nesting limit is reached: gosbx needs Linux 5.12 or later with CONFIG_USER_NS"
	default:
		fix = "see the error: gosbx needs unprivileged user namespaces (or root)"
	}
	return detail, fix
}

// explainSetup says why a sandbox launch failed at a setup step, from the error's
// fields (its Hint, else nsinit.Hint of its step, a *mounts.Error's operation and
// source, the errno)
// and the host's facts, never from its text.
func explainSetup(se *nsinit.SetupError, f Facts) string {
	hint := se.Hint // the launch's own (a root caller's binary not executable by its host id)
	if hint == "" {
		hint = nsinit.Hint(se.Step, se.Err)
	}
	var me *mounts.Error
	switch {
	case se.Step == "cgroup":
		return "see the cgroup checks"
	case errors.As(se.Err, &me) && me.Op == "mount" && me.Source == "proc" && errors.Is(se.Err, unix.EPERM):
		if len(f.MaskedProc) > 0 {
			return "the host's /proc has entries hidden by mounts (" + strings.Join(f.MaskedProc, ", ") + "): " + hint
		}
		return hint
	case hint != "":
		return hint
	}
	return "gosbx could not build the sandbox at step " + se.Step + "; the message says why"
}

// explainCgroup says what to do when this caller has no usable cgroup, from the
// cgroup mode, the host's facts and the error of cgroup.New (nil: none was tried). A
// uid 0 without CAP_SYS_ADMIN (a container's root) is not told to run as root: v1
// groups are made by file permissions, which its uid passes.
func explainCgroup(mode string, f Facts, err error) string {
	if errors.Is(err, fs.ErrNotExist) && mode == "cgroup-v1" {
		// cgroup.ownGroupsMounted: the path /proc/self/cgroup names is not mounted here;
		// the cause the check's detail names, so the fix follows it (for a caller other
		// than root too, who was told "cgroup v1 and not root" against that detail)
		why := "this process's own cgroup, the path /proc/self/cgroup names, is not under this mount namespace's /sys/fs/cgroup " +
			"(a container that shares the host's cgroup namespace sees the host's path, with only its own group mounted): " +
			"limits you ask for give 125; "
		// the fix the detail (cgroup.New's error) already names, whatever the uid: one
		// text in the row and in "How to fix" (trial 2026-12-02, T15)
		return why + cgroup.FixContainerCgroup
	}
	if f.UID != 0 && mode == "cgroup-v1" {
		// true in a container too (a /.dockerenv VM): the container's cgroup is not why
		return "cgroup v1 only (or hybrid) and not root: unprivileged callers cannot create v1 groups. Limits you ask for will be refused (125); " +
			"run as root, move the host to cgroup v2 (systemd.unified_cgroup_hierarchy=1), or use --limits best-effort"
	}
	if f.Container != "" {
		return "inside a container the cgroup file system is read-only or not delegated (Docker, Podman and Kubernetes mount it so): " +
			"limits you ask for give 125; use --limits best-effort and limit the container itself (docker/podman run --memory, " +
			"--pids-limit, --cpus; a Pod's resources.limits)"
	}
	if f.UID == 0 || mode == "none" {
		return "the cgroup file system is missing or read-only here (inside a container?): mount cgroup2 at /sys/fs/cgroup or run on the host"
	}
	return "no cgroup v2 subtree is delegated to this user: run gosbx in a delegated scope " +
		"(`systemd-run --user --scope -p Delegate=yes gosbx exec --cgroup-parent <that scope's group> ...`) or use --limits best-effort"
}
