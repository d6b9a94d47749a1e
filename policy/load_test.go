package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gosbx/gosbx/seccomp"
)

// fileError asserts err is a *FileError for file name and returns it.
func fileError(t *testing.T, err error, name string) *FileError {
	t.Helper()
	if err == nil {
		t.Fatal("Parse succeeded; want a *FileError")
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FileError", err, err)
	}
	if fe.File != name {
		t.Errorf("File = %q; want %q", fe.File, name)
	}
	if !strings.HasPrefix(fe.Error(), name+":") {
		t.Errorf("message %q does not start with the file name %q", fe.Error(), name)
	}
	return fe
}

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "test.yaml")
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return p
}

func boolp(b bool) *bool { return &b }

func TestParseValid(t *testing.T) {
	yamlSrc := `# a policy
description: mine
workspace:
  path: ${home}/src/app
filesystem:
  read_only:
    - /usr
    - path: /opt/tool
      optional: true
  read_write: [/var/cache/app]
  tmpfs:
    - /scratch
    - path: /tmp
      mode: "1777"
  protected: [.git, "config/*.key", "**/secrets"]
  git: commit
  masked: [/etc/shadow]
  credentials: [~/.ssh]
  allow_extra_read_only: true
  allow_extra_read_write: false
environment:
  set:
    GOFLAGS: -mod=mod
    CACHE: ${workspace}/.cache
  pass: [SSH_TTY]
  path: /usr/bin:/bin
  path_prepend: [~/.cargo/bin]
  allow_extra: false
network:
  mode: host
  allow_host: true
process:
  timeout: 10m
  hostname: box
  cwd: sub
seccomp:
  profile: agent
  rules:
    - {syscalls: [ptrace], action: errno, errno: EACCES}
resources: {memory: 1G}
`
	want := &Policy{
		Description: "mine",
		Workspace:   Workspace{Path: "${home}/src/app"},
		Filesystem: Filesystem{
			ReadOnly:            []Bind{{Path: "/usr"}, {Path: "/opt/tool", Optional: true}},
			ReadWrite:           []Bind{{Path: "/var/cache/app"}},
			Tmpfs:               []Tmpfs{{Path: "/scratch"}, {Path: "/tmp", Mode: "1777"}},
			Protected:           []string{".git", "config/*.key", "**/secrets"},
			Git:                 GitCommit,
			Masked:              []string{"/etc/shadow"},
			Credentials:         []string{"~/.ssh"},
			AllowExtraReadOnly:  boolp(true),
			AllowExtraReadWrite: boolp(false),
		},
		Environment: Environment{
			Set:         map[string]string{"GOFLAGS": "-mod=mod", "CACHE": "${workspace}/.cache"},
			Pass:        []string{"SSH_TTY"},
			Path:        "/usr/bin:/bin",
			PathPrepend: []string{"~/.cargo/bin"},
			AllowExtra:  boolp(false),
		},
		Network:   Network{Mode: NetHost, AllowHost: boolp(true)},
		Process:   Process{Timeout: "10m", Hostname: "box", Cwd: "sub"},
		Seccomp:   &seccomp.Config{Profile: "agent", Rules: []seccomp.Rule{{Syscalls: []string{"ptrace"}, Action: "errno", Errno: "EACCES"}}},
		Resources: &Resources{Memory: "1G"},
	}
	got := mustParse(t, yamlSrc)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("YAML:\n got %+v\nwant %+v", got, want)
	}

	// The same policy as JSON.
	js, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err = Parse(js, "test.json")
	if err != nil {
		t.Fatalf("Parse(JSON): %v\n%s", err, js)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "\n", "# only a comment\n", "---\n", "null", "{}"} {
		p, err := Parse([]byte(src), "empty.yaml")
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if !reflect.DeepEqual(*p, Policy{}) {
			t.Errorf("Parse(%q) = %+v; want the empty policy", src, *p)
		}
	}
}

func TestParseSyntaxError(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
	}{
		{"unclosed flow list", "network:\n  mode: none\nfilesystem:\n  read_only: [/usr\n", 5},
		{"bad indentation", "network:\n  mode: none\n allow_host: true\n", 3},
		{"tab", "network:\n\tmode: none\n", 2},
		{"unclosed JSON", "{\n  \"network\": {\"mode\": \"none\"\n", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "bad.yaml")
			fe := fileError(t, err, "bad.yaml")
			if fe.Line == 0 {
				t.Errorf("%q: no line", fe.Error())
			} else if tt.line != 0 && fe.Line != tt.line {
				t.Logf("%q: line %d (the parser's guess; the error is on line %d)", fe.Error(), fe.Line, tt.line)
			}
			if strings.Contains(fe.Reason, "error converting YAML") || strings.HasPrefix(fe.Reason, "yaml:") {
				t.Errorf("reason %q keeps the library's prefix", fe.Reason)
			}
		})
	}
}

func TestParseNotAMapping(t *testing.T) {
	for _, src := range []string{"- a\n- b\n", "just a string", "42", "[]"} {
		_, err := Parse([]byte(src), "list.yaml")
		fe := fileError(t, err, "list.yaml")
		if !strings.Contains(fe.Reason, "mapping") {
			t.Errorf("Parse(%q): %q does not say a policy is a mapping", src, fe.Error())
		}
	}
}

// TestParseRefused covers unknown fields at each level, wrong types and bad values:
// each names the field, the line and the reason.
func TestParseRefused(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		field  string
		line   int    // 0: not checked
		reason string // substring of the reason
	}{
		// unknown fields, at each nesting level
		{"unknown top-level", "netwrk:\n  mode: none\n", "netwrk", 1, "unknown field"},
		{"top-level case", "Network: {}\n", "Network", 1, "did you mean network?"},
		{"unknown in workspace", "workspace:\n  dir: /x\n", "workspace.dir", 2, "unknown field"},
		{"readonly for read_only", "filesystem:\n  readonly: [/usr]\n", "filesystem.readonly", 2, "did you mean read_only?"},
		{"read-write for read_write", "filesystem:\n  read-write: [/x]\n", "filesystem.read-write", 2, "did you mean read_write?"},
		{"pathPrepend", "environment:\n  pathPrepend: [/x]\n", "environment.pathPrepend", 2, "did you mean path_prepend?"},
		{"AllowHost", "network:\n  allowHost: false\n", "network.allowHost", 2, "did you mean allow_host?"},
		{"unknown in process", "process:\n  user: root\n", "process.user", 2, "unknown field"},
		{"unknown in a bind object", "filesystem:\n  read_only:\n    - path: /usr\n      optionl: true\n", "filesystem.read_only[0].optionl", 4, "unknown field"},
		{"unknown in a tmpfs object", "filesystem:\n  tmpfs:\n    - /a\n    - path: /b\n      nr_inodes: 10\n", "filesystem.tmpfs[1].nr_inodes", 5, "unknown field"},
		{"bad tmpfs size", "filesystem:\n  tmpfs:\n    - path: /b\n      size: lots\n", "filesystem.tmpfs[0].size", 4, "size of /b"},
		{"known list", "process:\n  tmeout: 1s\n", "process.tmeout", 2, "timeout"},

		// wrong types
		{"number for network.mode", "network:\n  mode: 3\n", "network.mode", 2, "want a string"},
		{"bool for network.mode", "network:\n  mode: true\n", "network.mode", 2, "want a string"},
		{"string for a list", "filesystem:\n  read_only: /usr\n", "filesystem.read_only", 2, "want a list"},
		{"string for protected", "filesystem:\n  protected: .git\n", "filesystem.protected", 2, "want a list"},
		{"mapping for a bool", "network:\n  allow_host: {a: 1}\n", "network.allow_host", 2, "want true or false"},
		{"string for a bool", "environment:\n  allow_extra: \"no\"\n", "environment.allow_extra", 2, "want true or false"},
		{"list for a section", "network: [none]\n", "network", 1, "want a mapping"},
		{"string for a section", "process: fast\n", "process", 1, "want a mapping"},
		{"number in a list", "filesystem:\n  masked: [/a, 7]\n", "filesystem.masked[1]", 2, "want a string"},
		{"number for a tmpfs mode", "filesystem:\n  tmpfs:\n    - path: /x\n      mode: 0700\n", "filesystem.tmpfs[0].mode", 4, "quote it"},
		{"list for a bind", "filesystem:\n  read_only:\n    - [/usr]\n", "filesystem.read_only[0]", 0, "want a mapping"},
		{"number for a set value", "environment:\n  set:\n    NUM: 3\n", "environment.set.NUM", 3, "want a string"},
		{"list for set", "environment:\n  set: [A=1]\n", "environment.set", 2, "want a mapping"},
		{"number for description", "description: 1\n", "description", 1, "want a string"},

		// bad values
		{"network.mode wifi", "network:\n  mode: wifi\n", "network.mode", 2, "wifi"},
		// read fine, but no filter can express it: refused here, not at launch
		{"seccomp masked_eq never holds", "seccomp:\n  rules:\n    - {syscalls: [ioctl], action: errno, args: [{index: 1, op: masked_eq, mask: 255, value: 256}]}\n",
			"seccomp.rules[0]", 3, "never hold"},
		{"filesystem.git rw", "filesystem:\n  git: rw\n", "filesystem.git", 2, "readonly or commit"},
		{"process.timeout soon", "process:\n  timeout: soon\n", "process.timeout", 2, "soon"},
		{"negative timeout", "process:\n  timeout: -5s\n", "process.timeout", 2, "positive"},
		{"hostname", "process:\n  hostname: -bad-\n", "process.hostname", 2, "-bad-"},
		{"tmpfs mode 999", "filesystem:\n  tmpfs:\n    - path: /x\n      mode: \"999\"\n", "filesystem.tmpfs", 2, "999"},
		{"tmpfs mode too big", "filesystem:\n  tmpfs:\n    - path: /x\n      mode: \"17777\"\n", "filesystem.tmpfs", 2, "17777"},
		{"tmpfs relative", "filesystem:\n  tmpfs: [scratch]\n", "filesystem.tmpfs", 2, "absolute"},
		{"relative read_only", "filesystem:\n  read_only: [usr]\n", "filesystem.read_only", 2, "absolute"},
		{"relative read_write object", "filesystem:\n  read_write:\n    - path: ./x\n", "filesystem.read_write", 2, "absolute"},
		{"empty bind path", "filesystem:\n  read_only:\n    - optional: true\n", "filesystem.read_only", 2, "empty"},
		{"relative masked", "filesystem:\n  masked: [etc/shadow]\n", "filesystem.masked", 2, "absolute"},
		{"relative credentials", "filesystem:\n  credentials: [.ssh]\n", "filesystem.credentials", 2, "absolute"},
		{"relative path_prepend", "environment:\n  path_prepend: [.venv/bin]\n", "environment.path_prepend", 2, "absolute"},
		{"protected absolute", "filesystem:\n  protected: [/abs]\n", "filesystem.protected", 2, "/abs"},
		{"protected dot-dot", "filesystem:\n  protected: [../x]\n", "filesystem.protected", 2, ".."},
		{"protected inner dot-dot", "filesystem:\n  protected: [a/../../x]\n", "filesystem.protected", 2, ".."},
		{"protected dot", "filesystem:\n  protected: [./x]\n", "filesystem.protected", 2, "."},
		{"protected empty component", "filesystem:\n  protected: [a//b]\n", "filesystem.protected", 2, "empty"},
		{"protected empty", "filesystem:\n  protected: [\"\"]\n", "filesystem.protected", 2, ""},
		{"unknown variable", "filesystem:\n  read_only: [\"${nope}/x\"]\n", "filesystem.read_only", 2, "${nope}"},
		{"unknown variable in set", "environment:\n  set:\n    A: ${HOME}\n", "environment.set.A", 3, "unknown variable"},
		{"unknown variable in path", "environment:\n  path: ${path}:/bin\n", "environment.path", 2, "unknown variable"},
		{"unknown variable in cwd", "process:\n  cwd: ${cwd}\n", "process.cwd", 2, "unknown variable"},
		{"unclosed variable", "filesystem:\n  read_only: [\"${home/x\"]\n", "filesystem.read_only", 2, "unclosed"},
		{"unclosed variable in masked", "filesystem:\n  masked: [\"/a/${\"]\n", "filesystem.masked", 2, "unclosed"},
		{"bad env name", "environment:\n  set:\n    \"A=B\": x\n", "environment.set", 2, "A=B"},
		{"empty env name", "environment:\n  set:\n    \"\": x\n", "environment.set", 2, "not a variable name"},
		{"bad pass name", "environment:\n  pass: [\"X=1\"]\n", "environment.pass", 2, "X=1"},
		{"workspace relative", "workspace:\n  path: src\n", "workspace.path", 2, "absolute"},
		{"workspace refers to itself", "workspace:\n  path: ${workspace}/x\n", "workspace.path", 2, "${workspace}"},
		{"extends nope", "description: x\nextends: nope\n", "extends", 2, "agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "pol.yaml")
			fe := fileError(t, err, "pol.yaml")
			if fe.Field != tt.field {
				t.Errorf("Field = %q; want %q (%s)", fe.Field, tt.field, fe.Error())
			}
			if tt.line != 0 && fe.Line != tt.line {
				t.Errorf("Line = %d; want %d (%s)", fe.Line, tt.line, fe.Error())
			}
			if !strings.Contains(fe.Reason, tt.reason) {
				t.Errorf("reason %q does not mention %q", fe.Reason, tt.reason)
			}
			if fe.Field != "" && !strings.Contains(fe.Error(), fe.Field+": ") {
				t.Errorf("message %q does not name the field %q", fe.Error(), fe.Field)
			}
		})
	}
}

// TestParseRefusedJSON: the same checks in a JSON file, whose lines are found too.
func TestParseRefusedJSON(t *testing.T) {
	tests := []struct {
		name, src, field string
		line             int
	}{
		{"bad value", "{\n  \"network\": {\n    \"mode\": \"wifi\"\n  }\n}\n", "network.mode", 3},
		{"unknown field", "{\n  \"filesystem\": {\n    \"readonly\": [\"/usr\"]\n  }\n}\n", "filesystem.readonly", 3},
		{"wrong type", "{\n  \"process\": {\n    \"timeout\": 5\n  }\n}\n", "process.timeout", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "pol.json")
			fe := fileError(t, err, "pol.json")
			if fe.Field != tt.field || fe.Line != tt.line {
				t.Errorf("%s: field %q line %d; want %q line %d", fe.Error(), fe.Field, fe.Line, tt.field, tt.line)
			}
		})
	}
}

// TestParseLineOfNestedField: the line of a field is the line of that field, not of the
// first key of the same name elsewhere in the file.
func TestParseLineOfNestedField(t *testing.T) {
	tests := []struct {
		name, src, field string
		line             int
	}{
		{"path in a bind before workspace.path",
			"filesystem:\n  read_only:\n    - path: /usr\n      optional: true\nworkspace:\n  path: relative\n",
			"workspace.path", 6},
		{"mode in a tmpfs before network.mode",
			"filesystem:\n  tmpfs:\n    - path: /tmp\n      mode: \"1777\"\nnetwork:\n  mode: wifi\n",
			"network.mode", 6},
		{"second bind's unknown field",
			"filesystem:\n  read_only:\n    - path: /a\n      optional: true\n    - path: /b\n      optional: true\n      optionl: true\n",
			"filesystem.read_only[1].optionl", 7},
		{"JSON on one line", `{"network": {"mode": "wifi"}}`, "network.mode", 1},
		{"JSON flow mapping on a later line", "{\n  \"process\": {},\n  \"network\": {\"mode\": \"wifi\"}\n}\n", "network.mode", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "pol.yaml")
			fe := fileError(t, err, "pol.yaml")
			if fe.Field != tt.field {
				t.Fatalf("Field = %q; want %q", fe.Field, tt.field)
			}
			if fe.Line != tt.line {
				t.Errorf("%s: line %d; want %d", fe.Error(), fe.Line, tt.line)
			}
		})
	}
}

// TestParseEnvNamesAreNotBooleans: YAML 1.1 reads a bare y, n, yes, no, on, off as a
// bool; as a key of environment.set it must stay the variable name written, not become
// "true" or "false".
// YAML 1.2: off, yes, no are the strings they look like, as values too.
func TestParseYAML12Scalars(t *testing.T) {
	p, err := Parse([]byte("environment:\n  set:\n    GOPROXY: off\n    X: yes\n"), "env.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Environment.Set["GOPROXY"] != "off" || p.Environment.Set["X"] != "yes" {
		t.Errorf("set = %v; want the strings off and yes", p.Environment.Set)
	}
}

func TestParseEnvNamesAreNotBooleans(t *testing.T) {
	for _, name := range []string{"N", "Y", "ON", "OFF", "NO", "YES"} {
		p, err := Parse([]byte("environment:\n  set:\n    "+name+": \"1\"\n"), "env.yaml")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if _, ok := p.Environment.Set[name]; !ok {
			t.Errorf("environment.set {%s: \"1\"} read as %v: the variable was renamed", name, p.Environment.Set)
		}
	}
}

func TestParseDuplicateKeys(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
	}{
		{"top level", "network:\n  mode: none\nnetwork:\n  mode: host\n", 3},
		{"nested", "network:\n  mode: none\n  mode: host\n", 3},
		{"env set", "environment:\n  set:\n    A: x\n    A: y\n", 4},
		{"JSON", "{\"network\": {\"mode\": \"none\", \"mode\": \"host\"}}", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "dup.yaml")
			fe := fileError(t, err, "dup.yaml")
			if !strings.Contains(fe.Reason, "already set") {
				t.Errorf("reason %q does not say the key is repeated", fe.Reason)
			}
			if fe.Line < tt.line {
				t.Errorf("%s: line %d; want %d", fe.Error(), fe.Line, tt.line)
			}
		})
	}
}

func TestFileErrorMessage(t *testing.T) {
	tests := []struct {
		e    FileError
		want string
	}{
		{FileError{File: "p.yaml", Line: 3, Field: "network.mode", Reason: "bad"}, "p.yaml:3: network.mode: bad"},
		{FileError{File: "p.yaml", Field: "network.mode", Reason: "bad"}, "p.yaml: network.mode: bad"},
		{FileError{File: "p.yaml", Line: 1, Reason: "bad"}, "p.yaml:1: bad"},
		{FileError{File: "built-in x", Reason: "bad"}, "built-in x: bad"},
	}
	for _, tt := range tests {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q; want %q", got, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte("extends: strict\nprocess:\n  timeout: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("{\n  \"network\": {\n    \"mode\": \"wifi\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, ref := range []string{"", "agent"} {
		p, err := Load(ref)
		if err != nil {
			t.Fatalf("Load(%q): %v", ref, err)
		}
		if want, _ := Builtin("agent"); !reflect.DeepEqual(p, want) {
			t.Errorf("Load(%q) is not the agent profile", ref)
		}
	}
	p, err := Load(good)
	if err != nil {
		t.Fatal(err)
	}
	if p.Process.Timeout != "1m" || allowed(p.Network.AllowHost) {
		t.Errorf("Load(%s) = %+v; want strict with a 1m timeout", good, p)
	}
	if p2, err := LoadFile(good); err != nil || !reflect.DeepEqual(p, p2) {
		t.Errorf("LoadFile(%s) = %v, %v; want what Load gives", good, p2, err)
	}

	_, err = Load(bad)
	if fe := fileError(t, err, bad); fe.Field != "network.mode" || fe.Line != 3 {
		t.Errorf("Load(%s): %v; want network.mode on line 3", bad, err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err = LoadFile(missing)
	if fe := fileError(t, err, missing); !strings.Contains(fe.Reason, "no such file") {
		t.Errorf("LoadFile(missing): %v", err)
	}
	_, err = Load("nosuchprofile")
	if fe := fileError(t, err, "nosuchprofile"); !strings.Contains(fe.Reason, "agent, build, strict") {
		t.Errorf("Load(nosuchprofile): %q does not list the profiles", fe.Error())
	}
}

func TestExtends(t *testing.T) {
	agent, _ := Builtin("agent")
	p := mustParse(t, `extends: agent
description: mine
filesystem:
  read_only: [/data]
  tmpfs: [/scratch]
  protected: ["*.pem"]
  masked: [/etc/machine-id]
  credentials: [~/.vault-token]
  git: commit
  allow_extra_read_write: false
environment:
  set: {A: "1"}
  pass: [SSH_TTY]
  path_prepend: [/opt/bin]
network:
  allow_host: false
process:
  timeout: 5m
  hostname: box
`)
	if p.Base() != "agent" || p.Extends != "" || p.Description != "mine" {
		t.Errorf("Base %q, Extends %q, Description %q", p.Base(), p.Extends, p.Description)
	}
	f := p.Filesystem
	// lists appended
	if want := append(clone(agent.Filesystem.ReadOnly), Bind{Path: "/data"}); !reflect.DeepEqual(f.ReadOnly, want) {
		t.Errorf("read_only = %v; want %v", f.ReadOnly, want)
	}
	if want := append(clone(agent.Filesystem.Tmpfs), Tmpfs{Path: "/scratch"}); !reflect.DeepEqual(f.Tmpfs, want) {
		t.Errorf("tmpfs = %v; want %v", f.Tmpfs, want)
	}
	if want := []string{".git", "*.pem"}; !reflect.DeepEqual(f.Protected, want) {
		t.Errorf("protected = %q; want %q", f.Protected, want)
	}
	if !slices.Contains(f.Masked, "/etc/shadow") || !slices.Contains(f.Masked, "/etc/machine-id") {
		t.Errorf("masked = %q", f.Masked)
	}
	if !slices.Contains(f.Credentials, "~/.ssh") || !slices.Contains(f.Credentials, "~/.vault-token") {
		t.Errorf("credentials = %q", f.Credentials)
	}
	// scalars replaced
	if f.Git != GitCommit || allowed(f.AllowExtraReadWrite) || !allowed(f.AllowExtraReadOnly) {
		t.Errorf("git %q, allow_extra_read_write %v, allow_extra_read_only %v", f.Git, f.AllowExtraReadWrite, f.AllowExtraReadOnly)
	}
	if p.Network.Mode != NetNone || allowed(p.Network.AllowHost) {
		t.Errorf("network = %+v", p.Network)
	}
	if p.Process.Timeout != "5m" || p.Process.Hostname != "box" {
		t.Errorf("process = %+v", p.Process)
	}
	if !reflect.DeepEqual(p.Environment.Set, map[string]string{"A": "1"}) || !reflect.DeepEqual(p.Environment.Pass, []string{"SSH_TTY"}) {
		t.Errorf("environment = %+v", p.Environment)
	}
	// The profile itself is untouched.
	if again, _ := Builtin("agent"); !reflect.DeepEqual(again, agent) {
		t.Error("extending changed the built-in profile")
	}

	// maps merged: build's variables and the file's own
	b := mustParse(t, "extends: build\nenvironment:\n  set:\n    GOPROXY: https://proxy.golang.org\n    MINE: x\n  path_prepend: [/first]\n")
	build, _ := Builtin("build")
	for k, v := range build.Environment.Set {
		want := v
		if k == "GOPROXY" {
			want = "https://proxy.golang.org"
		}
		if b.Environment.Set[k] != want {
			t.Errorf("set.%s = %q; want %q", k, b.Environment.Set[k], want)
		}
	}
	if b.Environment.Set["MINE"] != "x" {
		t.Errorf("set.MINE = %q", b.Environment.Set["MINE"])
	}
	if b.Environment.PathPrepend[0] != "/first" || len(b.Environment.PathPrepend) != len(build.Environment.PathPrepend)+1 {
		t.Errorf("path_prepend = %q; want /first in front of build's", b.Environment.PathPrepend)
	}
	if len(build.Environment.Set) == len(b.Environment.Set) {
		t.Error("the built-in map was changed in place")
	}

	// Each profile can be extended; an unknown one is refused.
	for _, name := range Profiles() {
		mustParse(t, "extends: "+name+"\n")
	}
	_, err := Parse([]byte("extends: nope\n"), "x.yaml")
	if fe := fileError(t, err, "x.yaml"); fe.Field != "extends" || fe.Line != 1 || !strings.Contains(fe.Reason, `"nope"`) {
		t.Errorf("extends nope: %v", err)
	}
}

// TestExtendsRoundTrip: a policy that extends a profile, as `gosbx policy show` prints
// it, reads back as the same policy.
func TestExtendsRoundTrip(t *testing.T) {
	p := mustParse(t, "extends: agent\nfilesystem:\n  read_only: [/data]\n")
	out, err := MarshalYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out, "shown.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !reflect.DeepEqual(back.Filesystem.ReadOnly, p.Filesystem.ReadOnly) {
		t.Errorf("read_only after a round trip = %v;\nwant %v\n(the printed policy says extends: %s and holds the profile's lists already, so reading it merges them twice)",
			back.Filesystem.ReadOnly, p.Filesystem.ReadOnly, p.Extends)
	}
}

func TestBindAndTmpfsForms(t *testing.T) {
	p := mustParse(t, `filesystem:
  read_only:
    - /a
    - path: /b
    - path: /c
      optional: true
    - {path: /d, optional: false}
  tmpfs:
    - /t1
    - path: /t2
    - path: /t3
      mode: "0700"
`)
	wantRO := []Bind{{Path: "/a"}, {Path: "/b"}, {Path: "/c", Optional: true}, {Path: "/d"}}
	wantT := []Tmpfs{{Path: "/t1"}, {Path: "/t2"}, {Path: "/t3", Mode: "0700"}}
	if !reflect.DeepEqual(p.Filesystem.ReadOnly, wantRO) || !reflect.DeepEqual(p.Filesystem.Tmpfs, wantT) {
		t.Errorf("got %+v %+v", p.Filesystem.ReadOnly, p.Filesystem.Tmpfs)
	}
	js, err := json.Marshal(p.Filesystem)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"read_only":["/a","/b",{"path":"/c","optional":true},"/d"],"tmpfs":["/t1","/t2",{"path":"/t3","mode":"0700"}]}`
	if string(js) != want {
		t.Errorf("marshal:\n got %s\nwant %s", js, want)
	}
	y, err := MarshalYAML(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "- /a\n") || !strings.Contains(string(y), "- /t1\n") {
		t.Errorf("YAML does not use the short form:\n%s", y)
	}

	// Direct unmarshalling.
	for _, tt := range []struct {
		in   string
		want Bind
		ok   bool
	}{
		{`"/x"`, Bind{Path: "/x"}, true},
		{`{"path":"/x","optional":true}`, Bind{Path: "/x", Optional: true}, true},
		{`{"path":"/x","opt":true}`, Bind{}, false},
		{`3`, Bind{}, false},
	} {
		var b Bind
		err := json.Unmarshal([]byte(tt.in), &b)
		if (err == nil) != tt.ok || (tt.ok && b != tt.want) {
			t.Errorf("Bind from %s = %+v, %v; want %+v (ok %v)", tt.in, b, err, tt.want, tt.ok)
		}
	}
	for _, tt := range []struct {
		in   string
		want Tmpfs
		ok   bool
	}{
		{`"/x"`, Tmpfs{Path: "/x"}, true},
		{`{"path":"/x","mode":"1777"}`, Tmpfs{Path: "/x", Mode: "1777"}, true},
		{`{"path":"/x","size":"1G"}`, Tmpfs{Path: "/x", Size: "1G"}, true},
		{`{"path":"/x","nr_inodes":"1"}`, Tmpfs{}, false},
		{`[]`, Tmpfs{}, false},
	} {
		var m Tmpfs
		err := json.Unmarshal([]byte(tt.in), &m)
		if (err == nil) != tt.ok || (tt.ok && m != tt.want) {
			t.Errorf("Tmpfs from %s = %+v, %v; want %+v (ok %v)", tt.in, m, err, tt.want, tt.ok)
		}
	}
}

func TestBuiltinProfilesRoundTrip(t *testing.T) {
	if got := Profiles(); !reflect.DeepEqual(got, []string{"agent", "build", "strict"}) {
		t.Errorf("Profiles() = %q", got)
	}
	if _, ok := Builtin("nope"); ok {
		t.Error("Builtin(nope) found something")
	}
	for _, name := range Profiles() {
		t.Run(name, func(t *testing.T) {
			p, ok := Builtin(name)
			if !ok {
				t.Fatal("not found")
			}
			if err := p.validate(); err != nil {
				t.Fatalf("the built-in profile does not validate: %v", err)
			}
			// A profile's own limits are defaults, applied where the host allows; they
			// do not travel in its YAML (a file's limits are required).
			p.defaults = nil
			y, err := MarshalYAML(p)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(y, "built-in "+name)
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			if !reflect.DeepEqual(back, p) {
				t.Errorf("YAML round trip:\n got %+v\nwant %+v\n%s", back, p, y)
			}
			js, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if back, err = Parse(js, name+".json"); err != nil || !reflect.DeepEqual(back, p) {
				t.Errorf("JSON round trip: %v\n got %+v\nwant %+v", err, back, p)
			}
			// Each call gives a fresh copy.
			p.Filesystem.ReadOnly[0].Path = "/changed"
			p.Filesystem.Masked[0] = "/changed"
			if q, _ := Builtin(name); q.Filesystem.ReadOnly[0].Path == "/changed" || q.Filesystem.Masked[0] == "/changed" {
				t.Error("Builtin returns shared slices")
			}
		})
	}
}

func TestStrictProfile(t *testing.T) {
	p, _ := Builtin("strict")
	ro := map[string]Bind{}
	for _, b := range p.Filesystem.ReadOnly {
		ro[b.Path] = b
		if b.Path == "/etc" || (strings.HasPrefix(b.Path, "/etc/") && !b.Optional) {
			t.Errorf("strict binds %+v", b)
		}
	}
	for _, want := range []string{"/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/resolv.conf", "/etc/ssl/certs", "/etc/passwd", "/etc/hosts"} {
		if b, ok := ro[want]; !ok || !b.Optional {
			t.Errorf("strict lacks the optional bind %s", want)
		}
	}
	if b, ok := ro["/usr"]; !ok || b.Optional {
		t.Error("strict does not require /usr")
	}
	if allowed(p.Network.AllowHost) || allowed(p.Filesystem.AllowExtraReadWrite) || allowed(p.Environment.AllowExtra) {
		t.Errorf("strict allows host network %v, --rw %v, --env %v",
			allowed(p.Network.AllowHost), allowed(p.Filesystem.AllowExtraReadWrite), allowed(p.Environment.AllowExtra))
	}
	if p.Network.Mode != NetNone || p.Filesystem.Git != GitReadOnly || !slices.Contains(p.Filesystem.Protected, ".git") {
		t.Errorf("strict: network %q, git %q, protected %q", p.Network.Mode, p.Filesystem.Git, p.Filesystem.Protected)
	}
	for _, s := range []string{"/etc/shadow", "/etc/gshadow", "/etc/ssh/*_key", "/etc/sudoers*", "/etc/ssl/private"} {
		if !slices.Contains(p.Filesystem.Masked, s) {
			t.Errorf("strict does not mask %s", s)
		}
	}

	// Compiled: no bind of /etc itself; the loader cache bound when the host has it.
	ws := canonTempDir(t)
	s := mustCompile(t, Options{Policy: p, Workspace: ws}, fakeHost(ws))
	if _, m := findMount(s, "/etc"); m != nil {
		t.Errorf("strict binds /etc: %+v", *m)
	}
	if c, err := filepath.EvalSymlinks("/etc/ld.so.cache"); err == nil {
		if _, m := findMount(s, c); m == nil || !slices.Contains(m.Options, "ro") {
			t.Errorf("strict does not bind %s read-only", c)
		}
	}
	for _, o := range []Options{{Net: NetHost}, {ReadWrite: []string{ws}}, {Env: []string{"A=1"}}, {PassEnv: []string{"A"}}} {
		o.Policy, o.Workspace, o.Args = p, ws, []string{"true"}
		if _, err := Compile(o, fakeHost(ws)); err == nil {
			t.Errorf("strict accepted %+v", o)
		}
	}
}

func TestAgentAndBuildProfiles(t *testing.T) {
	agent, _ := Builtin("agent")
	if Load, _ := Load(""); !reflect.DeepEqual(Load, agent) {
		t.Error("the default profile is not agent")
	}
	if !slices.Contains(agent.Filesystem.ReadOnly, Bind{Path: "/etc"}) || !slices.Contains(agent.Filesystem.ReadOnly, Bind{Path: "/usr"}) {
		t.Errorf("agent read_only = %v", agent.Filesystem.ReadOnly)
	}
	if !allowed(agent.Network.AllowHost) || !allowed(agent.Filesystem.AllowExtraReadWrite) || !allowed(agent.Environment.AllowExtra) {
		t.Error("agent forbids a flag")
	}
	build, _ := Builtin("build")
	for _, b := range build.Filesystem.ReadOnly {
		if strings.Contains(b.Path, "${home}") && !b.Optional {
			t.Errorf("build requires %s: a home without it could not run", b.Path)
		}
	}
	if build.Environment.Offline["GOPROXY"] != "off" || build.Environment.Set["GOPROXY"] != "" {
		t.Errorf("build GOPROXY = set %q, offline %q; want offline only", build.Environment.Set["GOPROXY"], build.Environment.Offline["GOPROXY"])
	}
	// build compiles on a host that has none of the toolchains.
	ws := canonTempDir(t)
	mustCompile(t, Options{Policy: build, Workspace: ws}, fakeHost(ws))
}

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = error
	}{
		{"", "0s"},
		{"0", "0s"},
		{"30s", "30s"},
		{"5m", "5m0s"},
		{"1.5", "1.5s"},
		{"90", "1m30s"},
		{"1h2m3s", "1h2m3s"},
		{"soon", ""},
		{"-1", ""},
		{"-5s", ""},
		{"NaN", ""},
		{"Inf", ""},
		{"1e300", ""},
		{"1e-12", ""},
		{"10d", ""},
	}
	for _, tt := range tests {
		d, err := ParseTimeout(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseTimeout(%q) = %v; want an error", tt.in, d)
		case tt.want != "" && err != nil:
			t.Errorf("ParseTimeout(%q): %v", tt.in, err)
		case tt.want != "" && d.String() != tt.want:
			t.Errorf("ParseTimeout(%q) = %v; want %s", tt.in, d, tt.want)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"workspace": "/w", "home": "/h", "uid": "7"}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/plain", "/plain", true},
		{"${workspace}/a", "/w/a", true},
		{"${home}/${uid}/${workspace}", "/h/7//w", true},
		{"~", "/h", true},
		{"~/x", "/h/x", true},
		{"~alice/x", "~alice/x", true},
		{"/a/~/b", "/a/~/b", true},
		{"$HOME/x", "$HOME/x", true},
		{"${}", "", false},
		{"${HOME}", "", false},
		{"${home", "", false},
		{"${home}${", "", false},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, vars)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestParseControlCharacters: what Parse accepts prints as YAML (gosbx policy show): a
// string with a C1 control character (U+0080-U+009F), which the YAML printer cannot
// write, is refused with the field named, or printed some other way.
func TestParseControlCharacters(t *testing.T) {
	for _, src := range []string{
		"description: \"\\x80\"\n",
		"environment:\n  set:\n    A: \"x\\u0085y\"\n",
		"{\"process\": {\"cwd\": \"/a\\u009fb\"}}",
	} {
		p, err := Parse([]byte(src), "c1.yaml")
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) || fe.Field == "" {
				t.Errorf("Parse(%q): %v; want a FileError naming the field", src, err)
			}
			continue
		}
		if out, err := MarshalYAML(p); err != nil {
			t.Errorf("Parse(%q) accepted a policy that does not print as YAML: %v", src, err)
		} else if back, err := Parse(out, "printed.yaml"); err != nil || !reflect.DeepEqual(back, p) {
			t.Errorf("Parse(%q): printed and read back: %v, %+v", src, err, back)
		}
	}
}

// TestParseSyntaxErrorLine pins the line of each syntax error: go.yaml.in/yaml/v3
// reports a parser error at its 0-based line (and none on the first line), which Parse
// corrects; a scanner error (the tab) it reports 1-based already.
func TestParseSyntaxErrorLine(t *testing.T) {
	for _, tt := range []struct {
		src  string
		line int
	}{
		{"network:\n  mode: none\nfilesystem:\n  read_only: [/usr\n", 4},
		{"network:\n  mode: none\n allow_host: true\n", 3},
		{"network:\n\tmode: none\n", 2},
		{"{\n  \"network\": {\"mode\": \"none\"\n", 2},
		{"[a, b\n", 2}, // at the end of the input
		{"a: [b, c}\n", 1},
	} {
		_, err := Parse([]byte(tt.src), "bad.yaml")
		if fe := fileError(t, err, "bad.yaml"); fe.Line != tt.line {
			t.Errorf("Parse(%q): %q: line %d; want %d", tt.src, fe.Error(), fe.Line, tt.line)
		}
	}
}
