package doctor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/gosbx/gosbx/caps"
	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/policy"
)

// Run runs every check; exe is the gosbx binary, re-executed for the probes (it must
// call Probe when argv[1] is ProbeArg, as cmd/gosbx does). It leaves nothing behind.
func Run(exe string) *Report { return RunFor(exe, "") }

// RunFor is Run that also checks, for a root caller, that the workspace dir ("" for
// the current directory) can be idmapped.
func RunFor(exe, workspace string) *Report {
	r := &Report{Version: ReportVersion, OK: true, UID: os.Getuid()}
	f := ReadFacts()
	r.add(Check{Name: "kernel", Status: OK, Detail: "Linux " + f.Kernel})
	r.add(checkContainer(f))

	userns := checkUserns(exe, f)
	r.add(userns)
	for _, ns := range []struct {
		name string
		flag uintptr
	}{{"mnt", unix.CLONE_NEWNS}, {"pid", unix.CLONE_NEWPID}, {"net", unix.CLONE_NEWNET},
		{"ipc", unix.CLONE_NEWIPC}, {"uts", unix.CLONE_NEWUTS}, {"cgroup", unix.CLONE_NEWCGROUP}} {
		if userns.Status != OK {
			r.add(Check{Name: ns.name + " namespace", Status: Skip, Detail: "needs a user namespace"})
			continue
		}
		r.add(checkNamespace(exe, ns.name, ns.flag))
	}
	if userns.Status == OK {
		r.add(mountAPICheck(exe))
		r.add(overlayCheck(exe))
	} else {
		r.add(Check{Name: "new mount API", Status: Skip, Detail: "needs a user namespace"})
		r.add(Check{Name: "overlayfs in a user namespace", Status: Skip, Detail: "needs a user namespace"})
	}
	r.add(checkSyscalls())
	r.add(checkIDMap(workspace))
	r.add(checkLandlock())
	r.add(checkSessions())
	for _, c := range checkCgroup(exe, f) {
		r.add(c)
	}
	if userns.Status == OK {
		for _, c := range checkSandbox(exe, workspace, f) {
			r.add(c)
		}
	} else {
		r.add(Check{Name: "sandbox launch", Status: Skip, Detail: "needs a user namespace"})
		for _, c := range escapesSkipped("needs a user namespace") {
			r.add(c)
		}
	}
	settleSeccomp(r)
	return r
}

// launchFailed is the failed sandbox launch check, then the escape checks it stops.
func launchFailed(c Check) []Check {
	return append([]Check{c}, escapesSkipped("not reached: the sandbox launch failed")...)
}

// escapeChecks name the escape checks of checkSandbox, in order.
var escapeChecks = []string{"write outside the workspace", "read a host file", "connect to the host's loopback",
	"TIOCSTI", "create a user namespace", "seccomp filter denies", "capabilities and no_new_privs"}

// escapesSkipped are the escape checks, each skip with why: every check appears in
// the report, in order (docs/doctor.md), whatever stopped the ones before.
func escapesSkipped(why string) []Check {
	out := make([]Check, 0, len(escapeChecks))
	for _, n := range escapeChecks {
		out = append(out, Check{Name: "escape: " + n, Status: Skip, Detail: why})
	}
	return out
}

// seccompAdvice is what checkContainer says of a container's seccomp filter, until
// the sandbox launch shows the filter lets gosbx work (settleSeccomp).
var seccompAdvice = "a seccomp filter confines it (its profile: if a check below fails with EPERM, run it with gosbx's: " + nsinit.FixSeccompProfile + ")"

// seccompFine replaces seccompAdvice once a sandbox launched under the filter.
const seccompFine = "a seccomp filter confines it, and lets gosbx build its sandbox (the sandbox launch below passed: gosbx's profile, or one that allows as much)"

// settleSeccomp drops the advice to change a container's seccomp profile when the
// sandbox launch passed under it: a container already run with gosbx.json was told to
// switch to it (trial finding 8); no filter's name can be read from inside, so the
// launch is the test.
func settleSeccomp(r *Report) {
	launched := slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Name == "sandbox launch" && c.Status == OK })
	for i := range r.Checks {
		if c := &r.Checks[i]; launched && c.Name == "container" {
			c.Detail = strings.Replace(c.Detail, seccompAdvice, seccompFine, 1)
		}
	}
}

// checkContainer says whether gosbx runs in a container, from what, and what of the
// container's posture matters to gosbx: its seccomp filter, CAP_SYS_ADMIN, its
// AppArmor label, masked /proc entries. A masked /proc is a warning with its fix (the
// kernel refuses a new procfs there); the rest is proven by the checks that follow.
func checkContainer(f Facts) Check {
	c := Check{Name: "container", Status: OK}
	if f.Container == "" {
		c.Status, c.Detail = Skip, "none found (no /.dockerenv, /run/.containerenv, container cgroup path)"
		if f.Seccomp == "2" {
			c.Detail += "; a seccomp filter confines this process"
		}
		return c
	}
	parts := []string{f.Container + " (" + f.ContainerHow + ")"}
	switch f.Seccomp {
	case "2":
		parts = append(parts, seccompAdvice)
	case "0":
		parts = append(parts, "no seccomp filter")
	}
	if f.UID == 0 && !f.SysAdmin() {
		parts = append(parts, "uid 0 without CAP_SYS_ADMIN: the unprivileged path (its own user namespace)")
	} else if f.SysAdmin() {
		parts = append(parts, "CAP_SYS_ADMIN in its effective set")
	}
	if f.AppArmor != "" {
		parts = append(parts, "AppArmor "+f.AppArmor)
	}
	if len(f.MaskedProc) > 0 {
		parts = append(parts, fmt.Sprintf("/proc has %d entries hidden by mounts (%s)", len(f.MaskedProc), strings.Join(f.MaskedProc, ", ")))
		c.Status, c.Fix = Warn, "the kernel refuses a new procfs (also subset=pid) under a masked /proc: "+nsinit.FixUnmaskProc
	} else {
		parts = append(parts, "/proc not masked")
	}
	if p, fix := hostRootProcSys(f); p != "" {
		parts = append(parts, p)
		if fix != "" {
			c.Status, c.Fix = Warn, fix
		}
	}
	c.Detail = strings.Join(parts, "; ")
	return c
}

// FixHostRootContainer is what a container running as the host's root with /proc
// unmasked does instead: the README's rule (unmask /proc only for a container whose root
// is not the host's root).
const FixHostRootContainer = "this container's uid 0 is the host's root and /proc/sys is writable to it " +
	"(kernel.core_pattern names a program the kernel runs as host root): unmask /proc only for a container whose root " +
	"is not the host's root: give it a user namespace (podman run --userns=auto, which needs a range for user " +
	"\"containers\" in /etc/subuid and /etc/subgid, or --uidmap 0:300000:65536 --gidmap 0:300000:65536; " +
	"Docker's userns-remap; Kubernetes hostUsers: false), or run it as a non-root user"

// hostRootProcSys is what checkContainer says of a container without a user namespace
// of its own (uid 0 there is the host's) whose /proc/sys is writable: for a uid 0
// caller a part of the detail and the fix (warn); for another uid only the part (its
// writes are refused, but the container's root could make them). A process with
// CAP_SYS_ADMIN (a privileged container, or a VM that only looks like one) could
// remount a masked /proc anyway: the mask is not what confines it, so nothing is said.
func hostRootProcSys(f Facts) (part, fix string) {
	if f.Container == "" || !f.HostUserns || !f.ProcSysWritable || f.SysAdmin() {
		return "", ""
	}
	if f.UID != 0 {
		return "no user namespace and /proc/sys writable: not by uid " + strconv.Itoa(f.UID) + ", but by the container's root, which is the host's", ""
	}
	return "no user namespace (uid 0 is the host's root) and /proc/sys writable", FixHostRootContainer
}

// clone starts exe ProbeArg args in new namespaces with the id maps of nsinit (the
// caller's own uid/gid, setgroups denied), with the capabilities it needs.
func clone(exe string, flags uintptr, args ...string) (string, error) {
	cmd := exec.Command(exe, append([]string{ProbeArg}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER | flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN},
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	err := cmd.Wait()
	return strings.TrimSpace(out.String()), err
}

func checkUserns(exe string, f Facts) Check {
	c := Check{Name: "user namespace + id maps"}
	if out, err := clone(exe, 0, "ns", "user", strconv.FormatUint(nsInode("user"), 10)); err != nil {
		c.Status = Fail
		c.Detail, c.Fix = explainUserns(err, f)
		if out != "" {
			c.Detail = out + ": " + c.Detail
		}
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("uid %d and gid %d mapped to themselves, setgroups denied", os.Getuid(), os.Getgid())
	return c
}

func checkNamespace(exe, name string, flag uintptr) Check {
	c := Check{Name: name + " namespace"}
	out, err := clone(exe, flag, "ns", name, strconv.FormatUint(nsInode(name), 10))
	if err != nil {
		c.Status, c.Detail = Fail, strings.TrimSpace(out+" "+err.Error())
		c.Fix = "the kernel or a security policy refuses this namespace type in a user namespace"
		return c
	}
	c.Status, c.Detail = OK, "created"
	if name == "net" {
		c.Detail = "created, lo brought up"
	}
	return c
}

func childCheck(exe, name, probe string, failStatus Status, fix string) Check {
	out, err := clone(exe, unix.CLONE_NEWNS, probe)
	if err != nil {
		return Check{Name: name, Status: failStatus, Detail: probeDetail(out, err), Fix: fix}
	}
	return Check{Name: name, Status: OK, Detail: "mounted in a user namespace"}
}

// mountAPICheck mounts a tmpfs with the new mount API in a user namespace. Its fix
// follows the probe's errno (its exit status): only ENOSYS is an old kernel; EPERM is
// a seccomp filter's or the kernel's refusal, said as the sandbox launch's would be
// (nsinit.Hint); a probe with no directory to mount on names the container's missing
// directories (trial finding T8: "need Linux 5.12" on a 6.18 kernel without /tmp).
func mountAPICheck(exe string) Check {
	out, err := clone(exe, unix.CLONE_NEWNS, "mountapi")
	if err == nil {
		return Check{Name: "new mount API", Status: OK, Detail: "mounted in a user namespace"}
	}
	c := Check{Name: "new mount API", Status: Fail, Detail: probeDetail(out, err)}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Exited() {
		return c
	}
	switch code := ee.ExitCode(); {
	case code == 255:
		c.Fix = "give the container a /tmp (podman or docker run --tmpfs /tmp): gosbx attaches the sandbox's root to the first of /tmp, /mnt, /run, /dev, /proc that exists"
	case unix.Errno(code) == unix.ENOSYS:
		c.Fix = "fsopen, fsmount, move_mount, mount_setattr need Linux 5.12 or later"
	default:
		c.Fix = nsinit.Hint("mount", unix.Errno(code))
	}
	return c
}

// overlayCheck mounts an overlayfs in a user namespace. The default policy does not use
// one, so a refusal is a skip that says so (uid 65534 is refused here), not a warning
// whose own fix says it is not needed.
func overlayCheck(exe string) Check {
	c := childCheck(exe, "overlayfs in a user namespace", "overlay", Skip, "")
	if c.Status == Skip {
		c.Detail = "not needed by the default policy: the kernel refused an overlayfs mount in a user namespace for this caller (" +
			c.Detail + "; it needs Linux 5.11, and an upper file system that allows whiteouts there)"
	}
	return c
}

// probeDetail is what a failed probe child says: its own message, which names the
// call and the errno ("mount overlay: permission denied"); the exit status only when it
// said nothing ("exit status 1" after the message read as part of it).
func probeDetail(out string, err error) string {
	var ee *exec.ExitError
	if out != "" && errors.As(err, &ee) && ee.Exited() {
		return out
	}
	return strings.TrimSpace(out + " " + err.Error())
}

func nsInode(name string) uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/"+name, &st) != nil {
		return 0
	}
	return st.Ino
}

// checkSyscalls exercises pidfd_open, close_range and openat2 (RESOLVE_IN_ROOT).
// The fix comes from the first error (nsinit.Hint with the call's name: a seccomp
// filter around the doctor, as inside a sandbox, is named as such, not an old kernel).
func checkSyscalls() Check {
	c := Check{Name: "pidfd_open, close_range, openat2", Status: OK}
	var bad []string
	var fix string
	failed := func(call string, err error) {
		bad = append(bad, call+": "+err.Error())
		if fix == "" {
			fix = nsinit.Hint(call, err)
		}
	}
	if fd, err := unix.PidfdOpen(os.Getpid(), 0); err != nil {
		failed("pidfd_open", err)
	} else {
		unix.Close(fd)
	}
	if fd, err := unix.Dup(2); err == nil {
		if err := unix.CloseRange(uint(fd), uint(fd), 0); err != nil {
			failed("close_range", err)
			unix.Close(fd)
		}
	}
	if fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT}); err != nil {
		failed("openat2", err)
	} else {
		unix.Close(fd)
	}
	if len(bad) > 0 {
		c.Status, c.Detail, c.Fix = Fail, strings.Join(bad, "; "), fix
		if c.Fix == "" {
			c.Fix = "gosbx needs Linux 5.12 or later (openat2 5.6, close_range 5.9, pidfd_open 5.3)"
		}
		return c
	}
	c.Detail = "all present"
	return c
}

// checkLandlock reports the Landlock ABI version (not used by the default policy).
func checkLandlock() Check {
	const createRulesetVersion = 1
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if e != 0 {
		return Check{Name: "Landlock", Status: Skip, Detail: "not available: " + e.Error()}
	}
	return Check{Name: "Landlock", Status: OK, Detail: fmt.Sprintf("ABI version %d", v)}
}

// checkCgroup reports the mode and makes a group with a limit, places a process in it
// and removes it, through the cgroup package gosbx exec uses.
func checkCgroup(exe string, f Facts) []Check {
	mode := cgroup.Mode()
	modeCheck := Check{Name: "cgroup mode", Status: OK, Detail: string(mode)}
	if mode == cgroup.V1 {
		if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
			modeCheck.Detail = "hybrid: controllers in cgroup v1, cgroup v2 at /sys/fs/cgroup/unified"
		} else {
			modeCheck.Detail = "cgroup v1"
		}
		if !cgroup.V1TCPAccounted() {
			modeCheck.Status = Warn
			modeCheck.Detail += "; no memory.kmem.tcp.limit_in_bytes: a sandbox's TCP socket buffers are outside --memory (bounded by the host-wide net.ipv4.tcp_mem only)"
		}
	}
	if mode == cgroup.None {
		modeCheck.Status, modeCheck.Detail = Warn, "no cgroup file system"
		modeCheck.Fix = explainCgroup(string(mode), f, nil)
	}
	limit := int64(64)
	g, err := cgroup.New(&specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &limit}}, cgroup.Options{})
	noClone := Check{Name: "CLONE_INTO_CGROUP", Status: Skip, Detail: "no cgroup for this caller"}
	if err != nil {
		return []Check{modeCheck, {Name: "cgroup limits", Status: Warn, Detail: err.Error(), Fix: explainCgroup(string(mode), f, err)}, noClone}
	}
	defer g.Destroy()
	sleeper := exec.Command(exe, ProbeArg, "wait")
	stdin, err := sleeper.StdinPipe()
	if err != nil {
		return []Check{modeCheck, {Name: "cgroup limits", Status: Warn, Detail: err.Error(), Fix: explainCgroup(string(mode), f, err)}, noClone}
	}
	limitCheck := Check{Name: "cgroup limits", Status: OK, Detail: fmt.Sprintf("%s group made with pids.max 64", g.Kind())}
	if g.CloneFd() >= 0 {
		sleeper.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.CloneFd()}
	}
	if err := sleeper.Start(); err != nil {
		limitCheck.Status, limitCheck.Detail = Warn, "cannot start a process in the group: "+err.Error()
		return []Check{modeCheck, limitCheck, {Name: "CLONE_INTO_CGROUP", Status: Skip, Detail: "not reached: no process could start in a group"}}
	}
	if err := g.Add(sleeper.Process.Pid); err != nil {
		limitCheck.Status, limitCheck.Detail = Warn, err.Error()
	} else if g.CloneFd() >= 0 {
		limitCheck.Detail += ", a process cloned into it (CLONE_INTO_CGROUP), removed"
	} else {
		limitCheck.Detail += ", a process placed in it, removed"
	}
	stdin.Close()
	sleeper.Wait()
	clone3 := Check{Name: "CLONE_INTO_CGROUP", Status: OK, Detail: "a process cloned into the sandbox's cgroup v2 group"}
	if g.CloneFd() < 0 {
		clone3 = checkCloneIntoUnified(exe)
	}
	return []Check{modeCheck, limitCheck, clone3}
}

// checkCloneIntoUnified exercises CLONE_INTO_CGROUP on a hybrid host's cgroup v2 tree
// (no controllers there; gosbx places v1 groups after the clone instead).
func checkCloneIntoUnified(exe string) Check {
	c := Check{Name: "CLONE_INTO_CGROUP", Status: Skip}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	removeStale(filepath.Join("/sys/fs/cgroup/unified", own))
	dir := filepath.Join("/sys/fs/cgroup/unified", own, fmt.Sprintf("gosbx-doctor-%d-cg", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.Detail = "no writable cgroup v2 tree for this caller (" + err.Error() + "); v1 hosts place the init right after the clone"
		return c
	}
	defer os.Remove(dir)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	defer unix.Close(fd)
	p := exec.Command(exe, ProbeArg, "wait")
	p.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	if err := p.Run(); err != nil {
		c.Status, c.Detail = Warn, "clone3 with CLONE_INTO_CGROUP: "+err.Error()
		return c
	}
	c.Status, c.Detail = OK, "a process cloned into a cgroup v2 group (hybrid host: limits stay in v1)"
	return c
}

// checkSandbox launches one real sandbox under the default policy, through nsinit, and
// runs the escape probe in it.
func checkSandbox(exe, workspace string, f Facts) []Check {
	host, err := policy.CurrentHost()
	if err != nil {
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: err.Error()})
	}
	base, err := scratch(workspace, host)
	if err != nil {
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: err.Error(),
			Fix: "give the container a /tmp (podman or docker run --tmpfs /tmp), or name a writable directory: gosbx doctor --workspace DIR"})
	}
	defer os.RemoveAll(base)
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	canary := filepath.Join(outside, "canary")
	os.WriteFile(canary, []byte("host secret"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: "cannot listen on the host's loopback: " + err.Error()})
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	accepted := make(chan bool, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err == nil
	}()
	host.Cwd = ws
	spec, err := policy.Compile(policy.Options{Workspace: ws, ReadOnly: []string{exe},
		Args: []string{exe, ProbeArg, "escape", canary, outside, port}}, host)
	if err != nil {
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: "policy: " + err.Error()})
	}
	var out bytes.Buffer
	cmd := nsinit.Command(spec)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Timeout = 20 * time.Second
	steps := []string{"tmpfs root, binds, pivot_root, read-only /", "procfs", "devpts", "capabilities dropped, no_new_privs", "seccomp filter"}
	if err := cmd.Run(); err != nil {
		var se *nsinit.SetupError
		var ee *nsinit.ExitError
		switch {
		case errors.As(err, &se):
			return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: fmt.Sprintf("step %s: %v", se.Step, se.Err),
				Fix: explainSetup(se, f)})
		case errors.As(err, &ee):
			return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: "the probe failed: " + ee.Error() + " " + strings.TrimSpace(out.String())})
		}
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: err.Error()})
	}
	var res EscapeResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return launchFailed(Check{Name: "sandbox launch", Status: Fail, Detail: "the probe's report: " + err.Error() + ": " + out.String()})
	}
	checks := []Check{{Name: "sandbox launch", Status: OK, Detail: "a real gosbx exec under the agent policy: " + strings.Join(steps, "; ")}}
	verdict := func(name, got, hostSide string) {
		switch {
		case got != "":
			checks = append(checks, Check{Name: "escape: " + name, Status: Fail, Detail: got, Fix: "report this: the boundary is broken"})
		case hostSide != "":
			checks = append(checks, Check{Name: "escape: " + name, Status: Fail, Detail: hostSide, Fix: "report this: the boundary is broken"})
		default:
			checks = append(checks, Check{Name: "escape: " + name, Status: OK, Detail: "denied"})
		}
	}
	wrote := ""
	for _, p := range []string{filepath.Join(outside, "escaped"), "/escaped-gosbx-doctor"} {
		if _, err := os.Lstat(p); err == nil {
			wrote = "a file appeared outside the workspace on the host: " + p
			os.Remove(p)
		}
	}
	verdict("write outside the workspace", res.WriteOutside, wrote)
	verdict("read a host file", res.ReadHost, "")
	reached := ""
	ln.Close()
	if <-accepted {
		reached = "the host's listener accepted a connection"
	}
	verdict("connect to the host's loopback", res.HostLoopback, reached)
	verdict("TIOCSTI", res.TIOCSTI, "")
	verdict("create a user namespace", res.NewUserns, "")
	verdict("seccomp filter denies", res.SeccompProof, "")
	caps := ""
	if strings.Trim(res.CapEff, "0") != "" || strings.Trim(res.CapBnd, "0") != "" || res.NoNewPrivs != "1" {
		caps = fmt.Sprintf("CapEff %s CapBnd %s NoNewPrivs %s", res.CapEff, res.CapBnd, res.NoNewPrivs)
	}
	verdict("capabilities and no_new_privs", caps, "")
	return checks
}

// scratchBases are where checkSandbox may make its scratch directory, in order:
// /var/tmp, the temporary directory ($TMPDIR, else /tmp), then the workspace doctor was
// given, else the current directory: a container image without /tmp or /var/tmp (FROM
// scratch) still runs gosbx exec in its working directory, so the doctor's launch must
// not fail there (trial finding T8).
func scratchBases(workspace string) []string {
	bases := []string{"/var/tmp", os.TempDir()}
	if workspace == "" {
		workspace, _ = os.Getwd()
	}
	if workspace != "" {
		bases = append(bases, workspace)
	}
	return bases
}

// scratch makes the doctor's scratch directory gosbx-doctor-PID-… holding ws and
// outside, in the first of scratchBases where it can be made and where the default
// policy accepts ws as a workspace (a $TMPDIR under /dev is a system directory the
// policy refuses), and returns its path; the error names every base's cause.
func scratch(workspace string, host policy.Host) (string, error) {
	prefix := fmt.Sprintf("gosbx-doctor-%d-", os.Getpid())
	var why []string
	for _, dir := range slices.Compact(scratchBases(workspace)) {
		removeStale(dir)
		base, err := os.MkdirTemp(dir, prefix)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		ws := filepath.Join(base, "ws")
		for _, d := range []string{ws, filepath.Join(base, "outside")} {
			if err == nil {
				err = os.Mkdir(d, 0o755)
			}
		}
		if err == nil {
			host.Cwd = ws
			_, err = policy.Effective(policy.Options{Workspace: ws, Args: []string{"true"}}, host)
		}
		if err != nil {
			os.RemoveAll(base)
			why = append(why, dir+": "+err.Error())
			continue
		}
		return base, nil
	}
	return "", fmt.Errorf("cannot make a scratch directory the default policy accepts as a workspace: %s", strings.Join(why, "; "))
}

// removeStale removes what an earlier doctor run killed before it could clean up left in
// dir: entries gosbx-doctor-<pid>-… whose pid is gone (a scratch directory, or an empty
// cgroup, which rmdir removes).
func removeStale(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "gosbx-doctor-")
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(dir, "/sys/fs/cgroup") {
			os.Remove(p)
		} else {
			os.RemoveAll(p)
		}
	}
}

// checkIDMap tells a root caller whether its workspace can be idmapped: its commands run
// as an unprivileged host id, and its read-write binds are idmapped so their files keep
// their owners (nsinit.ProbeIDMap).
func checkIDMap(ws string) Check {
	c := Check{Name: "idmapped mounts (root callers)"}
	if ws == "" {
		ws, _ = os.Getwd()
	}
	if caller := caps.CurrentCaller(); !caller.Root {
		c.Status, c.Detail = Skip, "not needed: your commands run as you; only a root caller's are mapped to another host id"
		if caller.NotRoot != "" {
			c.Detail += " (" + caller.NotRoot + ": not a root caller)"
		}
		return c
	}
	if host, err := policy.CurrentHost(); err == nil {
		if _, err := policy.Effective(policy.Options{Workspace: ws, Args: []string{"true"}}, host); err != nil {
			c.Status, c.Detail = Skip, "not a workspace gosbx accepts: "+err.Error()
			return c
		}
	}
	fs, idmappable := "", false
	var sfs unix.Statfs_t
	if unix.Statfs(ws, &sfs) == nil {
		fs = " (" + fsName(sfs.Type) + ")"
		switch sfs.Type {
		case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
			idmappable = true
		}
	}
	if err := nsinit.ProbeIDMap(ws); err != nil {
		c.Status, c.Detail = Warn, ws+fs+": "+err.Error()
		cause := "idmapped mounts need Linux 5.12 and a file system that supports them (ext4, xfs, btrfs, tmpfs since 6.3; not overlayfs, most FUSE or network file systems)"
		if idmappable && errors.Is(err, unix.EINVAL) {
			cause = "its own file system can be idmapped, so one mounted below it cannot (overlayfs, FUSE, a network file system, proc, sysfs)"
		}
		c.Fix = "a root caller's command in this workspace runs as host uid 0 (without capabilities), as the default root_identity_map: allow accepts " +
			"(root_identity_map: deny refuses instead): " + cause
		return c
	}
	c.Status, c.Detail = OK, ws+fs+": a root caller's commands run as an unprivileged host id, and their files land owned by the workspace's owners"
	return c
}

// fsName names common file system magic numbers (statfs(2)).
func fsName(t int64) string {
	switch t {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	case unix.FUSE_SUPER_MAGIC:
		return "fuse"
	case unix.NFS_SUPER_MAGIC:
		return "nfs"
	case 0xff534d42:
		return "cifs"
	}
	return fmt.Sprintf("file system %#x", t)
}
