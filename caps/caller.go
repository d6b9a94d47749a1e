package caps

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/internal/lazy"
)

// Caller is the one answer to "is this a root caller", decided by CurrentCaller and
// carried from there (policy.Host.Root, the launcher, doctor).
type Caller struct {
	// Root: the caller is uid 0 of the initial user namespace with CAP_SYS_ADMIN, so a
	// sandbox's command runs as an unprivileged host id of the range, its read-write
	// binds idmapped. Otherwise the caller takes the unprivileged path: its own uid
	// mapped to itself in a new user namespace, binds made inside it.
	Root bool
	// NotRoot says why a caller with euid 0 is not a root caller ("" otherwise).
	NotRoot string
	// OwnsIDs: euid 0 of the initial user namespace with CAP_SETUID, CAP_SETGID and
	// CAP_SETFCAP (a root caller, or one without only CAP_SYS_ADMIN): it can create a
	// user namespace owned by another host id, and write that namespace's id maps.
	OwnsIDs bool
}

// CurrentCaller decides, once per process, whether the calling process is a root
// caller: effective uid 0, in the initial user namespace (/proc/self/uid_map maps every
// id to itself, as in a root container without a user namespace), with CAP_SYS_ADMIN in
// its effective set (capget(2)), which in the initial user namespace holds over its
// mount namespace's owner too. A uid 0 without CAP_SYS_ADMIN (a container's root,
// `setpriv --bounding-set=-sys_admin`) cannot clone or idmap the host's mounts, and
// root of another user namespace is already an unprivileged host user: neither is one.
func CurrentCaller() Caller { return currentCaller.Get(probeCaller) }

var currentCaller lazy.Value[Caller]

func probeCaller() Caller {
	if os.Geteuid() != 0 {
		return Caller{}
	}
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil || strings.Join(strings.Fields(string(b)), " ") != "0 0 4294967295" {
		return Caller{NotRoot: "uid 0 of a user namespace other than the initial one (an unprivileged host user)"}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return Caller{NotRoot: "uid 0 whose capabilities cannot be read: " + err.Error()}
	}
	has := func(c int) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	owns := has(unix.CAP_SETUID) && has(unix.CAP_SETGID) && has(unix.CAP_SETFCAP)
	if !has(unix.CAP_SYS_ADMIN) {
		return Caller{NotRoot: "uid 0 without CAP_SYS_ADMIN (a container's root, or capabilities dropped)", OwnsIDs: owns}
	}
	return Caller{Root: true, OwnsIDs: owns}
}
