package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/mounts"
)

// systemRoots are bound read-only when present; a merged-usr symlink among them
// (/bin -> usr/bin) is recreated as the same symlink.
var systemRoots = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// refusedWorkspaces cannot be the read-write workspace or a --rw bind: the root, and
// directories shared by the whole system or by every user.
var refusedWorkspaces = []string{"/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp",
	"/var", "/var/cache", "/var/lib", "/var/log", "/var/mail", "/var/spool", "/var/tmp"}

// systemTrees are never writable inside, nor anything beneath them: the system roots,
// the kernel's interfaces and the host's runtime state.
var systemTrees = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32",
	"/proc", "/run", "/sbin", "/sys", "/usr", "/var/run"}

// noBindUnder are host trees that are never bound: the sandbox gets its own.
var noBindUnder = []string{"/proc", "/dev"}

// resolverFiles are /etc files that are often symlinks out of /etc (systemd-resolved's
// resolv.conf into /run); a target outside the read-only binds is bound at its own path.
var resolverFiles = []string{"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/localtime"}

// procReadOnly and procMasked follow runc's defaults: kernel tunables read-only,
// kernel memory, keys and timer/scheduler internals hidden.
var procReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
var procMasked = []string{"/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/sched_debug", "/proc/scsi", "/proc/timer_list", "/proc/timer_stats"}

// rootSecrets are hidden when the caller is root: its uid 0 inside could read them.
var rootSecrets = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/security/opasswd", "/etc/ssl/private"}

// envAllow are the caller's variables kept; LC_* too. DESIGN.md's list plus the
// caller's identity and shell (USER, LOGNAME, SHELL): tmux, ssh-agent-less git and
// shells read them, and they reveal nothing the uid does not.
var envAllow = []string{"PATH", "LANG", "TZ", "TERM", "USER", "LOGNAME", "SHELL"}

// DefaultHostname is the sandbox's hostname unless the caller names one.
const DefaultHostname = "gosbx"

// Compile validates o against the host h and returns the runtime-spec config of the
// sandbox. Errors are *Error naming the field, the path and the reason.
func Compile(o Options, h Host) (*specs.Spec, error) {
	if len(o.Args) == 0 || o.Args[0] == "" {
		return nil, errorf("command", "", nil, "no command given (usage: gosbx exec [flags] -- CMD [ARGS...])")
	}
	ws, wsGiven, err := workspace(o.Workspace, h)
	if err != nil {
		return nil, err
	}
	b := &builder{links: []mounts.Symlink{}}
	roDests := []string{}
	for _, r := range systemRoots {
		st, err := os.Lstat(r)
		switch {
		case err != nil:
			continue
		case st.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(r)
			if err != nil {
				return nil, errorf("system root", r, err, "cannot read the symlink")
			}
			b.links = append(b.links, mounts.Symlink{Path: r, Target: t})
		case st.IsDir():
			b.origin = "the read-only system directory " + r
			b.bind(r, r, true)
			roDests = append(roDests, r)
		}
	}
	home := sandboxHome(h.Home)
	b.origin = "the sandbox's private tmpfs"
	b.tmpfs("/tmp", "1777")
	b.tmpfs("/var/tmp", "1777")
	b.tmpfs("/run", "0755")
	if home != "/tmp" && home != "/var/tmp" && home != "/run" {
		b.origin = "the sandbox's private HOME (bind the parts of your home you need, e.g. --ro ~/.gitconfig)"
		b.tmpfs(home, "0700")
	}
	b.origin = "the sandbox's own /dev"
	b.dev()
	b.origin = "the sandbox's own /proc"
	b.add(specs.Mount{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "nodev", "noexec"}})

	cwd, err := workdir(o.Chdir, ws, h.Cwd)
	if err != nil {
		return nil, err
	}
	b.origin = "the workspace"
	b.bind(ws, ws, false)
	protected := repositories(ws, cwd)
	b.origin = "an --ro bind"
	for _, p := range o.ReadOnly {
		c, err := bindSource("ro", p, h)
		if err != nil {
			return nil, err
		}
		b.bind(c, c, true)
		roDests = append(roDests, c)
	}
	b.origin = "an --rw bind"
	for _, p := range o.ReadWrite {
		c, err := bindSource("rw", p, h)
		if err != nil {
			return nil, err
		}
		if err := writable("rw", c, h); err != nil {
			return nil, err
		}
		b.bind(c, c, false)
		protected = append(protected, repositories(c, "")...)
	}
	b.origin = "a resolver file's target"
	for _, f := range resolverFiles {
		t, err := filepath.EvalSymlinks(f)
		if err != nil || t == f || under(t, roDests...) || under(t, noBindUnder...) {
			continue
		}
		b.bind(t, t, true)
	}
	if wsGiven != ws && !under(wsGiven, roDests...) {
		b.links = append(b.links, mounts.Symlink{Path: wsGiven, Target: ws})
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	sort.SliceStable(b.mounts, func(i, j int) bool { return depth(b.mounts[i].Destination) < depth(b.mounts[j].Destination) })

	env, err := environment(o, h, home)
	if err != nil {
		return nil, err
	}
	masked := append([]string{}, procMasked...)
	if h.UID == 0 {
		masked = append(masked, rootSecrets...)
		keys, _ := filepath.Glob("/etc/ssh/ssh_host_*_key")
		masked = append(masked, keys...)
	}
	links, _ := json.Marshal(b.links)
	ns := []specs.LinuxNamespace{{Type: specs.UserNamespace}, {Type: specs.MountNamespace},
		{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace}}
	switch o.Net {
	case "", NetNone:
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	case NetHost:
	default:
		return nil, errorf("net", "", nil, "unknown network mode %q (want none or host)", o.Net)
	}
	hostname := o.Hostname
	if hostname == "" {
		hostname = DefaultHostname
	}
	if !validHostname(hostname) {
		return nil, errorf("hostname", "", nil, "%q is not a valid hostname (letters, digits, '-' and '.', at most 64 bytes)", hostname)
	}
	empty := []string{}
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User: specs.User{UID: uint32(h.UID), GID: uint32(h.GID)},
			Args: o.Args,
			Env:  env,
			Cwd:  cwd,
			Capabilities: &specs.LinuxCapabilities{Bounding: empty, Effective: empty,
				Inheritable: empty, Permitted: empty, Ambient: empty},
			Rlimits:         []specs.POSIXRlimit{{Type: "RLIMIT_CORE", Hard: 0, Soft: 0}},
			NoNewPrivileges: true,
		},
		Root:        &specs.Root{Path: "/", Readonly: true},
		Hostname:    hostname,
		Mounts:      b.mounts,
		Annotations: map[string]string{mounts.SymlinksAnnotation: string(links)},
		Linux: &specs.Linux{
			UIDMappings:   []specs.LinuxIDMapping{{ContainerID: uint32(h.UID), HostID: uint32(h.UID), Size: 1}},
			GIDMappings:   []specs.LinuxIDMapping{{ContainerID: uint32(h.GID), HostID: uint32(h.GID), Size: 1}},
			Namespaces:    ns,
			ReadonlyPaths: append(protected, procReadOnly...),
			MaskedPaths:   masked,
		},
	}, nil
}

type builder struct {
	mounts  []specs.Mount
	origins []string // why each mount is there, for error messages
	origin  string   // the origin of mounts added next
	links   []mounts.Symlink
}

func (b *builder) add(m specs.Mount) {
	b.mounts = append(b.mounts, m)
	b.origins = append(b.origins, b.origin)
}

func (b *builder) bind(src, dst string, ro bool) {
	opts := []string{"rbind", "nosuid", "nodev"}
	if ro {
		opts = append(opts, "ro")
	}
	b.add(specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
}

func (b *builder) tmpfs(dst, mode string) {
	b.add(specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=" + mode}})
}

// dev is a minimal /dev: a read-only tmpfs with binds of the host's harmless character
// devices (a device node cannot be created in a user namespace), a new devpts instance,
// a private /dev/shm and the usual links.
func (b *builder) dev() {
	b.add(specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=0755", "ro"}})
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		// read-only: the device still reads and writes, but its inode (mode, times) cannot change
		b.add(specs.Mount{Destination: "/dev/" + d, Type: "bind", Source: "/dev/" + d, Options: []string{"bind", "nosuid", "noexec", "ro"}})
	}
	b.add(specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts",
		Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}})
	b.add(specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777"}})
	b.links = append(b.links,
		mounts.Symlink{Path: "/dev/fd", Target: "/proc/self/fd"},
		mounts.Symlink{Path: "/dev/stdin", Target: "/proc/self/fd/0"},
		mounts.Symlink{Path: "/dev/stdout", Target: "/proc/self/fd/1"},
		mounts.Symlink{Path: "/dev/stderr", Target: "/proc/self/fd/2"},
		mounts.Symlink{Path: "/dev/ptmx", Target: "pts/ptmx"})
}

// check refuses two mounts on one destination: which one wins would be an accident.
func (b *builder) check() error {
	seen := map[string]int{}
	for i, m := range b.mounts {
		if prev, ok := seen[m.Destination]; ok {
			return errorf("mount", m.Destination, nil, "wanted as %s, but it is already %s", b.origins[i], b.origins[prev])
		}
		seen[m.Destination] = i
	}
	return nil
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// under reports whether p is one of dirs or lies beneath one of them.
func under(p string, dirs ...string) bool {
	for _, d := range dirs {
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// validHostname accepts RFC 1123 host names (letters, digits, hyphens, dot-separated
// labels), at most 64 bytes as sethostname(2) allows.
func validHostname(h string) bool {
	if len(h) > 64 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
