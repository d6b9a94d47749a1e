package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
	"github.com/gosbx/gosbx/policy"
)

// TestStartDataConfig: the supervisor gets the session's config back whole (deeply
// equal, but the filter's source, which is not sent) from config.Encode and the
// launcher's fields: a root caller's with a memory limit, one with egress and a port
// forward, an unprivileged caller's; the caller's config is left as it was, and the
// filter's source is not in the start data.
func TestStartDataConfig(t *testing.T) {
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	nobody := host
	nobody.UID, nobody.GID, nobody.Root = 65534, 65534, false
	for _, tc := range []struct {
		name string
		o    policy.Options
		h    policy.Host
	}{
		{"memory", policy.Options{Resources: policy.Resources{Memory: "64M"}}, host},
		{"memory, swap, pids, cpus", policy.Options{Resources: policy.Resources{Memory: "64M", MemorySwap: "-1", Pids: 100, CPUs: 0.5}}, host},
		{"egress", policy.Options{Net: policy.NetProxy, AllowHosts: []string{"pypi.org"}, Publish: []string{"8080:8000"}}, host},
		{"nobody, host network", policy.Options{Net: policy.NetHost}, nobody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Workspace, tc.o.Args = t.TempDir(), []string{"/bin/sh"}
			cfg, err := policy.Compile(tc.o, tc.h)
			if err != nil {
				t.Fatal(err)
			}
			before, _ := json.Marshal(cfg)
			sd := &startData{Name: "s", Config: cfg, Policy: "p", NotFound: policy.NotFoundContext{Workspace: tc.o.Workspace, Home: "/home/u",
				Host: policy.Host{UID: 1000, Homes: []string{"/home/u"}, Environ: []string{"PATH=/usr/bin"}}}}
			w, err := startWire(sd)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(cfg); !bytes.Equal(before, after) || sd.Init != nil || sd.Launch != nil {
				t.Fatal("the caller's start data changed")
			}
			if bytes.Contains(b, []byte(`"seccomp"`)) || bytes.Contains(b, []byte("SCMP_ACT")) {
				t.Fatalf("the filter's source is in the start data: %.300s", b)
			}
			got, err := readStartData(bytes.NewReader(framed(b)))
			if err != nil {
				t.Fatal(err)
			}
			want := *cfg
			want.Guard = nil // not carried: the supervisor sets its own (policy.NewSessionGuard)
			l := *cfg.Linux
			l.Seccomp = nil
			want.Linux = &l
			if len(l.Filter) == 0 || !reflect.DeepEqual(got.Config, &want) {
				t.Fatalf("the supervisor's config differs from the caller's:\n%+v\nwant\n%+v", got.Config, &want)
			}
			if got.Name != "s" || got.Policy != "p" {
				t.Fatalf("start data %+v", got)
			}
			if nf := lazyNotFound(got.NotFoundJSON)(); !reflect.DeepEqual(nf, sd.NotFound) {
				t.Fatalf("the not-found context differs: %+v, want %+v", nf, sd.NotFound)
			}
			if err := got.Config.Validate(); err != nil {
				t.Fatalf("the supervisor's config: %v", err)
			}
		})
	}
	if _, err := readStartData(bytes.NewReader(framed([]byte(`{"Name":"s"}`)))); err == nil {
		t.Fatal("start data without a config accepted")
	}
	if _, err := readStartData(bytes.NewReader(framed([]byte(`{"Name":"s"}`))[:10])); err == nil {
		t.Fatal("short start data accepted")
	}
}

// TestStartDataResources: resources beyond those resourceLimits carries stop the
// start (never dropped on the way to the supervisor).
func TestStartDataResources(t *testing.T) {
	shares := uint64(512)
	limit := int64(1 << 26)
	for _, r := range []*specs.LinuxResources{
		{CPU: &specs.LinuxCPU{Shares: &shares}},
		{Memory: &specs.LinuxMemory{Limit: &limit, Reservation: &limit}},
		{Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}},
	} {
		cfg := &config.Config{Linux: &config.Linux{Resources: r}}
		if _, err := startWire(&startData{Name: "s", Config: cfg}); err == nil {
			t.Errorf("resources %+v sent without error", r)
		}
	}
	cfg := &config.Config{Linux: &config.Linux{Resources: &specs.LinuxResources{Memory: &specs.LinuxMemory{}, Pids: &specs.LinuxPids{}}}}
	if _, err := startWire(&startData{Name: "s", Config: cfg}); err != nil {
		t.Errorf("empty sections refused: %v", err)
	}
}

// TestStartDataFields: every field of config.Config is one config.Encode sends or one
// of launchFields (startWire); a new field fails here until it is placed, so that a
// session's supervisor does not lose it without a word.
func TestStartDataFields(t *testing.T) {
	encoded := []string{"Process", "Hostname", "Mounts", "Linux", "Symlinks", "Files", "ReadonlyOptional", "Cleanup"}
	var launch []string
	lt := reflect.TypeFor[launchFields]()
	for i := range lt.NumField() {
		if n := lt.Field(i).Name; n != "Resources" { // Linux.Resources
			launch = append(launch, n)
		}
	}
	ct := reflect.TypeFor[config.Config]()
	for i := range ct.NumField() {
		// Guard: the supervisor makes its own, from startData.Protected
		if n := ct.Field(i).Name; n != "Guard" && !slices.Contains(encoded, n) && !slices.Contains(launch, n) {
			t.Errorf("config.Config.%s is neither sent by config.Encode (as the test knows) nor in launchFields", n)
		}
	}
	lx := reflect.TypeFor[config.Linux]()
	for i := range lx.NumField() {
		switch n := lx.Field(i).Name; n {
		case "Resources", "Seccomp":
		case "UIDMappings", "GIDMappings", "Namespaces", "ReadonlyPaths", "MaskedPaths", "Filter":
		default:
			t.Errorf("config.Linux.%s: not known to be sent to a session's supervisor", n)
		}
	}
}
