package doctor

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
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
	MaskedProc             []string
}

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
	switch {
	case exists("/.dockerenv"):
		f.Container = "docker"
	case exists("/run/.containerenv"):
		f.Container = "podman"
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		f.Container = "kubernetes"
	}
	if f.Container == "" {
		if b, err := os.ReadFile("/proc/1/cgroup"); err == nil {
			s := string(b)
			switch {
			case strings.Contains(s, "kubepods"):
				f.Container = "kubernetes"
			case strings.Contains(s, "docker"):
				f.Container = "docker"
			case strings.Contains(s, "lxc"):
				f.Container = "lxc"
			}
		}
	}
	f.MaskedProc = maskedProc()
	return f
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
