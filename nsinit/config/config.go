// Package config is the sandbox's configuration: the one contract between whoever
// decides the boundary (package policy, or a library caller) and the code that builds
// it (the launcher in nsinit, the init stage, mounts, cgroup). It is runtime-spec types
// where the runtime-spec has the field (specs.Process, specs.Mount, id mappings,
// namespaces, masked and read-only paths, cgroup resources), and typed extensions for
// what the runtime-spec lacks (symlinks, optional read-only paths, the limits' mode, a
// root caller's id range, the after-run cleanup and the directories to make before the
// launch, the compiled seccomp program).
//
// A Config is checked by Validate, sent to the init by Encode/Decode (a bounded binary
// encoding), and turned into OCI JSON and back by ToSpec/FromSpec: annotations exist
// only there, never on the way to the init.
package config

import (
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/seccomp"
)

// Config is one sandbox: the command (Process; nil in a Pool's template, where each
// command brings its own), the new root, the namespaces and identities, the limits and
// the seccomp program, and what must not outlive the sandbox on the host.
type Config struct {
	// Process is the command: args, env, cwd, user (uid, gid, umask) and rlimits.
	// Every capability is dropped and no_new_privs is always set, so its
	// Capabilities must be empty; fields gosbx does not implement are refused.
	Process *specs.Process `json:"process,omitempty"`
	// Hostname is the UTS namespace's host name ("" keeps the new namespace's copy).
	Hostname string `json:"hostname,omitempty"`
	// Mounts build the new root, in order: "bind" (options rbind or bind, ro, nosuid,
	// nodev, noexec, and gosbx's "idmap") or a file system fsopen(2) knows.
	Mounts []specs.Mount `json:"mounts,omitempty"`
	// Linux holds the runtime-spec's linux fields gosbx implements.
	Linux *Linux `json:"linux,omitempty"`

	// Symlinks are created in the new root after the mounts (merged-usr /bin, /dev/fd,
	// a workspace named through a symlink).
	Symlinks []Symlink `json:"symlinks,omitempty"`
	// Files are small files written in the new root after the symlinks, each a new
	// regular file (never over an existing name, no symlink followed) in one of the
	// config's tmpfs mounts: the private HOME's ~/.profile (policy). At most MaxFileSize
	// bytes each.
	Files []File `json:"files,omitempty"`
	// ReadonlyOptional are the entries of Linux.ReadonlyPaths that may be absent
	// (kernel interfaces such as /proc/sysrq-trigger); every other one must exist.
	ReadonlyOptional []string `json:"readonlyOptional,omitempty"`
	// Limits says which of Linux.Resources must be applied; the launcher's alone.
	Limits Limits `json:"limits,omitzero"`
	// RootID is set for a caller of uid 0: a root caller's command runs as a host id of
	// its range; for a uid 0 that is not a root caller (no CAP_SYS_ADMIN), or a root
	// caller's uid 0 fallback, a host id of the range owns the sandbox's user namespace.
	// The launcher's alone.
	RootID *RootID `json:"rootID,omitempty"`
	// Cleanup lists what must not be left on the host once the sandbox has ended
	// (generic entries, path and kind: nsinit/cleanup), done by the launcher after the
	// run (by the init when the launcher died, or a later launch from its journal).
	Cleanup []cleanup.Entry `json:"cleanup,omitempty"`
	// MakeDirs are directories that must exist when the sandbox is built (bind
	// destinations kept read-only, so that the command cannot create them): the policy
	// only names them, the launcher creates them (cleanup.MakeDirs) right before the
	// clone. The launcher's alone.
	MakeDirs []string `json:"makeDirs,omitempty"`
	// Egress, when set, carries the sandbox's outbound connections through the owner's
	// proxy (package egress): the sandbox keeps its own network namespace with only lo,
	// where its init listens (EgressPorts) and hands the listening sockets to the owner;
	// /etc/resolv.conf inside names the DNS stub. Requires a network namespace. Only
	// its presence is sent to the init; the rules are the owner's.
	Egress *Egress `json:"egress,omitempty"`
	// Publish are port forwards from the host into the sandbox: the owner listens on
	// HostIP:HostPort and carries each connection to Port on the sandbox's loopback,
	// connected by its init. Requires a network namespace. Only the ports are sent to
	// the init, which connects to no other.
	Publish []Publish `json:"publish,omitempty"`
	// HostPorts are ports of the host's loopback the sandbox may reach at the same
	// port of its own loopback (--host-port): its init listens on 127.0.0.1:PORT and
	// the owner carries each connection to the host's 127.0.0.1:PORT. At most
	// MaxHostPorts; requires a network namespace.
	HostPorts []uint16 `json:"hostPorts,omitempty"`
	// Timeout, if positive, is the sandbox's wall-clock limit (a policy's
	// process.timeout, or policy.Options.Timeout): nsinit.Cmd kills the whole sandbox
	// after the shorter of this and Cmd.Timeout. The launcher's alone; in OCI JSON,
	// TimeoutAnnotation.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Guard, when set, is consulted by a session (nsinit.Session) around each of its
	// commands: policy.Build sets one over the writable trees it searched for protected
	// paths (a repository made there after the session's start has no read-only .git:
	// SessionGuard). Not part of the OCI JSON; a config made from a spec has none.
	Guard Guard `json:"-"`
	// UserCounts are the limits the init writes in the sandbox's own user namespace
	// (/proc/sys/user/NAME, user_namespaces(7); kernel/ucount.c charges each object
	// made inside to this namespace's limit and to every ancestor's) before anything
	// runs there, through the sandbox's own procfs (one mount of type proc is then
	// required). Nil: the launcher's default, half of each of UserCountNames as the
	// launcher's own user namespace has it (nsinit), so that a sandbox cannot take
	// every inotify instance or fanotify group of the user that runs it; none where a
	// host id of the sandbox's own owns its user namespace (a root caller's range),
	// which the kernel charges instead of the caller. Empty: none. Not part of the OCI
	// JSON.
	UserCounts []UserCount `json:"-"`
}

// UserCount is one per-user-namespace limit: Name, one of UserCountNames, set to Max
// (a count of objects, at least 1).
type UserCount struct {
	Name string
	Max  int64
}

// UserCountNames are the /proc/sys/user files UserCounts may set: the per-user
// counts a command can spend without a capability (the namespace counts need
// CAP_SYS_ADMIN, which no command has).
var UserCountNames = []string{"max_inotify_instances", "max_inotify_watches", "max_fanotify_groups", "max_fanotify_marks"}

// Guard makes the guard of each session built from a config (Config.Guard).
type Guard interface {
	// Session is called once a session's sandbox is ready: the guard of that session
	// alone, its first search begun.
	Session() SessionGuard
}

// SessionGuard is what a session asks around each command: Before as the command is
// about to start (cwd its working directory; an error refuses it, nsinit gives it as a
// *SetupError at step "protected"), Ended once a command that passed Before has ended
// or did not start. Safe for concurrent use.
type SessionGuard interface {
	Before(cwd string) error
	Ended(cwd string)
}

// MaxHostPorts bounds HostPorts: their sockets go to the owner in one message.
const MaxHostPorts = 64

// Publish is one port forward (--publish [HOSTIP:]HOSTPORT:PORT).
type Publish struct {
	HostIP   string `json:"hostIP"`
	HostPort uint16 `json:"hostPort"`
	Port     uint16 `json:"port"`
}

// Egress is the allow and deny lists of host patterns (egress.ParseRule: "pypi.org",
// "*.githubusercontent.com", "api.example:8443", "10.0.0.0/8"), network.allow and
// network.deny of the policy.
type Egress struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// CapturePorts are loopback ports other than 80 and 443 where the init listens for
	// clients that ignore the proxy variables (egress.CapturePorts of Allow: the ports
	// allow rules for names give), at most MaxCapturePorts, none of the proxy's own,
	// the host ports' or the published ports.
	CapturePorts []uint16 `json:"capturePorts,omitempty"`
}

// MaxCapturePorts bounds Egress.CapturePorts: their sockets go to the owner in one
// message with the egress's own.
const MaxCapturePorts = 64

// The loopback ports inside a sandbox with Egress where its init listens, on 127.0.0.1
// (the HTTP proxy, SOCKS5, the DNS stub over UDP and TCP) and on every loopback address
// (capture of plain HTTP and TLS for clients that ignore the proxy variables).
const (
	EgressHTTPPort  = 3128
	EgressSOCKSPort = 1080
	EgressDNSPort   = 53
	CaptureHTTPPort = 80
	CaptureTLSPort  = 443
)

// EgressResolvConf is /etc/resolv.conf inside a sandbox with Egress: the DNS stub.
const EgressResolvConf = "nameserver 127.0.0.1\noptions ndots:1 attempts:1\n"

// Linux is the part of runtime-spec's linux section gosbx implements, and the seccomp
// program compiled from linux.seccomp.
type Linux struct {
	UIDMappings []specs.LinuxIDMapping `json:"uidMappings,omitempty"`
	GIDMappings []specs.LinuxIDMapping `json:"gidMappings,omitempty"`
	// Namespaces are created new (a path, joining one, is refused); user, mount and
	// pid are required.
	Namespaces []specs.LinuxNamespace `json:"namespaces,omitempty"`
	// Filter is the seccomp program loaded right before execve (seccomp.Compile of
	// Seccomp): compiled, and so checked, when the config is made.
	Filter seccomp.Program `json:"filter,omitempty"`
	// Seccomp is Filter's source, kept for ToSpec (OCI export); nothing else reads it.
	Seccomp       *specs.LinuxSeccomp `json:"seccomp,omitempty"`
	MaskedPaths   []string            `json:"maskedPaths,omitempty"`
	ReadonlyPaths []string            `json:"readonlyPaths,omitempty"`
	// Resources are the cgroup limits (memory limit and swap, pids limit, CPU quota
	// and period); the launcher's alone.
	Resources *specs.LinuxResources `json:"resources,omitempty"`
}

// Symlink is a symbolic link at Path (absolute, in the new root) saying Target.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// File is one entry of Config.Files: Content written at Path, with permission bits Mode.
type File struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    uint32 `json:"mode"`
}

// MaxFileSize bounds a Config.Files entry's content, bytes.
const MaxFileSize = 64 << 10

// Limits says how Linux.Resources are applied.
type Limits struct {
	// Required names the limits that must be applied ("memory", "pids", "cpu"):
	// without a usable cgroup the launch stops (exit 125) unless BestEffort. The
	// others (a profile's defaults) apply where the host allows.
	Required   []string `json:"required,omitempty"`
	BestEffort bool     `json:"best_effort,omitempty"`
	// CgroupParent is a cgroup v2 group (relative to the mount point) to make the
	// sandbox's group in.
	CgroupParent string `json:"cgroup_parent,omitempty"`
}

// IDRange is Count host ids from Base, from which a root caller's launch takes one per
// sandbox as the command's host uid and gid.
type IDRange struct {
	Base  uint32 `json:"base"`
	Count uint32 `json:"count"`
}

// RootID is the identity of a caller of uid 0: for a root caller, the command's ids
// inside (the single uid and gid mapping's) map to a host id of Range, held by no other
// running sandbox.
type RootID struct {
	Range IDRange `json:"range"`
	// AllowHostRoot keeps the config's own mapping (host uid 0, no capability) when a
	// read-write bind's file system cannot be idmapped, instead of refusing the launch.
	// Only for a root caller.
	AllowHostRoot bool `json:"allowHostRoot,omitempty"`
}
