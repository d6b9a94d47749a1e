package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/cleanup"
	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// profileConfigs compiles every built-in profile, for a root caller (id range, set-ID
// rules) and another, in commit mode (cleanup entries) and with limits.
func profileConfigs(t *testing.T) map[string]*config.Config {
	t.Helper()
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*config.Config{}
	for _, profile := range policy.Profiles() {
		pol, err := policy.Load(profile)
		if err != nil {
			t.Fatal(err)
		}
		for _, uid := range []int{0, 1000} {
			h := host
			h.UID, h.GID = uid, uid
			ws := t.TempDir()
			h.Cwd = ws
			c, err := policy.Compile(policy.Options{Policy: pol, Workspace: ws, Args: []string{"/bin/true"},
				Resources: policy.Resources{Memory: "1G", Limits: "best-effort"}, Timeout: 90 * time.Second}, h)
			if err != nil {
				t.Fatalf("%s, uid %d: %v", profile, uid, err)
			}
			c.Cleanup = append(c.Cleanup, cleanup.Entry{Kind: cleanup.RemoveIfCreated, Path: ws + "/.git/commondir"},
				cleanup.Entry{Kind: cleanup.RemoveNewEntries, Path: ws + "/.git/modules", Keep: []string{"a"}},
				cleanup.Entry{Kind: cleanup.RemoveSpecialUnder, Path: ws + "/.git", Skip: []string{"objects/??"}},
				cleanup.Entry{Kind: cleanup.RestoreSymlink, Path: ws + "/sub/.git", Target: "../x.git"})
			c.MakeDirs = append(c.MakeDirs, ws+"/.git/hooks")
			c.Egress = &config.Egress{Allow: []string{"pypi.org", "*.example.com:8443"}, Deny: []string{"x.example.com"}}
			c.Publish = []config.Publish{{HostIP: "127.0.0.1", HostPort: 8000, Port: 8000}}
			c.HostPorts = []uint16{5432}
			out[profile+"/"+string(rune('0'+uid/1000))] = c
		}
	}
	return out
}

// The OCI export (ToSpec, JSON) and its import (FromSpec) give back the config: the
// extensions travel as annotations, the filter's source is compiled again to the same
// program.
func TestOCIRoundTrip(t *testing.T) {
	for name, c := range profileConfigs(t) {
		spec, err := config.ToSpec(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var read specs.Spec
		if err := json.Unmarshal(b, &read); err != nil {
			t.Fatal(err)
		}
		back, err := config.FromSpec(&read)
		if err != nil {
			t.Fatalf("%s: FromSpec of the export: %v", name, err)
		}
		got, _ := json.Marshal(back)
		want, _ := json.Marshal(c)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the export reads back as\n%s\nwant\n%s", name, got, want)
		}
		if c.RootID == nil && name[len(name)-1] == '0' {
			t.Errorf("%s: a root caller's config has no id range", name)
		}
	}
}

// A field gosbx does not implement is refused, not silently dropped on the way to the
// init; so is an org.gosbx annotation it does not know. Other annotations are ignored.
func TestFromSpecRefuses(t *testing.T) {
	var base *config.Config
	for _, c := range profileConfigs(t) {
		base = c
		break
	}
	valid := func() *specs.Spec {
		s, err := config.ToSpec(base)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(s)
		var fresh specs.Spec
		json.Unmarshal(b, &fresh)
		return &fresh
	}
	if _, err := config.FromSpec(valid()); err != nil {
		t.Fatalf("the export itself: %v", err)
	}
	other := valid()
	other.Annotations["org.opencontainers.image.title"] = "x"
	if _, err := config.FromSpec(other); err != nil {
		t.Errorf("a foreign annotation: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*specs.Spec)
		want   string
	}{
		{"sysctl", func(s *specs.Spec) { s.Linux.Sysctl = map[string]string{"net.ipv4.ip_forward": "1"} }, "linux.sysctl"},
		{"devices", func(s *specs.Spec) { s.Linux.Devices = []specs.LinuxDevice{{Path: "/dev/sda"}} }, "linux.devices"},
		{"hooks", func(s *specs.Spec) { s.Hooks = &specs.Hooks{} }, "hooks"},
		{"domainname", func(s *specs.Spec) { s.Domainname = "x" }, "domainname"},
		{"rootfs propagation", func(s *specs.Spec) { s.Linux.RootfsPropagation = "shared" }, "linux.rootfsPropagation"},
		{"windows", func(s *specs.Spec) { s.Windows = &specs.Windows{} }, "windows"},
		{"apparmor", func(s *specs.Spec) { s.Process.ApparmorProfile = "x" }, "process.apparmorProfile"},
		{"capabilities", func(s *specs.Spec) {
			s.Process.Capabilities = &specs.LinuxCapabilities{Effective: []string{"CAP_SYS_ADMIN"}}
		}, "capabilities"},
		{"additional gids", func(s *specs.Spec) { s.Process.User.AdditionalGids = []uint32{0} }, "additionalGids"},
		{"user not mapped", func(s *specs.Spec) { s.Process.User.UID = 4321 }, "id mappings"},
		{"terminal", func(s *specs.Spec) { s.Process.Terminal = true }, "process.terminal"},
		{"mount idmap", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/x", Type: "bind", Source: "/x",
				UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}})
		}, "uidMappings"},
		{"seccomp flags", func(s *specs.Spec) { s.Linux.Seccomp.Flags = []specs.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_LOG"} }, "flags"},
		{"seccomp listener", func(s *specs.Spec) { s.Linux.Seccomp.ListenerPath = "/run/x.sock" }, "listenerPath"},
		{"seccomp foreign arch", func(s *specs.Spec) { s.Linux.Seccomp.Architectures = []specs.Arch{specs.ArchX86} }, "linux.seccomp"},
		{"root path", func(s *specs.Spec) { s.Root = &specs.Root{Path: "/rootfs", Readonly: true} }, "root"},
		{"root writable", func(s *specs.Spec) { s.Root = &specs.Root{Path: "/"} }, "root"},
		{"cpuset", func(s *specs.Spec) { s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0"}} }, "cpu fields"},
		{"unknown gosbx annotation", func(s *specs.Spec) { s.Annotations["org.gosbx.absent-before"] = "[]" }, "org.gosbx.absent-before"},
		{"bad symlinks annotation", func(s *specs.Spec) { s.Annotations[config.SymlinksAnnotation] = "{" }, config.SymlinksAnnotation},
		{"bad id range", func(s *specs.Spec) { s.Annotations[config.IDRangeAnnotation] = `{"base":1,"count":1}` }, "below 65536"},
		{"bad cleanup path", func(s *specs.Spec) {
			s.Annotations[config.CleanupAnnotation] = `[{"kind":"remove-if-created","path":"relative"}]`
		}, "clean path"},
		{"bad cleanup kind", func(s *specs.Spec) {
			s.Annotations[config.CleanupAnnotation] = `[{"kind":"remove","path":"/x"}]`
		}, "unknown kind"},
		{"bad directory to make", func(s *specs.Spec) { s.Annotations[config.MakeDirsAnnotation] = `["x"]` }, "canonical"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.mutate(s)
			if _, err := config.FromSpec(s); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromSpec = %v; want an error naming %q", err, tt.want)
			}
		})
	}
}

// No annotation reaches the init: what is encoded for it is the typed config alone,
// the same whatever annotations the spec it came from had.
func TestNoAnnotationsOnTheWire(t *testing.T) {
	for name, c := range profileConfigs(t) {
		enc := config.Encode(c)
		if bytes.Contains(enc, []byte("org.gosbx.")) {
			t.Errorf("%s: an annotation key in the encoding", name)
		}
		spec, _ := config.ToSpec(c)
		spec.Annotations["org.example.other"] = "x"
		back, err := config.FromSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(config.Encode(back), enc) {
			t.Errorf("%s: another annotation changed the encoding", name)
		}
		if !reflect.DeepEqual(back.Cleanup, c.Cleanup) {
			t.Errorf("%s: cleanup %+v, want %+v", name, back.Cleanup, c.Cleanup)
		}
	}
}

// ToSpec refuses an extension JSON cannot carry as it is.
func TestToSpecRefusesInvalidUTF8(t *testing.T) {
	for _, c := range profileConfigs(t) {
		c.Cleanup = []cleanup.Entry{{Kind: cleanup.RemoveNewEntries, Path: "/w/.git/modules", Keep: []string{"a\xff"}}}
		if _, err := config.ToSpec(c); err == nil || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("ToSpec = %v; want a refusal naming UTF-8", err)
		}
		return
	}
}

// TestFromSpecErrorsTyped: FromSpec's refusals are *SpecError naming the spec's field
// (new-user trial, item 11: they were plain strings).
func TestFromSpecErrorsTyped(t *testing.T) {
	for _, tc := range []struct {
		field string
		spec  *specs.Spec
	}{
		{"linux.sysctl", &specs.Spec{Linux: &specs.Linux{Sysctl: map[string]string{"net.ipv4.ip_forward": "1"}}}},
		{"hooks", &specs.Spec{Hooks: &specs.Hooks{}}},
		{"root", &specs.Spec{Root: &specs.Root{Path: "/srv/rootfs"}}},
		{"process.capabilities", &specs.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: []string{"CAP_SYS_ADMIN"}}}}},
		{"annotations.org.gosbx.nosuch", &specs.Spec{Annotations: map[string]string{"org.gosbx.nosuch": "1"}}},
	} {
		_, err := config.FromSpec(tc.spec)
		var se *config.SpecError
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("FromSpec of a spec with %s: %v (%T), want a *SpecError of field %s", tc.field, err, err, tc.field)
		}
	}
}
