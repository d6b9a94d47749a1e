package policy

import (
	"encoding/json"
	"fmt"

	"github.com/gosbx/gosbx/seccomp"
)

// Policy is the declarative boundary of a sandbox: what `gosbx exec` builds, before the
// caller's flags (which may only add to it, or narrow it, where it allows) and before
// the variables ${workspace}, ${home} and ${uid} (and a leading ~/) are expanded in
// paths. A policy file is YAML or JSON with these fields (`gosbx policy schema` prints
// the JSON Schema); unknown fields are errors.
type Policy struct {
	// Extends names a built-in profile ("agent", "strict", "build") whose fields this
	// policy starts from: lists are appended to, other fields replaced when set.
	Extends     string `json:"extends,omitempty"`
	Description string `json:"description,omitempty"`

	Workspace   Workspace   `json:"workspace,omitempty"`
	Filesystem  Filesystem  `json:"filesystem,omitempty"`
	Environment Environment `json:"environment,omitempty"`
	Network     Network     `json:"network,omitempty"`
	Process     Process     `json:"process,omitempty"`

	// Seccomp is the system call filter: a base profile ("agent", the default, or
	// "none") and rules that come before it.
	Seccomp *seccomp.Config `json:"seccomp,omitempty"`
	// Resources are limits: memory, swap, processes, CPU (cgroup), open files and file
	// size (rlimits). Named here or by a flag, they are required.
	Resources *Resources `json:"resources,omitempty"`
	// RootIdentityMap, for a caller that is root (whose command always runs as an
	// unprivileged host uid of a reserved range, with the read-write binds idmapped so
	// their files keep their owners), says what to do where a read-write bind's file
	// system cannot be idmapped (overlayfs, most FUSE and network file systems): "allow"
	// (the default) runs that command as host uid 0 instead, without capabilities, as
	// before, and the status says so ("identity-map"); "deny" stops the launch (125).
	// A tree named through a symlink never falls back. Ignored for other callers.
	RootIdentityMap string `json:"root_identity_map,omitempty"`

	workspaceGiven string     // the workspace as the caller named it (Effective)
	home           string     // what ${home} expanded to (Effective)
	base           string     // the profile it extended, once merged
	source         string     // the canonical path of the file it was read from
	defaults       *Resources // a built-in profile's limits, applied where the host allows
	uid, gid       *uint32    // the command's ids inside (Options)
	cache          *Cache     // the workspace's cache directory, when on (Effective)
	cacheNote      string     // why the profile's cache is off on this host (Effective)
	idRange        *IDRange   // where a root caller's host ids come from (Options)
	toolchains     toolchainState
}

// Workspace is the one read-write directory, bound at its own path.
type Workspace struct {
	// Path is the default workspace; "" means the caller's current directory. The
	// --workspace flag chooses another.
	Path string `json:"path,omitempty"`
}

// Filesystem is what of the host is visible inside, and how.
type Filesystem struct {
	// ReadOnly are host paths bound read-only at the same path. A path that is a
	// symlink on the host (merged-usr /bin -> usr/bin) is recreated as that symlink
	// when its target is bound too.
	ReadOnly []Bind `json:"read_only,omitempty"`
	// ReadWrite are host paths bound read-write at the same path, besides the workspace.
	ReadWrite []Bind `json:"read_write,omitempty"`
	// Symlinks are symbolic links made inside (bwrap's --symlink), each at an absolute
	// path outside every bind.
	Symlinks []Symlink `json:"symlinks,omitempty"`
	// Tmpfs are private, empty, writable file systems (scratch space, HOME).
	Tmpfs []Tmpfs `json:"tmpfs,omitempty"`
	// Protected are paths inside each writable tree (the workspace, each read-write
	// bind) re-bound read-only: a name (".git") or a relative path matches at any
	// depth the scan reaches; "*" and "**" glob. ".git" is repository metadata and is
	// guarded as Git says.
	Protected []string `json:"protected,omitempty"`
	// Git is how repository metadata is guarded: "readonly" (the whole git dir) or
	// "commit" (objects, refs, index and logs writable, so git add and git commit work;
	// hooks, config, info/, commondir and objects/info stay read-only; the commit's
	// identity is the caller's user.name and user.email, set as GIT_AUTHOR_NAME,
	// GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL unless the policy or
	// the flags set them; the caller's git config files are not bound).
	Git string `json:"git,omitempty"`
	// Masked are absolute paths hidden inside, even within read-only binds: a file
	// under an empty file, a directory under an empty directory. Globs allowed.
	Masked []string `json:"masked,omitempty"`
	// Credentials are directories and files that hold secrets (~/.ssh, ~/.aws): a
	// workspace or read-write bind that is, holds or lies inside one is refused.
	Credentials []string `json:"credentials,omitempty"`
	// ScanLimit is how many directories the search for protected paths may read in each
	// writable tree (default 4096); a tree that needs more is refused.
	ScanLimit int `json:"scan_limit,omitempty"`
	// Toolchains are the caller's own toolchains outside the system roots (pyenv, nvm,
	// asdf, mise, ~/.local/bin, ~/go/bin, ~/.cargo/bin, /opt/*): "auto" binds, read-only,
	// the root of each PATH entry not shown already (a shim directory by the version its
	// shims run, which takes its place on PATH) and of a workspace venv's interpreter;
	// never a credential path, the home whole or a parent of the workspace. "none" (the
	// default) binds none; a list names roots to bind (their bin/ first on PATH), and may
	// hold auto too.
	Toolchains *Toolchains `json:"toolchains,omitempty"`
	// AllowExtraReadOnly and AllowExtraReadWrite say whether the --ro and --rw flags may
	// add binds (default true).
	AllowExtraReadOnly  *bool `json:"allow_extra_read_only,omitempty"`
	AllowExtraReadWrite *bool `json:"allow_extra_read_write,omitempty"`
	// Cache gives the sandbox the workspace's own cache directory on the host,
	// $XDG_CACHE_HOME/gosbx/<workspace id>/cache (~/.cache/gosbx/... when unset), bound
	// read-write as its ~/.cache, with GOCACHE, PIP_CACHE_DIR, npm_config_cache and
	// XDG_CACHE_HOME pointed into it (default false; true in the build profile). Never
	// shared between workspaces. --cache and --no-cache choose per launch.
	Cache *bool `json:"cache,omitempty"`
}

// Bind is a host path to bind. In a file it is a string, or an object to mark it
// optional (a missing optional source is skipped; a missing required one is an error)
// or to bind it at another path inside (Dest, absolute; its source is resolved on the
// host first: destbind.go).
type Bind struct {
	Path     string `json:"path"`
	Dest     string `json:"dest,omitempty"`
	Optional bool   `json:"optional,omitempty"`

	flag     bool // added by a --ro/--rw flag
	relative bool // the flag named a relative path (taken from the current directory)
}

// UnmarshalJSON accepts "path" or {"path": ..., "optional": ...}.
func (b *Bind) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*b = Bind{Path: s}
		return nil
	}
	var p struct {
		Path     string `json:"path"`
		Dest     string `json:"dest,omitempty"`
		Optional bool   `json:"optional,omitempty"`
	}
	if err := strictUnmarshal(data, &p); err != nil {
		return fmt.Errorf("a bind is a path or {path, dest, optional}: %w", err)
	}
	*b = Bind{Path: p.Path, Dest: p.Dest, Optional: p.Optional}
	return nil
}

// Symlink is a symbolic link at Path (absolute, inside) saying Target.
type Symlink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// MarshalJSON writes the short form when the bind is required.
func (b Bind) MarshalJSON() ([]byte, error) {
	if !b.Optional && b.Dest == "" {
		return json.Marshal(b.Path)
	}
	return json.Marshal(struct {
		Path     string `json:"path"`
		Dest     string `json:"dest,omitempty"`
		Optional bool   `json:"optional,omitempty"`
	}{b.Path, b.Dest, b.Optional})
}

// Tmpfs is a private tmpfs mount. In a file it is a path, or an object with a mode and
// a size. /dev/shm names the sandbox's own /dev/shm (its size and mode).
type Tmpfs struct {
	Path string `json:"path"`
	// Mode is the octal permission of its root ("1777", "0700"); default "0755".
	Mode string `json:"mode,omitempty"`
	// Size caps what it holds ("512M", "2G", bytes; binary units). Default: an equal
	// share of half the host's memory among the sandbox's scratch tmpfs of no size
	// given (/dev/shm included), and no more than the memory limit when there is one.
	Size string `json:"size,omitempty"`
}

// UnmarshalJSON accepts "path" or {"path": ..., "mode": ..., "size": ...}.
func (t *Tmpfs) UnmarshalJSON(data []byte) error {
	var s string
	if json.Unmarshal(data, &s) == nil {
		*t = Tmpfs{Path: s}
		return nil
	}
	type plain Tmpfs
	var p plain
	if err := strictUnmarshal(data, &p); err != nil {
		return fmt.Errorf("a tmpfs is a path or {path, mode, size}: %w", err)
	}
	*t = Tmpfs(p)
	return nil
}

// MarshalJSON writes the short form when there is no mode and no size.
func (t Tmpfs) MarshalJSON() ([]byte, error) {
	if t.Mode == "" && t.Size == "" {
		return json.Marshal(t.Path)
	}
	type plain Tmpfs
	return json.Marshal(plain(t))
}

// Environment is the command's environment: cleared, then the allowlist (PATH, LANG,
// LC_*, TZ, TERM, USER, LOGNAME, SHELL from the caller; HOME and TMPDIR private), then
// these.
type Environment struct {
	// Set are variables set inside (values may use ${workspace}, ${home}, ${uid}).
	Set map[string]string `json:"set,omitempty"`
	// Offline are variables set inside only when the sandbox has no network
	// (network.mode none): a package manager's offline switches (GOPROXY=off,
	// PIP_NO_INDEX=1), which would defeat a network the caller opened. Values as Set's;
	// Pass and Set win over them.
	Offline map[string]string `json:"offline,omitempty"`
	// Pass are names of the caller's variables passed through when set.
	Pass []string `json:"pass,omitempty"`
	// Path replaces the caller's PATH.
	Path string `json:"path,omitempty"`
	// PathPrepend are directories put in front of PATH (a project's .venv/bin); they
	// must be visible inside to be of use.
	PathPrepend []string `json:"path_prepend,omitempty"`
	// AllowExtra says whether the --env and --pass-env flags may add variables
	// (default true).
	AllowExtra *bool `json:"allow_extra,omitempty"`

	literal  []string // names set by --env: their values are not expanded
	gitIdent []string // git: commit's GIT_AUTHOR_*/GIT_COMMITTER_* (KEY=VALUE), below Pass and Set
}

// Network is the network of the sandbox.
type Network struct {
	// Mode is "none" (a new network namespace with only lo, the default), "host", or
	// "proxy": a new network namespace with only lo, and outbound connections to the
	// hosts of Allow carried by gosbx's own proxy (HTTP and SOCKS5 proxies and a DNS
	// stub on loopback inside, decided on the host side).
	Mode string `json:"mode,omitempty"`
	// AllowHost says whether --net host may share the host's network (default true).
	AllowHost *bool `json:"allow_host,omitempty"`
	// Allow are the host patterns mode proxy lets the sandbox reach (--allow-host adds
	// to them): "pypi.org", "*.githubusercontent.com" (subdomains only), an IP address or
	// prefix, each with an optional ":PORT" or ":*" (default ports 443 and 80). IP
	// literals, loopback, link-local, private and cloud metadata addresses, asked for or
	// resolved to, are denied unless a pattern names the address.
	Allow []string `json:"allow,omitempty"`
	// Deny are host patterns refused even when Allow names them.
	Deny []string `json:"deny,omitempty"`
	// AllowExtraHosts says whether --allow-host and --host-port may add to Allow and
	// HostPorts (default true).
	AllowExtraHosts *bool `json:"allow_extra_hosts,omitempty"`
	// Publish are port forwards from the host into the sandbox (--publish adds to
	// them): "[HOSTIP:]HOSTPORT:PORT", the host side on 127.0.0.1 unless HOSTIP is
	// given; each connection there reaches PORT on the sandbox's loopback. Not with
	// mode host.
	Publish []string `json:"publish,omitempty"`
	// HostPorts are ports of the host's loopback the sandbox may reach at the same
	// port of its own loopback (--host-port adds to them, where AllowExtraHosts
	// allows): a database or a dev server of the host, named one port at a time. Not
	// with mode host (where the whole loopback is shared).
	HostPorts []uint16 `json:"host_ports,omitempty"`
}

// Process is how the command runs.
type Process struct {
	// Timeout is the wall-clock limit ("10m", "90s"); --timeout may only shorten it.
	Timeout string `json:"timeout,omitempty"`
	// Hostname is the hostname inside (default "gosbx").
	Hostname string `json:"hostname,omitempty"`
	// Cwd is the working directory inside; "" means the caller's current directory when
	// it lies in the workspace, else the workspace.
	Cwd string `json:"cwd,omitempty"`
}

// Git modes.
const (
	GitReadOnly = "readonly"
	GitCommit   = "commit"
)

func allowed(b *bool) bool { return b == nil || *b }
