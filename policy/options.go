// Package policy turns what the caller asks for into the one config of the sandbox
// (nsinit/config.Config, its seccomp filter compiled) that the launcher and the init
// stage build from. Every host path is canonicalized
// once here, on the host (symlinks followed, ".." removed); a missing source is an error.
//
// Compile applies the built-in "agent" boundary (README.md, "The boundary" and
// "Policies"): new user, mount, pid, net,
// ipc, uts and cgroup namespaces; the caller's uid/gid mapped to the same numbers
// inside; read-only binds of the system roots; one read-write workspace with its .git
// read-only; private tmpfs scratch directories and HOME; a fresh /proc and a minimal
// /dev; a cleared environment with an allowlist; every capability dropped.
package policy

import (
	"fmt"
	"time"
)

// Network modes.
const (
	NetNone  = "none"  // a new network namespace with only lo, up
	NetHost  = "host"  // the host's network namespace
	NetProxy = "proxy" // a new network namespace with only lo; egress through gosbx's proxy
)

// Options are the caller's choices, as `gosbx exec` flags give them, on top of a policy.
type Options struct {
	Policy    *Policy  // the boundary; nil means the built-in "agent" profile
	Args      []string // the command and its arguments; Args[0] is looked up on PATH inside
	Workspace string   // the read-write directory; "" means the current directory
	Chdir     string   // working directory inside; relative to the workspace; "" = default
	ReadOnly  []string // extra read-only binds: PATH at the same path, or SRC:DST
	ReadWrite []string // extra read-write binds: PATH at the same path, or SRC:DST
	Symlinks  []string // --symlink TARGET:PATH, symbolic links made inside
	Env       []string // KEY=VALUE set inside, on top of the allowlist
	PassEnv   []string // names of caller variables passed through
	Net       string   // NetNone, NetHost or NetProxy; "" means the policy's (none by default)
	// AllowHosts are --allow-host patterns, added to network.allow; they imply
	// --net proxy when no mode is asked for.
	AllowHosts []string
	// Publish are --publish port forwards, added to network.publish.
	Publish []string
	// HostPorts are --host-port ports, added to network.host_ports.
	HostPorts []uint16
	Hostname  string        // "" means "gosbx"
	Timeout   time.Duration // 0: the policy's; may only shorten it; negative: an *Error
	// ScanLimit is --scan-limit: how many directories the search for protected paths
	// may read in each writable tree (filesystem.scan_limit), up or down from the
	// policy's; 0 keeps the policy's. Not a confinement limit: a larger one only spends
	// the launch's time (docs/decisions.md, "--scan-limit may raise the policy's").
	ScanLimit int
	// Tmpfs are --tmpfs flags, "PATH" or "PATH:size=SIZE": a private tmpfs at PATH, or the
	// size of the policy's own tmpfs there (/dev/shm included).
	Tmpfs []string
	// Cache is --cache (true) or --no-cache (false); nil keeps the policy's
	// filesystem.cache.
	Cache *bool
	// Toolchains are --toolchain flags: "auto", "none", or a toolchain root to bind
	// read-only (filesystem.toolchains).
	Toolchains []string
	// Resources are limits asked for by flags: required, over the policy's.
	Resources Resources
	// UID and GID are the command's ids inside (nil: 0 for a root caller, else the
	// caller's own).
	UID, GID *uint32
	// IDRange is where a root caller's sandboxes take their host id (nil:
	// DefaultIDRange).
	IDRange *IDRange
}

// Error is a request the policy refuses: it names the field (or flag), the path when
// there is one, and the reason. Error() shows each part with Shown: a path the sandbox
// made (a directory name, a symlink's target in Reason or Err) prints no line or terminal
// escape of its own.
type Error struct {
	Field  string // "workspace", "ro", "rw", "env", "chdir", "net", "command"
	Path   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	s := e.Field
	if e.Path != "" {
		s += " " + Shown(e.Path)
	}
	s += ": " + Shown(e.Reason)
	if e.Err != nil {
		s += ": " + Shown(e.Err.Error())
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func errorf(field, path string, err error, format string, a ...any) *Error {
	return &Error{Field: field, Path: path, Reason: fmt.Sprintf(format, a...), Err: err}
}
