package doctor

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A container run as uid 0 without a user namespace and with /proc unmasked (podman
// run --user 0 --security-opt unmask=ALL): its root can write the host's sysctls, which
// README forbids in bold. Recorded: such a container's uid_map is the initial one,
// CapEff is Podman's default set (no CAP_SYS_ADMIN), /proc/sys is a read-write procfs.
func podmanRootUnmasked(uid int) Facts {
	return Facts{UID: uid, Container: "podman", ContainerHow: "/run/.containerenv", Seccomp: "2",
		CapEff: 0x800405fb, HostUserns: true, ProcSysWritable: true}
}

func TestContainerHostRootUnmaskedWarns(t *testing.T) {
	c := checkContainer(podmanRootUnmasked(0))
	if c.Status != Warn {
		t.Fatalf("status %s, want warn: %+v", c.Status, c)
	}
	wantAll(t, "detail", c.Detail, "no user namespace", "/proc/sys writable")
	wantAll(t, "fix", c.Fix, "--userns=auto", "/etc/subuid", "--uidmap 0:300000:65536", "userns-remap", "hostUsers: false", "non-root user")
}

// What does not warn: a user namespace of its own, a read-only /proc/sys (the runtime's
// default mask), a non-root uid (said, not warned: README allows a non-root user), a
// process with CAP_SYS_ADMIN (a masked /proc would not confine it), no container.
func TestContainerHostRootUnmaskedOnlyThen(t *testing.T) {
	for name, mod := range map[string]func(*Facts){
		"own user namespace": func(f *Facts) { f.HostUserns = false },
		"/proc/sys ro":       func(f *Facts) { f.ProcSysWritable = false },
		"uid 65534":          func(f *Facts) { f.UID = 65534 },
		"CAP_SYS_ADMIN":      func(f *Facts) { f.CapEff |= 1 << 21 },
		"no container":       func(f *Facts) { f.Container = "" },
	} {
		f := podmanRootUnmasked(0)
		mod(&f)
		if c := checkContainer(f); c.Status == Warn || c.Status == Fail {
			t.Errorf("%s: status %s (%s; fix %s), want ok or skip", name, c.Status, c.Detail, c.Fix)
		}
	}
	f := podmanRootUnmasked(65534)
	wantAll(t, "uid 65534 detail", checkContainer(f).Detail, "not by uid 65534, but by the container's root")
}

func TestInitialIDMap(t *testing.T) {
	for m, want := range map[string]bool{
		"         0          0 4294967295\n": true,
		"0 100000 65536\n":                   false,
		"0 0 1\n":                            false,
		"0 0 4294967295\n1 1 1\n":            false,
		"":                                   false,
	} {
		if got := initialIDMap(m); got != want {
			t.Errorf("initialIDMap(%q) = %v, want %v", m, got, want)
		}
	}
}

// ReadFacts reads ProcSysWritable from the mount, not from the caller: a probe in its
// own mount namespace (private propagation: the host's /proc/sys is untouched) with
// /proc/sys bound read-only over itself, as a container runtime's default mask does,
// says false; the same probe without the bind says true (root, as here).
func TestProcSysWritableFromMount(t *testing.T) {
	if os.Getenv("GOSBX_TEST_FACTS") == "1" {
		f := ReadFacts()
		os.Stdout.WriteString(strconv.FormatBool(f.ProcSysWritable) + "\n")
		return
	}
	if os.Getuid() != 0 {
		t.Skip("needs root (a mount namespace with a bind mount)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1)")
	}
	run := func(ro bool) string {
		script := `exec "$0" -test.run '^TestProcSysWritableFromMount$'`
		if ro {
			script = `mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && ` + script
		}
		cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, os.Args[0])
		cmd.Env = append(os.Environ(), "GOSBX_TEST_FACTS=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("probe (ro %v): %v: %s", ro, err, out)
		}
		return strings.Fields(string(out))[0]
	}
	if got := run(false); got != "true" {
		t.Errorf("/proc/sys as mounted here: ProcSysWritable %s, want true", got)
	}
	if got := run(true); got != "false" {
		t.Errorf("/proc/sys bound read-only: ProcSysWritable %s, want false", got)
	}
}
