package nsinit

import (
	"errors"

	"golang.org/x/sys/unix"

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
		"as inside Docker or Kubernetes: run the container with an unmasked /proc (docker --security-opt " +
		"systempaths=unconfined, Kubernetes procMount: Unmasked) or run gosbx on the host; gosbx never falls " +
		"back to the host's /proc"
	hintNoSys   = "the kernel lacks a feature gosbx needs (the new mount API, openat2: Linux 5.12 or later)"
	hintSeccomp = "loading the seccomp filter failed: an outer seccomp filter may forbid seccomp(2); run gosbx where seccomp is allowed"
)

// Hint says what usually fixes a setup failure at step with err, decided from the
// error's fields (the step, a *mounts.Error's operation and source, the errno), never
// from its text; "" when nothing specific is known.
func Hint(step string, err error) string {
	var me *mounts.Error
	switch {
	case step == "clone" && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
		errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EINVAL)):
		return hintUserns
	case errors.As(err, &me) && me.Op == "mount" && me.Source == "proc" && errors.Is(err, unix.EPERM):
		return hintMaskedProc
	case errors.Is(err, unix.ENOSYS):
		return hintNoSys
	case step == "seccomp":
		return hintSeccomp
	}
	return ""
}
