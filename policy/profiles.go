package policy

import (
	"github.com/gosbx/gosbx/seccomp"
)

// DefaultProfile is the built-in profile used when none is named.
const DefaultProfile = "agent"

// Built-in profiles are Go values, not embedded files: nothing is parsed on the start
// path. `gosbx policy show --policy NAME` prints each as YAML. A switch and an array,
// not a map: a package-level map is built at every start of gosbx.
func builtinProfile(name string) func() *Policy {
	switch name {
	case "agent":
		return agentProfile
	case "strict":
		return strictProfile
	case "build":
		return buildProfile
	}
	return nil
}

// profileNames are builtinProfile's names, sorted.
var profileNames = [...]string{"agent", "build", "strict"}

// Builtin returns a fresh copy of the built-in profile name.
func Builtin(name string) (*Policy, bool) {
	f := builtinProfile(name)
	if f == nil {
		return nil, false
	}
	return f(), true
}

// Profiles lists the built-in profile names, sorted.
func Profiles() []string { return append([]string(nil), profileNames[:]...) }

func optional(paths ...string) []Bind {
	out := make([]Bind, len(paths))
	for i, p := range paths {
		out[i] = Bind{Path: p, Optional: true}
	}
	return out
}

// systemReadOnly are the system roots: /usr, and the merged-usr links (or directories)
// next to it.
var systemReadOnly = []Bind{{Path: "/usr"}, {Path: "/bin", Optional: true}, {Path: "/sbin", Optional: true},
	{Path: "/lib", Optional: true}, {Path: "/lib32", Optional: true}, {Path: "/lib64", Optional: true},
	{Path: "/libx32", Optional: true}}

// scratch is the private writable space every profile has.
var scratch = []Tmpfs{{Path: "/tmp", Mode: "1777"}, {Path: "/var/tmp", Mode: "1777"}, {Path: "/run", Mode: "0755"}, {Path: "${home}", Mode: "0700"}}

// secretFiles are hidden even inside read-only binds, so that a root caller's sandbox
// cannot read them either.
var secretFiles = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/ssh/*_key", "/etc/sudoers*", "/etc/ssl/private", "/etc/security/opasswd"}

// credentialDirs hold the caller's secrets: never a workspace, nor inside one.
var credentialDirs = []string{"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure",
	"~/.kube", "~/.docker", "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.pypirc",
	"~/.npmrc", "~/.password-store", "~/.local/share/keyrings"}

func clone[T any](s []T) []T { return append([]T(nil), s...) }

// agentProfile is the default boundary (README.md, "The boundary"): the system read-only, one
// writable workspace with its repository metadata read-only, private scratch space and
// HOME, no network.
func agentProfile() *Policy {
	return &Policy{
		Description: "The default for agents: /usr and /etc read-only, one writable workspace (its .git read-only), private /tmp, /var/tmp, /run and HOME, no network.",
		Filesystem: Filesystem{
			ReadOnly:    append(clone(systemReadOnly), Bind{Path: "/etc"}),
			Tmpfs:       clone(scratch),
			Protected:   []string{".git"},
			Git:         GitReadOnly,
			Masked:      clone(secretFiles),
			Credentials: clone(credentialDirs),
		},
		Network:  Network{Mode: NetNone},
		Process:  Process{Hostname: DefaultHostname},
		defaults: &Resources{Pids: defaultPids},
	}
}

// defaultPids is the agent profile's process limit (best effort): a fork bomb stops
// there, a parallel build does not.
const defaultPids = 8192

// strictEtc is what of /etc the dynamic loader, TLS, name lookup and the user database
// need, and Debian's alternatives links (/usr/bin/awk -> /etc/alternatives/awk).
var strictEtc = []string{"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki", "/etc/crypto-policies", "/etc/passwd", "/etc/group", "/etc/localtime",
	"/etc/alternatives", "/etc/protocols", "/etc/services", "/etc/mime.types"}

// strictProfile narrows agent: only the parts of /etc programs need to start, resolve
// names and verify TLS; no host network, no hosts added by flags, no extra read-write
// binds, no extra variables.
func strictProfile() *Policy {
	no := false
	p := agentProfile()
	p.Description = "agent, narrowed: only the parts of /etc that the dynamic loader, TLS and name lookup need; --net host, --allow-host, --rw, --env and --pass-env refused."
	p.Filesystem.ReadOnly = append(clone(systemReadOnly), optional(strictEtc...)...)
	p.Filesystem.AllowExtraReadWrite = &no
	p.Environment.AllowExtra = &no
	p.Network.AllowHost = &no
	p.Network.AllowExtraHosts = &no
	return p
}

// buildProfile is agent plus the toolchains and their download caches, read-only, for
// offline builds: Go, Rust, Node, Python, Java.
func buildProfile() *Policy {
	p := agentProfile()
	p.Description = "agent, plus toolchains and their download caches read-only for offline builds (Go, Rust, Node, Python, Java); build caches in the workspace's own cache directory (--cache)."
	// the host's ~/.cache/pip is not bound: ~/.cache inside is the workspace's cache
	p.Filesystem.ReadOnly = append(p.Filesystem.ReadOnly, optional("/opt",
		// go's checksum-database cache beside the module cache: without it go cannot
		// verify (so add to go.sum) a module it has, offline
		"${home}/go/pkg/mod", "${home}/go/pkg/sumdb", "${home}/sdk", "${home}/.cargo/registry", "${home}/.cargo/git",
		"${home}/.cargo/bin", "${home}/.rustup", "${home}/.npm",
		"${home}/.m2/repository", "${home}/.gradle/caches")...)
	// no ~/.gitconfig: its url/extraHeader/credential lines may hold tokens (a commit's
	// identity comes without it, policy/gitident.go; --ro ~/.gitconfig binds it whole)
	cache := true
	p.Filesystem.Cache = &cache
	p.Filesystem.Toolchains = &Toolchains{Mode: ToolchainAuto}
	p.Environment = Environment{
		Set: map[string]string{"GOMODCACHE": "${home}/go/pkg/mod", "GOFLAGS": "-mod=mod"},
		// only without a network: with --net proxy or host the caller opened one for
		// the package managers to use (docs/decisions.md, "Trial findings: offline
		// variables and the network, killed background processes")
		Offline: map[string]string{"GOPROXY": "off", "CARGO_NET_OFFLINE": "true", "PIP_NO_INDEX": "1",
			"npm_config_offline": "true"},
		PathPrepend: []string{"${home}/.cargo/bin", "${home}/go/bin", "/usr/local/go/bin"},
	}
	return p
}

// merge lays child over base: lists appended, maps merged, scalars replaced when set.
// The result no longer extends anything (it holds the base already: printed and read
// back, it must not merge twice); Base names the profile it came from.
func merge(base, child *Policy) *Policy {
	p := *base
	p.Extends = ""
	if child.Extends != "" {
		p.base = child.Extends
	}
	if child.Description != "" {
		p.Description = child.Description
	}
	if child.Workspace.Path != "" {
		p.Workspace.Path = child.Workspace.Path
	}
	f, c := &p.Filesystem, child.Filesystem
	f.ReadOnly = append(clone(f.ReadOnly), c.ReadOnly...)
	f.ReadWrite = append(clone(f.ReadWrite), c.ReadWrite...)
	f.Tmpfs = append(clone(f.Tmpfs), c.Tmpfs...)
	f.Symlinks = append(clone(f.Symlinks), c.Symlinks...)
	f.Protected = append(clone(f.Protected), c.Protected...)
	f.Masked = append(clone(f.Masked), c.Masked...)
	f.Credentials = append(clone(f.Credentials), c.Credentials...)
	if c.Git != "" {
		f.Git = c.Git
	}
	if c.Toolchains != nil {
		f.Toolchains = c.Toolchains
	}
	if c.ScanLimit != 0 {
		f.ScanLimit = c.ScanLimit
	}
	if c.AllowExtraReadOnly != nil {
		f.AllowExtraReadOnly = c.AllowExtraReadOnly
	}
	if c.AllowExtraReadWrite != nil {
		f.AllowExtraReadWrite = c.AllowExtraReadWrite
	}
	if c.Cache != nil {
		f.Cache = c.Cache
	}
	e, ce := &p.Environment, child.Environment
	if len(e.Set) > 0 || len(ce.Set) > 0 {
		set := map[string]string{} // never shared with base: Effective adds to it
		for k, v := range e.Set {
			set[k] = v
		}
		for k, v := range ce.Set {
			set[k] = v
		}
		e.Set = set
	}
	if len(e.Offline) > 0 || len(ce.Offline) > 0 {
		off := map[string]string{}
		for k, v := range e.Offline {
			off[k] = v
		}
		for k, v := range ce.Offline {
			off[k] = v
		}
		e.Offline = off
	}
	e.Pass = append(clone(e.Pass), ce.Pass...)
	e.literal = nil
	e.PathPrepend = append(clone(ce.PathPrepend), e.PathPrepend...)
	if ce.Path != "" {
		e.Path = ce.Path
	}
	if ce.AllowExtra != nil {
		e.AllowExtra = ce.AllowExtra
	}
	if child.Network.Mode != "" {
		p.Network.Mode = child.Network.Mode
	}
	if child.Network.AllowHost != nil {
		p.Network.AllowHost = child.Network.AllowHost
	}
	n, cn := &p.Network, child.Network
	n.Allow = append(clone(n.Allow), cn.Allow...)
	n.Deny = append(clone(n.Deny), cn.Deny...)
	if cn.AllowExtraHosts != nil {
		n.AllowExtraHosts = cn.AllowExtraHosts
	}
	n.Publish = append(clone(n.Publish), cn.Publish...)
	n.HostPorts = append(clone(n.HostPorts), cn.HostPorts...)
	if child.Process.Timeout != "" {
		p.Process.Timeout = child.Process.Timeout
	}
	if child.Process.Hostname != "" {
		p.Process.Hostname = child.Process.Hostname
	}
	if child.Process.Cwd != "" {
		p.Process.Cwd = child.Process.Cwd
	}
	if child.Seccomp != nil {
		sc := seccomp.Config{}
		if p.Seccomp != nil {
			sc = *p.Seccomp
		}
		if child.Seccomp.Profile != "" {
			sc.Profile = child.Seccomp.Profile
		}
		// the child's rules come first: the first rule that matches decides
		sc.Rules = append(clone(child.Seccomp.Rules), sc.Rules...)
		p.Seccomp = &sc
	}
	if child.RootIdentityMap != "" {
		p.RootIdentityMap = child.RootIdentityMap
	}
	p.Resources = mergeResources(p.Resources, child.Resources)
	if p.Resources != nil && *p.Resources == (Resources{}) {
		p.Resources = nil
	}
	return &p
}

// Base is the built-in profile this policy extends ("" if none).
func (p *Policy) Base() string { return p.base }
