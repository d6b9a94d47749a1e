package doctor

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/nsinit"
)

// Facts are what the host says about itself, read only to explain a failed check.
type Facts struct {
	Kernel string // uname -r
	UID    int
	// Root: a root caller (caps.CurrentCaller): uid 0 with CAP_SYS_ADMIN in the initial
	// user namespace, which the kernel exempts from the user namespace restrictions
	// below. A uid 0 without it is not.
	Root                   bool
	AppArmorRestrictUserns string // kernel.apparmor_restrict_unprivileged_userns ("" if absent)
	MaxUserNamespaces      string // user.max_user_namespaces
	UnprivUsernsClone      string // kernel.unprivileged_userns_clone (Debian)
	Container              string // "docker", "kubernetes", "podman", "lxc" or ""
	ContainerHow           string // what said so: "/run/.containerenv", "/proc/self/cgroup", …
	MaskedProc             []string
	Seccomp                string // the Seccomp: field of /proc/self/status: 0 none, 1 strict, 2 filter
	AppArmor               string // /proc/self/attr/current ("" when absent)
	CapEff                 uint64 // this process's effective capability set
	// HostUserns: this process's user namespace maps all of 0-4294967294 to itself
	// (/proc/self/uid_map "0 0 4294967295", user_namespaces(7)): the initial one, so a
	// container's uid 0 here is the host's uid 0.
	HostUserns bool
	// ProcSysWritable: /proc/sys is not mounted read-only here (statfs(2) ST_RDONLY
	// clear): a uid 0 of the initial user namespace can write the host's sysctls
	// (kernel.core_pattern, whose pipe helper the kernel runs as host root).
	ProcSysWritable bool
}

// SysAdmin says whether CAP_SYS_ADMIN is in the effective set.
func (f Facts) SysAdmin() bool { return f.CapEff&(1<<unix.CAP_SYS_ADMIN) != 0 }

func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// ReadFacts reads the facts of this host.
func ReadFacts() Facts {
	f := Facts{
		UID:                    os.Getuid(),
		Root:                   caps.CurrentCaller().Root,
		AppArmorRestrictUserns: sysctl("kernel.apparmor_restrict_unprivileged_userns"),
		MaxUserNamespaces:      sysctl("user.max_user_namespaces"),
		UnprivUsernsClone:      sysctl("kernel.unprivileged_userns_clone"),
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	f.Container, f.ContainerHow = nsinit.Container()
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			k, v, _ := strings.Cut(l, ":")
			v = strings.TrimSpace(v)
			switch k {
			case "Seccomp":
				f.Seccomp = v
			case "CapEff":
				f.CapEff, _ = strconv.ParseUint(v, 16, 64)
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/attr/current"); err == nil {
		f.AppArmor = strings.TrimSpace(strings.TrimRight(string(b), "\x00"))
	}
	f.MaskedProc = maskedProc()
	if b, err := os.ReadFile("/proc/self/uid_map"); err == nil {
		f.HostUserns = initialIDMap(string(b))
	}
	var sfs unix.Statfs_t
	if unix.Statfs("/proc/sys/kernel", &sfs) == nil {
		f.ProcSysWritable = sfs.Flags&unix.ST_RDONLY == 0
	}
	return f
}

// initialIDMap says whether an id map file (/proc/PID/uid_map) is the initial user
// namespace's: one line mapping 0 to 0 for 4294967295 ids (user_namespaces(7)).
func initialIDMap(m string) bool {
	lines := strings.Split(strings.TrimSpace(m), "\n")
	if len(lines) != 1 {
		return false
	}
	f := strings.Fields(lines[0])
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// maskedProc lists mounts on top of entries of /proc (what makes the kernel refuse a
// new procfs in a user namespace: "mount too revealing").
func maskedProc() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], "/proc/") {
			out = append(out, f[4])
		}
	}
	return out
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
