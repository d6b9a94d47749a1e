package nsinit

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/policy"
	"github.com/gosbx/gosbx/seccomp"
)

// What the init decodes is the spec it was given, field for field, but the cgroup
// resources (applied by the launcher) and the seccomp filter, which comes compiled.
func TestWireRoundTrip(t *testing.T) {
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	for _, profile := range policy.Profiles() {
		pol, err := policy.Load(profile)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := policy.Compile(policy.Options{Policy: pol, Workspace: t.TempDir(), Args: []string{"/bin/true"}}, host)
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		spec.Linux.MaskedPaths = append(spec.Linux.MaskedPaths, "/proc/x") // every carried field set
		spec.Linux.ReadonlyPaths = append(spec.Linux.ReadonlyPaths, "/proc/y")
		w, err := toWire(spec)
		if err != nil {
			t.Fatalf("%s: %v", profile, err)
		}
		b := encodeSpec(w)
		w2, err := decodeSpec(b)
		if err != nil {
			t.Fatal(err)
		}
		got := *w2.toSpec()
		want := *spec
		l := *spec.Linux
		l.Resources = nil // the launcher's (the cgroup)
		l.Seccomp = nil   // sent compiled, below
		want.Linux = &l
		prog, err := seccomp.Compile(spec.Linux.Seccomp)
		if err != nil {
			t.Fatal(err)
		}
		if filter, err := seccomp.ParseProgram(w2.Linux.Filter); err != nil || !slices.Equal(filter, prog) || len(prog) == 0 {
			t.Errorf("%s: the init would load %d instructions (%v), want the %d compiled from the spec", profile, len(filter), err, len(prog))
		}
		p := *spec.Process
		p.Capabilities = nil // checkProcess lets only empty ones through; every one is dropped
		want.Process = &p
		gotJSON, _ := json.Marshal(&got)
		wantJSON, _ := json.Marshal(&want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: the init would decode\n%s\nfor\n%s", profile, gotJSON, wantJSON)
		}
	}
}

// A field gosbx does not implement is refused, not silently dropped on the way to the
// init.
func TestWireRefusesUnimplemented(t *testing.T) {
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
		{"user not mapped", func(s *specs.Spec) { s.Process.User.UID = 0 }, "id mappings"},
		{"terminal", func(s *specs.Spec) { s.Process.Terminal = true }, "process.terminal"},
		{"mount idmap", func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/x", Type: "bind", Source: "/x",
				UIDMappings: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 1000, Size: 1}}})
		}, "uidMappings"},
		{"seccomp flags", func(s *specs.Spec) {
			s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Flags: []specs.LinuxSeccompFlag{"SECCOMP_FILTER_FLAG_LOG"}}
		}, "flags"},
		{"root path", func(s *specs.Spec) { s.Root = &specs.Root{Path: "/rootfs", Readonly: true} }, "root"},
		{"root writable", func(s *specs.Spec) { s.Root = &specs.Root{Path: "/"} }, "root"},
		{"cpuset", func(s *specs.Spec) { s.Linux.Resources = &specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0"}} }, "cpu fields"},
		{"devices cgroup", func(s *specs.Spec) {
			s.Linux.Resources = &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}}
		}, "linux.resources.devices"},
		{"memory reservation", func(s *specs.Spec) {
			r := int64(1 << 20)
			s.Linux.Resources = &specs.LinuxResources{Memory: &specs.LinuxMemory{Reservation: &r}}
		}, "memory fields"},
		{"seccomp listener", func(s *specs.Spec) {
			s.Linux.Seccomp = &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, ListenerPath: "/run/x.sock"}
		}, "listenerPath"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			tt.mutate(s)
			if err := checkSpec(s); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("checkSpec = %v; want an error naming %q", err, tt.want)
			}
			c := Command(s)
			err := c.Start()
			var se *SetupError
			if !errors.As(err, &se) || se.Step != "config" {
				t.Errorf("Start = %v; want a config SetupError", err)
			}
		})
	}
	if _, err := toWire(validSpec()); err != nil {
		t.Errorf("a plain spec: %v", err)
	}
}

// The process of a pooled command decodes to what was encoded, umask and rlimits
// included; an absent process stays absent.
func TestWireProcessRoundTrip(t *testing.T) {
	umask := uint32(0o027)
	p := &specs.Process{User: specs.User{UID: 1000, GID: 1001, Umask: &umask}, Args: []string{"sh", "-c", "echo \x00 ü"},
		Env: []string{"A=1", ""}, Cwd: "/w", NoNewPrivileges: true,
		Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1 << 62, Soft: 1024}}}
	w, err := decodeProcess(encodeProcess(toWireProcess(p)))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(w.toProcess())
	want, _ := json.Marshal(p)
	if string(got) != string(want) {
		t.Errorf("decoded\n%s\nwant\n%s", got, want)
	}
	if w, err := decodeProcess(encodeProcess(nil)); err != nil || w != nil {
		t.Errorf("an absent process decodes to %+v, %v", w, err)
	}
}

// A truncated, extended or corrupted encoding is an error (or, for a corruption that
// still parses, some spec), never a panic or an allocation the input cannot back.
func TestWireDecodeMalformed(t *testing.T) {
	spec := validSpec()
	spec.Annotations = map[string]string{"a": "1", "b": "2"}
	w, err := toWire(spec)
	if err != nil {
		t.Fatal(err)
	}
	b := encodeSpec(w)
	for n := 0; n < len(b); n++ {
		if _, err := decodeSpec(b[:n]); !errors.Is(err, errWire) {
			t.Fatalf("a prefix of %d of %d bytes: %v, want errWire", n, len(b), err)
		}
	}
	if _, err := decodeSpec(append(slices.Clone(b), 0)); !errors.Is(err, errWire) {
		t.Errorf("a trailing byte: %v, want errWire", err)
	}
	huge := append([]byte(wireMagic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
	if _, err := decodeSpec(huge); !errors.Is(err, errWire) {
		t.Errorf("a length of 2^63: %v, want errWire", err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		c := slices.Clone(b)
		for range 1 + rnd.IntN(4) {
			c[len(wireMagic)+rnd.IntN(len(c)-len(wireMagic))] = byte(rnd.Uint32())
		}
		decodeSpec(c) // must not panic
	}
}
