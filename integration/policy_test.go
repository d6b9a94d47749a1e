package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Policy files (--policy FILE), `gosbx policy check/show/export`: each effect is
// proved from the host side, and every refusal is shown to run nothing.

// writePolicy writes a policy file in the host-only base directory, readable by
// the caller, and returns its path.
func (s *sandbox) writePolicy(name, content string) string {
	s.t.Helper()
	p := filepath.Join(s.base, name)
	must(s.t, os.WriteFile(p, []byte(content), 0o644))
	must(s.t, os.Chmod(p, 0o644))
	return p
}

// rawRunEnv runs gosbx with exactly these arguments, as the caller, with extra
// variables in gosbx's own environment (a later KEY= overrides s.env's).
func (s *sandbox) rawRunEnv(extraEnv []string, args ...string) result {
	s.t.Helper()
	ctx := s.limitCtx(runLimit)
	cmd := s.rawCommand(ctx, args...)
	cmd.Env = s.env(extraEnv...)
	return s.runCmd(ctx, cmd)
}

// marker is a path in the workspace that a command which must not run would
// create; the caller can write there, so only gosbx's refusal keeps it absent.
func (s *sandbox) marker(name string) string {
	return filepath.Join(s.ws, "gosbx-it-ran-"+name+"-"+s.id)
}

// wantRefused checks that r is gosbx's own 125, that stderr holds every want,
// and that the command did not run (marker absent on the host).
func wantRefused(t *testing.T, what string, r result, marker string, wants ...string) {
	t.Helper()
	if r.code != 125 {
		t.Errorf("%s: want exit 125 (refused)\n%v", what, r)
	}
	for _, w := range wants {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("%s: the message does not name %q:\n%s", what, w, r.stderr)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Errorf("%s: the command ran (%s exists on the host)", what, marker)
	}
}

// A file that extends agent and forbids the host network: --net host is
// refused, naming the field, and the command does not run; without the flag
// the same policy runs the command.
func TestPolicyFileNetwork(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("nonet.yaml", "extends: agent\nnetwork: {allow_host: false}\n")
		m := s.marker("nethost")
		r := s.run("--policy", pol, "--net", "host", "--", "/usr/bin/touch", m)
		wantRefused(t, "--net host under allow_host: false", r, m, "network.allow_host")
		m2 := s.marker("nonet")
		r = s.run("--policy", pol, "--", "/usr/bin/touch", m2)
		mustSucceed(t, r, "the same policy without --net host")
		if _, err := os.Stat(m2); err != nil {
			t.Errorf("the command did not run under a valid policy file: %v", err)
		}
	})
}

// allow_extra_read_write: false refuses --rw (the bind target stays untouched);
// --ro is still allowed.
func TestPolicyFileNoExtraReadWrite(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		extra := filepath.Join(s.base, "extra")
		must(t, os.Mkdir(extra, 0o755))
		s.chown(extra)
		pol := s.writePolicy("norw.yaml", "extends: agent\nfilesystem: {allow_extra_read_write: false}\n")
		inExtra := filepath.Join(extra, "written")
		r := s.run("--policy", pol, "--rw", extra, "--", "/usr/bin/touch", inExtra)
		wantRefused(t, "--rw under allow_extra_read_write: false", r, inExtra, "filesystem.allow_extra_read_write")
		r = s.sh([]string{"--policy", pol, "--ro", extra}, `test -d "$1" && echo RO-OK`, extra)
		mustSucceed(t, r, "--ro under allow_extra_read_write: false")
		if !strings.Contains(r.stdout, "RO-OK") {
			t.Errorf("--ro bind not visible:\n%v", r)
		}
	})
}

// process.timeout kills a long command with 124; --timeout may only shorten it.
func TestPolicyFileTimeout(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("timeout.yaml", "extends: agent\nprocess: {timeout: 2s}\n")
		sl := s.sleepLink("poltimeout")
		r := s.run("--policy", pol, "--", sl, "30")
		if r.code != 124 {
			t.Errorf("sleep 30 under timeout: 2s: want exit 124\n%v", r)
		}
		if r.elapsed > 15*time.Second {
			t.Errorf("the policy's timeout did not stop the command in time: %v", r.elapsed)
		}
		if left := waitHostPIDs(sl, 3*time.Second, func(n int) bool { return n == 0 }); len(left) > 0 {
			t.Errorf("sleep still runs on the host after the timeout: %v", left)
		}
		m := s.marker("longer")
		r = s.run("--policy", pol, "--timeout", "10s", "--", "/usr/bin/touch", m)
		wantRefused(t, "--timeout 10s over the policy's 2s", r, m, "10s", "2s")
		m = s.marker("shorter")
		r = s.run("--policy", pol, "--timeout", "1s", "--", "/usr/bin/touch", m)
		mustSucceed(t, r, "--timeout 1s under the policy's 2s")
	})
}

// environment.set with ${workspace} arrives expanded; the caller's own variables
// still do not.
func TestPolicyFileEnvironment(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("env.yaml", "extends: agent\nenvironment: {set: {FOO: \"${workspace}/x\", BAR: \"uid-${uid}\"}}\n")
		ctx := s.limitCtx(runLimit)
		cmd := s.rawCommand(ctx, "exec", "--workspace", s.ws, "--policy", pol, "--", "/usr/bin/env")
		cmd.Env = s.env("GOSBX_IT_SECRET=" + s.id)
		r := s.runCmd(ctx, cmd)
		mustSucceed(t, r, "env under a policy file")
		lines := "\n" + r.stdout
		if !strings.Contains(lines, "\nFOO="+s.ws+"/x\n") {
			t.Errorf("FOO is not ${workspace}/x expanded (%s/x):\n%s", s.ws, r.stdout)
		}
		if want := "\nBAR=uid-" + strconv.Itoa(c.uid) + "\n"; !strings.Contains(lines, want) {
			t.Errorf("BAR is not uid-${uid} expanded (%q):\n%s", want, r.stdout)
		}
		if strings.Contains(r.stdout, s.id) {
			t.Errorf("a caller variable leaked in:\n%s", r.stdout)
		}
	})
}

// filesystem.masked hides a workspace file: empty inside, the host content
// unchanged even after a write attempt.
func TestPolicyFileMasked(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		secret := "secret-" + s.id + "\n"
		p := s.writeWS("secret.txt", secret, 0o644)
		s.writeWS("plain.txt", "plain\n", 0o644)
		pol := s.writePolicy("masked.yaml", "extends: agent\nfilesystem: {masked: [\"${workspace}/secret.txt\"]}\n")
		r := s.sh([]string{"--policy", pol}, `echo "[$(cat secret.txt 2>/dev/null)]"; echo "plain[$(cat plain.txt)]"
(echo overwritten > secret.txt) 2>/dev/null; (rm -f secret.txt) 2>/dev/null; exit 0`)
		mustSucceed(t, r, "masked probes")
		if strings.Contains(r.stdout, s.id) {
			t.Errorf("the masked file was readable inside:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "[]\n") {
			t.Errorf("the masked file is not empty inside:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, "plain[plain]") {
			t.Errorf("the rest of the workspace is not readable:\n%s", r.stdout)
		}
		if b, err := os.ReadFile(p); err != nil || string(b) != secret {
			t.Errorf("the masked file changed on the host: %q %v", b, err)
		}
	})
}

// filesystem.protected with globs: matching files are read-only inside (also
// at depth for a bare pattern) and unchanged on the host; others stay writable.
func TestPolicyFileProtectedPatterns(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		protected := []string{"cert.pem", "sub/deep.pem", "conf/a.key"}
		for _, f := range protected {
			s.writeWS(f, "orig "+f+"\n", 0o644)
		}
		s.chown(filepath.Join(s.ws, "sub"))
		s.chown(filepath.Join(s.ws, "conf"))
		s.writeWS("other.key", "orig other.key\n", 0o644) // conf/*.key does not match at the top
		s.writeWS("notes.txt", "orig notes.txt\n", 0o644)
		pol := s.writePolicy("protect.yaml", "extends: agent\nfilesystem: {protected: [\"*.pem\", \"conf/*.key\"]}\n")
		r := s.sh([]string{"--policy", pol}, `for f in cert.pem sub/deep.pem conf/a.key; do
  (echo pwned >> "$f") 2>/dev/null && echo "WROTE $f"
  (rm -f "$f") 2>/dev/null && ! test -e "$f" && echo "REMOVED $f"
  (mv "$f" "$f.moved") 2>/dev/null && echo "MOVED $f"
done
echo new >> other.key && echo new >> notes.txt && echo new > conf/new.txt && echo WRITABLE-OK`)
		mustSucceed(t, r, "protected probes")
		if strings.Contains(r.stdout, "WROTE") || strings.Contains(r.stdout, "REMOVED") || strings.Contains(r.stdout, "MOVED") {
			t.Errorf("a protected file could be changed inside:\n%s", r.stdout)
		}
		for _, f := range protected {
			if b, _ := os.ReadFile(filepath.Join(s.ws, f)); string(b) != "orig "+f+"\n" {
				t.Errorf("protected %s changed on the host: %q", f, b)
			}
			if _, err := os.Lstat(filepath.Join(s.ws, f+".moved")); err == nil {
				t.Errorf("protected %s was renamed on the host", f)
			}
		}
		for _, f := range []string{"other.key", "notes.txt"} {
			if b, _ := os.ReadFile(filepath.Join(s.ws, f)); string(b) != "orig "+f+"\nnew\n" {
				t.Errorf("unprotected %s was not writable: %q\n%v", f, b, r)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(s.ws, "conf/new.txt")); string(b) != "new\n" {
			t.Errorf("a new file next to a protected one was not written: %q", b)
		}
	})
}

// Invalid policy files: exit 125, the message names the file and the line or the
// field, and the command does not run; `policy check` says the same.
func TestPolicyFileInvalid(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		cases := []struct {
			name, content string
			wants         []string
		}{
			{"unknown-field.yaml", "extends: agent\nnetwork:\n  allow_hots: false\n", []string{":3", "network.allow_hots", "unknown field"}},
			{"wrong-type.yaml", "extends: agent\nprocess:\n  timeout: [1]\n", []string{":3", "process.timeout"}},
			{"bad-value.yaml", "extends: agent\nnetwork:\n  mode: wifi\n", []string{":3", "network.mode", "wifi"}},
			{"bad-git.yaml", "extends: agent\nfilesystem:\n  git: maybe\n", []string{":3", "filesystem.git", "maybe"}},
			{"bad-duration.yaml", "extends: agent\nprocess:\n  timeout: soon\n", []string{":3", "process.timeout", "soon"}},
			{"syntax.yaml", "extends: agent\nnetwork: {mode: none\nprocess:\n", []string{":2"}},
			{"bad-extends.yaml", "extends: nosuch\n", []string{":1", "extends", "nosuch"}},
			{"wrong-type.json", `{"extends": "agent", "network": {"allow_host": "no"}}`, []string{"network.allow_host"}},
		}
		for _, tc := range cases {
			pol := s.writePolicy(tc.name, tc.content)
			m := s.marker(strings.TrimSuffix(tc.name, filepath.Ext(tc.name)))
			r := s.run("--policy", pol, "--", "/usr/bin/touch", m)
			wantRefused(t, "exec --policy "+tc.name, r, m, append([]string{pol}, tc.wants...)...)
			r = s.rawRun("policy", "check", pol)
			if r.code != 125 {
				t.Errorf("policy check %s: want 125\n%v", tc.name, r)
			}
			for _, w := range append([]string{pol}, tc.wants...) {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("policy check %s: the message does not name %q:\n%v", tc.name, w, r)
				}
			}
		}
		// A missing file is an error too, not a silent fallback to agent.
		missing := filepath.Join(s.base, "missing.yaml")
		m := s.marker("missing")
		r := s.run("--policy", missing, "--", "/usr/bin/touch", m)
		wantRefused(t, "exec --policy missing.yaml", r, m, missing)
	})
}

// `policy check` on good files exits 0 and says ok; one bad file among good
// ones makes it 125 and names the bad one.
func TestPolicyCheck(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		good1 := s.writePolicy("good1.yaml", "extends: agent\nnetwork: {allow_host: false}\nprocess: {timeout: 2s}\n")
		good2 := s.writePolicy("good2.json", `{"extends": "strict", "filesystem": {"git": "commit", "protected": ["*.pem"]}}`)
		bad := s.writePolicy("bad.yaml", "extends: agent\nfilesystem:\n  read_onyl: [/opt]\n")
		r := s.rawRun("policy", "check", good1, good2)
		if r.code != 0 {
			t.Errorf("policy check on good files: want 0\n%v", r)
		}
		for _, p := range []string{good1, good2} {
			if !strings.Contains(r.stdout+r.stderr, p) || !strings.Contains(r.stdout+r.stderr, "ok") {
				t.Errorf("policy check does not report %s as ok:\n%v", p, r)
			}
		}
		r = s.rawRun("policy", "check", good1, bad)
		if r.code != 125 {
			t.Errorf("policy check with a bad file: want 125\n%v", r)
		}
		if !strings.Contains(r.stderr, bad+":3") || !strings.Contains(r.stderr, "filesystem.read_onyl") {
			t.Errorf("policy check does not name the bad file, line and field:\n%v", r)
		}
	})
}

// `policy show --policy strict` prints the effective policy: its narrowing
// fields, its /etc list and the workspace; a file's ${workspace} is expanded.
func TestPolicyShow(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		r := s.rawRun("policy", "show", "--policy", "strict", "--workspace", s.ws)
		mustSucceed(t, r, "policy show --policy strict")
		for _, want := range []string{"filesystem:", "read_only:", "/etc/passwd", "/etc/ssl/certs",
			"allow_host: false", "allow_extra_read_write: false", "allow_extra: false", "masked:", "/etc/shadow",
			"protected:", "- .git", "git: readonly", "workspace:", "path: " + s.ws} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("policy show --policy strict lacks %q:\n%s", want, r.stdout)
			}
		}
		if regexp.MustCompile(`(?m)^ *- /etc$`).MatchString(r.stdout) {
			t.Errorf("strict shows all of /etc read-only:\n%s", r.stdout)
		}
		parseYAML(t, r.stdout)

		pol := s.writePolicy("show.yaml", "extends: agent\nfilesystem: {masked: [\"${workspace}/secret.txt\"], git: commit}\n")
		r = s.rawRun("policy", "show", "--policy", pol, "--workspace", s.ws)
		mustSucceed(t, r, "policy show --policy FILE")
		for _, want := range []string{s.ws + "/secret.txt", "git: commit"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("policy show of a file lacks %q:\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, "${workspace}") {
			t.Errorf("policy show left ${workspace} unexpanded:\n%s", r.stdout)
		}
		parseYAML(t, r.stdout)
	})
}

// parseYAML checks that text is YAML with python3's yaml module, when present.
func parseYAML(t *testing.T, text string) {
	t.Helper()
	cmd := exec.Command(python, "-c", `import sys
try:
    import yaml
except ImportError:
    sys.exit(3)
d = yaml.safe_load(sys.stdin)
assert isinstance(d, dict) and "filesystem" in d, d`)
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 3 {
		return // no yaml module here: the key checks above stand
	}
	if err != nil {
		t.Errorf("policy show output is not YAML: %v\n%s", err, out)
	}
}

// ociSpec is the part of the runtime-spec config.json the tests read.
type ociSpec struct {
	Process struct {
		User struct {
			UID int `json:"uid"`
			GID int `json:"gid"`
		} `json:"user"`
		Args []string `json:"args"`
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
	} `json:"process"`
	Mounts []struct {
		Destination string   `json:"destination"`
		Type        string   `json:"type"`
		Source      string   `json:"source"`
		Options     []string `json:"options"`
	} `json:"mounts"`
	Linux struct {
		UIDMappings []struct {
			ContainerID int `json:"containerID"`
			HostID      int `json:"hostID"`
		} `json:"uidMappings"`
		MaskedPaths   []string `json:"maskedPaths"`
		ReadonlyPaths []string `json:"readonlyPaths"`
	} `json:"linux"`
}

func hasOpt(opts []string, o string) bool {
	for _, x := range opts {
		if x == o {
			return true
		}
	}
	return false
}

// `policy export --oci -- true` prints the runtime-spec JSON: the command, the
// caller's identity, the workspace as a read-write bind, /usr read-only, the
// masked secrets, and a repository's .git read-only.
func TestPolicyExportOCI(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		s.hostGit(s.ws, "init", "-q")
		r := s.rawRun("policy", "export", "--oci", "--workspace", s.ws, "--", "true")
		mustSucceed(t, r, "policy export --oci")
		var spec ociSpec
		if err := json.Unmarshal([]byte(r.stdout), &spec); err != nil {
			t.Fatalf("policy export --oci is not JSON: %v\n%s", err, clip(r.stdout))
		}
		if len(spec.Process.Args) != 1 || spec.Process.Args[0] != "true" {
			t.Errorf("process.args = %q, want [true]", spec.Process.Args)
		}
		if spec.Process.User.UID != c.uid || spec.Process.User.GID != c.gid {
			t.Errorf("process.user = %d:%d, want %d:%d", spec.Process.User.UID, spec.Process.User.GID, c.uid, c.gid)
		}
		if spec.Process.Cwd != s.ws {
			t.Errorf("process.cwd = %q, want %q", spec.Process.Cwd, s.ws)
		}
		mapped := false
		for _, m := range spec.Linux.UIDMappings {
			mapped = mapped || (m.ContainerID == c.uid && m.HostID == c.uid)
		}
		if !mapped {
			t.Errorf("uidMappings do not map %d to itself: %+v", c.uid, spec.Linux.UIDMappings)
		}
		var wsRW, usrRO bool
		for _, m := range spec.Mounts {
			if m.Destination == s.ws && m.Source == s.ws && m.Type == "bind" && !hasOpt(m.Options, "ro") {
				wsRW = true
			}
			if m.Destination == "/usr" && m.Type == "bind" && hasOpt(m.Options, "ro") {
				usrRO = true
			}
		}
		if !wsRW {
			t.Errorf("the workspace is not a read-write bind in the exported mounts:\n%s", clip(r.stdout))
		}
		if !usrRO {
			t.Errorf("/usr is not a read-only bind in the exported mounts")
		}
		gitRO := hasOpt(spec.Linux.ReadonlyPaths, filepath.Join(s.ws, ".git"))
		for _, m := range spec.Mounts {
			if m.Destination == filepath.Join(s.ws, ".git") && hasOpt(m.Options, "ro") {
				gitRO = true
			}
		}
		if !gitRO {
			t.Errorf("the workspace's .git is not read-only in the exported spec:\n%s", clip(r.stdout))
		}
		if !hasOpt(spec.Linux.MaskedPaths, "/etc/shadow") {
			t.Errorf("/etc/shadow is not among the masked paths: %q", spec.Linux.MaskedPaths)
		}
		for _, e := range spec.Process.Env {
			if strings.HasPrefix(e, "GOSBX_") {
				t.Errorf("a caller variable is in the exported environment: %s", e)
			}
		}
	})
}

// `policy check` of a valid policy whose required read_only path is missing here says
// so (a launch would stop, 125), naming the path as written and `optional: true`; it
// stays ok (exit 0): another host may have it. An optional missing path is no warning.
func TestPolicyCheckMissingRequiredBind(t *testing.T) {
	s := newSandbox(t, rootCaller)
	missing := filepath.Join(s.base, "absent")
	pol := filepath.Join(s.base, "p.yaml")
	must(t, os.WriteFile(pol, []byte("extends: agent\nfilesystem:\n  read_only:\n    - "+missing+
		"\n    - {path: "+missing+"-opt, optional: true}\n    - /usr\n"), 0o644))
	r := s.rawRun("policy", "check", pol)
	if r.code != 0 || strings.Count(r.stderr, "gosbx: warning:") != 1 || !strings.Contains(r.stderr, missing+" does not exist") ||
		!strings.Contains(r.stderr, "{path: "+missing+", optional: true}") {
		t.Errorf("policy check with a missing required read_only path: want ok with one warning naming it and optional: true\n%v", r)
	}
	if r := s.run("--policy", pol, "--", "true"); r.code != 125 {
		t.Errorf("a launch under it: want 125 (the warning's claim)\n%v", r)
	}
}

// The wall-clock limit is part of the exported config (annotation org.gosbx.timeout):
// from --timeout, and from a policy file's process.timeout.
func TestPolicyExportTimeout(t *testing.T) {
	s := newSandbox(t, rootCaller)
	pol := filepath.Join(s.base, "p.yaml")
	must(t, os.WriteFile(pol, []byte("extends: agent\nprocess:\n  timeout: 90s\n"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "30s"}, "30s"},
		{[]string{"--policy", pol}, "1m30s"},
	} {
		r := s.rawRun(append(append([]string{"policy", "export", "--oci", "--workspace", s.ws}, tc.args...), "--", "true")...)
		var spec struct{ Annotations map[string]string }
		if err := json.Unmarshal([]byte(r.stdout), &spec); err != nil || r.code != 0 {
			t.Fatalf("export %q: %v\n%v", tc.args, err, r)
		}
		if got := spec.Annotations["org.gosbx.timeout"]; got != tc.want {
			t.Errorf("export %q: org.gosbx.timeout %q; want %q", tc.args, got, tc.want)
		}
	}
}

// A resource flag over a limit the policy file names may only lower it (the trial's
// --memory 2G over memory: 1G ran with 2G): raising any of them is refused with 125
// naming both values and the command does not run; lowering one applies it (the
// rlimit read inside). Session start is held to the same rule.
func TestPolicyFileLimitsOnlyLower(t *testing.T) {
	forEachCaller(t, func(t *testing.T, c caller) {
		s := newSandbox(t, c)
		pol := s.writePolicy("limits.yaml", "extends: agent\nresources: {memory: 1G, pids: 100, nofile: 512, fsize: 1M, cpus: 1}\n")
		for _, bad := range [][]string{
			{"--memory", "2G", "1G"}, {"--pids", "5000", "100"}, {"--nofile", "4096", "512"},
			{"--fsize", "2M", "1M"}, {"--cpus", "2", "1"}, {"--memory-swap", "1G", "0"},
			// 0 is no limit: it lifts the policy's (an attack review ran 200 MiB under 64M)
			{"--memory", "0", "1G"}, {"--fsize", "0", "1M"},
		} {
			m := s.marker("raise" + bad[0] + bad[1])
			asked := bad[1]
			if asked == "0" {
				asked = "0 (no limit)"
			}
			r := s.run("--policy", pol, bad[0], bad[1], "--", "/usr/bin/touch", m)
			wantRefused(t, bad[0]+" "+bad[1]+" over the policy's "+bad[2], r, m, bad[0][2:]+": "+asked+" is more than the policy's "+bad[2])
		}
		// an rlimit alone: it applies for every caller (a memory limit needs a cgroup)
		low := s.writePolicy("nofile.yaml", "extends: agent\nresources: {nofile: 512}\n")
		r := s.run("--policy", low, "--nofile", "256", "--", "/bin/sh", "-c", "ulimit -n")
		mustSucceed(t, r, "--nofile 256 under the policy's 512")
		if strings.TrimSpace(r.stdout) != "256" {
			t.Errorf("--nofile 256 under the policy's 512: ulimit -n inside says %q", r.stdout)
		}
		if c.uid == 0 {
			e := newSessionEnv(t, c)
			r := e.gosbx("session", "start", "lim", "--workspace", e.ws, "--policy", pol, "--memory", "2G")
			if r.code != 125 || !strings.Contains(r.stderr, "memory: 2G is more than the policy's 1G") {
				t.Errorf("session start --memory 2G over the policy's 1G: want 125 naming both\n%v", r)
			}
			r = e.gosbx("session", "start", "lim0", "--workspace", e.ws, "--policy", pol, "--memory", "0")
			if r.code != 125 || !strings.Contains(r.stderr, "memory: 0 (no limit) is more than the policy's 1G") {
				t.Errorf("session start --memory 0 over the policy's 1G: want 125 naming both\n%v", r)
			}
		}
	})
}
