package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// doctorMu serializes the doctor runs of this file, so the scratch directories a run
// leaves (or not) under /var/tmp are its own.
var doctorMu sync.Mutex

// doctorLimit is "a few seconds", with room for a loaded test machine.
const doctorLimit = 10 * time.Second

// doctorCheck is one entry of the --json report.
type doctorCheck struct {
	Name, Status, Detail, Fix string
}

// parseDoctorJSON checks the --json output against schema version 1 and returns the
// report: exactly the top-level keys version (1), ok (bool), uid (the caller's),
// checks (a non-empty array of objects with a non-empty string name, a status in
// ok|warn|fail|skip, and optional string detail and fix, and no other key); names are
// unique; ok is true exactly when no check failed.
func parseDoctorJSON(t *testing.T, out string, uid int) (ok bool, checks []doctorCheck) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, clip(out))
	}
	var keys []string
	for k := range top {
		keys = append(keys, k)
	}
	for _, k := range []string{"version", "ok", "uid", "checks"} {
		if _, found := top[k]; !found {
			t.Errorf("missing top-level key %q (have %q)", k, keys)
		}
	}
	if len(top) != 4 {
		t.Errorf("top-level keys %q, want exactly version, ok, uid, checks", keys)
	}
	var version, gotUID float64
	if err := json.Unmarshal(top["version"], &version); err != nil || version != 1 {
		t.Errorf("version %s, want the number 1", top["version"])
	}
	if err := json.Unmarshal(top["ok"], &ok); err != nil {
		t.Errorf("ok %s is not a boolean", top["ok"])
	}
	if err := json.Unmarshal(top["uid"], &gotUID); err != nil || int(gotUID) != uid {
		t.Errorf("uid %s, want %d", top["uid"], uid)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(top["checks"], &raw); err != nil || len(raw) == 0 {
		t.Fatalf("checks %s: want a non-empty array of objects (%v)", clip(string(top["checks"])), err)
	}
	seen := map[string]bool{}
	failed := false
	for i, m := range raw {
		var c doctorCheck
		for k, v := range m {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				t.Errorf("check %d: %s is %s, not a string", i, k, v)
			}
			switch k {
			case "name":
				c.Name = s
			case "status":
				c.Status = s
			case "detail":
				c.Detail = s
			case "fix":
				c.Fix = s
			default:
				t.Errorf("check %d: unknown key %q", i, k)
			}
		}
		if c.Name == "" {
			t.Errorf("check %d has no name: %v", i, m)
		}
		if seen[c.Name] {
			t.Errorf("check name %q repeated", c.Name)
		}
		seen[c.Name] = true
		switch c.Status {
		case "ok", "warn", "skip":
		case "fail":
			failed = true
		default:
			t.Errorf("check %q: status %q not in ok|warn|fail|skip", c.Name, c.Status)
		}
		checks = append(checks, c)
	}
	if ok == failed {
		t.Errorf("ok is %v but a check failed: %v", ok, failed)
	}
	return ok, checks
}

// doctorLeftovers lists what a doctor run of pid may have left: scratch directories
// under /var/tmp (gosbx-doctor-PID-…), its gosbx-doctor-PID-cg cgroup (in the hybrid
// cgroup v2 tree, under this test process's own group, which the doctor inherits), and
// any group left inside the run's scope (its sandboxes' gosbx-<sandbox id> groups are made there and nowhere else;
// other launches on the host make and sweep theirs beside the scope, not in it).
func doctorLeftovers(pid int, scope *cgroupScope) []string {
	left, _ := filepath.Glob(fmt.Sprintf("/var/tmp/gosbx-doctor-%d-*", pid))
	own := []string{"/", "/gosbx"}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.SplitN(line, ":", 3); len(f) == 3 {
				own = append(own, f[2])
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range own {
		if seen[p] {
			continue
		}
		seen[p] = true
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/*"} {
			m, _ := filepath.Glob(filepath.Join(root, p, fmt.Sprintf("gosbx-doctor-%d-*", pid)))
			left = append(left, m...)
		}
	}
	return append(left, scope.leftovers()...)
}

// runDoctor runs `gosbx doctor ARGS` as the caller and checks what it left behind.
func runDoctor(t *testing.T, s *sandbox, args ...string) result {
	t.Helper()
	doctorMu.Lock()
	defer doctorMu.Unlock()
	before, _ := filepath.Glob("/var/tmp/gosbx-doctor-*")
	ctx := s.limitCtx(runLimit)
	cmd := s.rawCommand(ctx, append([]string{"doctor"}, args...)...)
	scope := newCgroupScope(t)
	scope.wrap(cmd)
	r := s.runCmd(ctx, cmd)
	if r.elapsed > doctorLimit {
		t.Errorf("gosbx doctor took %v, want a few seconds (< %v)", r.elapsed, doctorLimit)
	}
	left := doctorLeftovers(cmd.Process.Pid, scope)
	var mine []string
	for _, p := range left {
		if !contains(before, p) {
			mine = append(mine, p)
		}
	}
	if len(mine) > 0 {
		t.Errorf("gosbx doctor left %q behind", mine)
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDoctor(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)

		r := runDoctor(t, s)
		if r.code != 0 {
			t.Fatalf("gosbx doctor: want exit 0\n%v", r)
		}
		for _, want := range []string{"CHECK", "STATUS", "user namespace + id maps", "sandbox launch", "escape: ", "can build its default sandbox here"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("table lacks %q:\n%s", want, r.stdout)
			}
		}

		r = runDoctor(t, s, "--json")
		if r.code != 0 {
			t.Fatalf("gosbx doctor --json: want exit 0\n%v", r)
		}
		ok, checks := parseDoctorJSON(t, r.stdout, c.uid)
		if !ok {
			t.Errorf("ok false")
		}
		names := map[string]doctorCheck{}
		for _, ch := range checks {
			names[ch.Name] = ch
			switch ch.Status {
			case "fail":
				t.Errorf("check %q failed: %s (fix: %s)", ch.Name, ch.Detail, ch.Fix)
			case "skip":
				if ch.Detail == "" {
					t.Errorf("check %q skipped without saying why", ch.Name)
				}
			case "warn":
				if ch.Fix == "" {
					t.Errorf("warning %q without a fix: %s", ch.Name, ch.Detail)
				}
				t.Logf("warn %s: %s", ch.Name, ch.Detail)
			}
		}
		// Everything the default policy needs was exercised, not skipped.
		for _, n := range []string{"user namespace + id maps", "mnt namespace", "pid namespace", "net namespace",
			"ipc namespace", "uts namespace", "cgroup namespace", "new mount API", "pidfd_open, close_range, openat2",
			"sandbox launch", "escape: write outside the workspace", "escape: read a host file",
			"escape: connect to the host's loopback", "escape: TIOCSTI", "escape: create a user namespace",
			"escape: seccomp filter denies", "escape: capabilities and no_new_privs"} {
			if ch, found := names[n]; !found || ch.Status != "ok" {
				t.Errorf("check %q: %+v, want ok", n, ch)
			}
		}
		for _, n := range []string{"kernel", "overlayfs in a user namespace", "Landlock", "sessions", "cgroup mode", "cgroup limits"} {
			if _, found := names[n]; !found {
				t.Errorf("no %q check", n)
			}
		}
	})
}

// allDoctorChecks are the checks every report holds (docs/doctor.md's table).
var allDoctorChecks = []string{"kernel", "container", "user namespace + id maps", "mnt namespace", "pid namespace",
	"net namespace", "ipc namespace", "uts namespace", "cgroup namespace", "new mount API", "overlayfs in a user namespace",
	"pidfd_open, close_range, openat2", "idmapped mounts (root callers)", "Landlock", "cgroup mode", "cgroup limits",
	"CLONE_INTO_CGROUP", "sandbox launch", "escape: write outside the workspace", "escape: read a host file",
	"escape: connect to the host's loopback", "escape: TIOCSTI", "escape: create a user namespace",
	"escape: seccomp filter denies", "escape: capabilities and no_new_privs"}

// A root caller's init runs as an unprivileged host id, which cannot execute a gosbx
// binary of mode 0700: the doctor's fix says so (as exec's does), not "see the user
// namespace check" (which passed), and the escape checks are skip, not absent.
func TestDoctorBinaryNotExecutableByOthers(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	dir, err := os.MkdirTemp("/var/tmp", "gosbx-test-bin-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "gosbx")
	b, err := os.ReadFile(gosbxBin) // a copy: the shared binary keeps its mode
	must(t, err)
	mustWriteExecutable(t, bin, b, 0o700)
	doctorMu.Lock()
	defer doctorMu.Unlock()
	cmd := exec.Command(bin, "doctor", "--json")
	cmd.Dir = s.ws
	out, _ := cmd.Output()
	_, checks := parseDoctorJSON(t, string(out), 0)
	have := map[string]doctorCheck{}
	for _, ch := range checks {
		have[ch.Name] = ch
	}
	if u := have["user namespace + id maps"]; u.Status != "ok" {
		t.Fatalf("userns check %+v; want ok", u)
	}
	launch := have["sandbox launch"]
	if launch.Status != "fail" || !strings.Contains(launch.Fix, "executable by other users") || strings.Contains(launch.Fix, "user namespace check") {
		t.Errorf("sandbox launch with a 0700 binary: %+v; want a fix naming the binary's mode", launch)
	}
	for _, n := range allDoctorChecks {
		ch, found := have[n]
		if !found {
			t.Errorf("check %q missing", n)
		} else if strings.HasPrefix(n, "escape: ") && ch.Status != "skip" {
			t.Errorf("%+v after a failed launch: want skip", ch)
		}
	}
}

func TestDoctorUsage(t *testing.T) {
	requireBinary(t)
	s := newSandbox(t, rootCaller)
	r := runDoctor(t, s, "extra")
	if r.code != 125 {
		t.Errorf("gosbx doctor extra: want exit 125\n%v", r)
	}
}

// Inside a gosbx sandbox the default seccomp filter forbids new user namespaces: the
// doctor must say so, with the right explanation, and exit 1.
func TestDoctorInsideSandbox(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		for _, asJSON := range []bool{false, true} {
			args := []string{"--ro", gosbxBin, "--", gosbxBin, "doctor"}
			if asJSON {
				args = append(args, "--json")
			}
			r := s.run(args...)
			if r.elapsed > doctorLimit {
				t.Errorf("took %v", r.elapsed)
			}
			if r.code != 1 {
				t.Fatalf("gosbx doctor inside gosbx exec (json %v): want exit 1\n%v", asJSON, r)
			}
			if !asJSON {
				for _, want := range []string{"user namespace + id maps", "fail", "seccomp", "cannot build its default sandbox"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("table lacks %q:\n%s", want, r.stdout)
					}
				}
				continue
			}
			ok, checks := parseDoctorJSON(t, r.stdout, c.uid)
			if ok {
				t.Error("ok true inside a sandbox")
			}
			for _, ch := range checks {
				switch {
				case ch.Name == "user namespace + id maps":
					if ch.Status != "fail" {
						t.Errorf("userns check %+v, want fail", ch)
					}
					if !strings.Contains(ch.Detail, "operation not permitted") {
						t.Errorf("userns detail %q, want the EPERM", ch.Detail)
					}
					if !strings.Contains(ch.Fix, "seccomp") || !strings.Contains(ch.Fix, "another sandbox") {
						t.Errorf("userns fix %q: want it to name a seccomp filter / another sandbox", ch.Fix)
					}
				case ch.Status == "fail" && c.uid == 0 && ch.Name == "pidfd_open, close_range, openat2" &&
					ch.Detail == "openat2: function not implemented":
					// a root caller's filter denies openat2 (its mode cannot be checked for
					// set-ID bits): the fix names that filter, not an old kernel
					if !strings.Contains(ch.Fix, "seccomp filter") || strings.Contains(ch.Fix, "5.12") {
						t.Errorf("openat2 under the sandbox's filter: fix %q; want the seccomp filter named, not Linux 5.12", ch.Fix)
					}
				case ch.Status == "fail":
					t.Errorf("only the user namespace check should fail, not %+v", ch)
				case strings.HasSuffix(ch.Name, " namespace") || ch.Name == "sandbox launch" || ch.Name == "new mount API" ||
					ch.Name == "overlayfs in a user namespace" || strings.HasPrefix(ch.Name, "escape: "):
					if ch.Status != "skip" || ch.Detail == "" {
						t.Errorf("%+v: want skip, with the reason", ch)
					}
				}
			}
			// every check appears, skip or not (docs/doctor.md)
			have := map[string]bool{}
			for _, ch := range checks {
				have[ch.Name] = true
			}
			for _, n := range allDoctorChecks {
				if !have[n] {
					t.Errorf("check %q missing from the report inside a sandbox", n)
				}
			}
		}
	})
}
