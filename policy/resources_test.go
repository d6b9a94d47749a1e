package policy

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit/config"
)

const mib = int64(1) << 20

// limitsInfo is the config.Limits limits() returns.
func limitsInfo(t *testing.T, l config.Limits) config.Limits {
	t.Helper()
	return l
}

// rlimit finds one rlimit by type.
func rlimit(rl []specs.POSIXRlimit, typ string) (specs.POSIXRlimit, bool) {
	for _, r := range rl {
		if r.Type == typ {
			return r, true
		}
	}
	return specs.POSIXRlimit{}, false
}

func checkCore(t *testing.T, rl []specs.POSIXRlimit) {
	t.Helper()
	c, ok := rlimit(rl, "RLIMIT_CORE")
	if !ok || c.Hard != 0 || c.Soft != 0 {
		t.Errorf("RLIMIT_CORE = %+v (present %v); want 0/0 always", c, ok)
	}
}

func TestLimitsProfileDefaultsAreNotRequired(t *testing.T) {
	res, rl, ann, err := limits(nil, &Resources{Pids: defaultPids})
	if err != nil {
		t.Fatal(err)
	}
	checkCore(t, rl)
	if res == nil || res.Pids == nil || res.Pids.Limit == nil || *res.Pids.Limit != defaultPids {
		t.Fatalf("resources %+v: want the default pids limit %d", res, defaultPids)
	}
	if res.Memory != nil || res.CPU != nil {
		t.Errorf("memory %+v, cpu %+v: want none from a pids-only default", res.Memory, res.CPU)
	}
	info := limitsInfo(t, ann)
	if len(info.Required) != 0 || info.BestEffort {
		t.Errorf("limits %+v: a profile default must not be required", ann)
	}
}

func TestLimitsNothingAtAll(t *testing.T) {
	res, rl, ann, err := limits(nil, nil)
	if err != nil || res != nil || !reflect.ValueOf(ann).IsZero() {
		t.Fatalf("limits(nil, nil) = %+v, %+v, %v; want no resources", res, ann, err)
	}
	checkCore(t, rl)
	// rlimits only: no cgroup, but the rlimits are there
	res, rl, ann, err = limits(&Resources{NoFile: 64}, nil)
	if err != nil || res != nil || !reflect.ValueOf(ann).IsZero() {
		t.Fatalf("nofile only: %+v, %+v, %v; want no cgroup resources", res, ann, err)
	}
	checkCore(t, rl)
	if r, ok := rlimit(rl, "RLIMIT_NOFILE"); !ok || r.Hard != 64 || r.Soft != 64 {
		t.Errorf("RLIMIT_NOFILE %+v (present %v); want 64/64", r, ok)
	}
}

func TestLimitsRequiredOverDefaults(t *testing.T) {
	defaults := &Resources{Pids: defaultPids}
	tests := []struct {
		name     string
		req      *Resources
		required []string
		check    func(t *testing.T, r *specs.LinuxResources)
	}{
		{"pids", &Resources{Pids: 100}, []string{"pids"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.Pids.Limit != 100 {
				t.Errorf("pids %d; want 100 (the required value wins over the default)", *r.Pids.Limit)
			}
		}},
		{"memory, default swap 0", &Resources{Memory: "512M"}, []string{"memory"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.Memory.Limit != 512*mib || *r.Memory.Swap != *r.Memory.Limit {
				t.Errorf("memory %d swap %d; want 512MiB and swap (memory+swap) == limit", *r.Memory.Limit, *r.Memory.Swap)
			}
			if *r.Pids.Limit != defaultPids {
				t.Errorf("pids %d; want the default %d kept", *r.Pids.Limit, defaultPids)
			}
		}},
		{"memory, swap 0 explicit", &Resources{Memory: "2G", MemorySwap: "0"}, []string{"memory"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.Memory.Limit != 2048*mib || *r.Memory.Swap != 2048*mib {
				t.Errorf("memory %d swap %d; want 2GiB both", *r.Memory.Limit, *r.Memory.Swap)
			}
		}},
		{"memory, swap any", &Resources{Memory: "64M", MemorySwap: "-1"}, []string{"memory"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.Memory.Limit != 64*mib || *r.Memory.Swap != -1 {
				t.Errorf("memory %d swap %d; want 64MiB and -1", *r.Memory.Limit, *r.Memory.Swap)
			}
		}},
		{"memory, swap 1G", &Resources{Memory: "64M", MemorySwap: "1G"}, []string{"memory"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.Memory.Swap != 64*mib+1024*mib {
				t.Errorf("swap %d; want memory+swap = %d", *r.Memory.Swap, 64*mib+1024*mib)
			}
		}},
		{"cpus 0.5", &Resources{CPUs: 0.5}, []string{"cpu"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.CPU.Quota != 50000 || *r.CPU.Period != 100000 {
				t.Errorf("quota %d period %d; want 50000/100000", *r.CPU.Quota, *r.CPU.Period)
			}
		}},
		{"cpus 2", &Resources{CPUs: 2}, []string{"cpu"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.CPU.Quota != 200000 || *r.CPU.Period != 100000 {
				t.Errorf("quota %d period %d; want 200000/100000", *r.CPU.Quota, *r.CPU.Period)
			}
		}},
		{"all three", &Resources{Memory: "1G", Pids: 50, CPUs: 0.25}, []string{"memory", "pids", "cpu"}, func(t *testing.T, r *specs.LinuxResources) {
			if *r.CPU.Quota != 25000 || *r.Pids.Limit != 50 || *r.Memory.Limit != 1024*mib {
				t.Errorf("resources %+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, rl, ann, err := limits(tt.req, defaults)
			if err != nil {
				t.Fatal(err)
			}
			checkCore(t, rl)
			if res == nil {
				t.Fatal("no resources")
			}
			tt.check(t, res)
			info := limitsInfo(t, ann)
			got := slices.Clone(info.Required)
			slices.Sort(got)
			want := slices.Clone(tt.required)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("required %q; want %q (limits %+v)", got, want, ann)
			}
		})
	}
}

func TestLimitsCPUQuotaRounding(t *testing.T) {
	// 0.29 * 100000 is 28999.999… in float64: truncating gives a quota 1 µs short.
	for _, c := range []struct {
		cpus  float64
		quota int64
	}{{0.2, 20000}, {0.29, 29000}, {0.57, 57000}, {1.1, 110000}, {0.01, 1000}} {
		res, _, _, err := limits(&Resources{CPUs: c.cpus}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if *res.CPU.Quota != c.quota {
			t.Errorf("--cpus %v: quota %d; want %d", c.cpus, *res.CPU.Quota, c.quota)
		}
	}
}

func TestLimitsRlimits(t *testing.T) {
	_, rl, _, err := limits(&Resources{NoFile: 32, FSize: "1M"}, &Resources{Pids: defaultPids})
	if err != nil {
		t.Fatal(err)
	}
	checkCore(t, rl)
	if r, ok := rlimit(rl, "RLIMIT_NOFILE"); !ok || r.Hard != 32 || r.Soft != 32 {
		t.Errorf("RLIMIT_NOFILE %+v (present %v); want 32/32", r, ok)
	}
	if r, ok := rlimit(rl, "RLIMIT_FSIZE"); !ok || r.Hard != 1<<20 || r.Soft != 1<<20 {
		t.Errorf("RLIMIT_FSIZE %+v (present %v); want 1048576 both", r, ok)
	}
	// without them, only the core limit
	_, rl, _, _ = limits(&Resources{Memory: "1G"}, nil)
	if len(rl) != 1 {
		t.Errorf("rlimits %+v; want only RLIMIT_CORE", rl)
	}
}

func TestLimitsBestEffortAndParent(t *testing.T) {
	_, _, ann, err := limits(&Resources{Memory: "64M", Limits: "best-effort", CgroupParent: "/user.slice/x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	info := limitsInfo(t, ann)
	if !info.BestEffort || info.CgroupParent != "/user.slice/x" || !slices.Equal(info.Required, []string{"memory"}) {
		t.Errorf("limits %+v: want best_effort, the parent, and memory required", ann)
	}
}

func TestLimitsSwapWithoutMemory(t *testing.T) {
	_, _, _, err := limits(&Resources{MemorySwap: "1G"}, &Resources{Pids: defaultPids})
	var pe *Error
	if !errors.As(err, &pe) || pe.Field != "memory-swap" {
		t.Fatalf("err %v; want a *Error for memory-swap", err)
	}
}

// Compiled through Effective and Build, as gosbx exec does: flags (Options.Resources) and
// policy file fields are required; the agent profile's pids default is not.
func TestLimitsCompiled(t *testing.T) {
	ws := canonTempDir(t)
	compile := func(t *testing.T, p *Policy, r Resources) (*config.Config, config.Limits) {
		t.Helper()
		s, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}, Resources: r}, fakeHost(ws))
		if err != nil {
			t.Fatal(err)
		}
		return s, limitsInfo(t, s.Limits)
	}
	t.Run("agent, no flags", func(t *testing.T) {
		p, _ := Builtin("agent")
		s, info := compile(t, p, Resources{})
		if s.Linux.Resources == nil || s.Linux.Resources.Pids == nil || *s.Linux.Resources.Pids.Limit != defaultPids {
			t.Fatalf("resources %+v; want the agent's pids default", s.Linux.Resources)
		}
		if len(info.Required) != 0 {
			t.Errorf("required %q; the profile default must be best effort", info.Required)
		}
		checkCore(t, s.Process.Rlimits)
	})
	t.Run("agent, --pids", func(t *testing.T) {
		p, _ := Builtin("agent")
		s, info := compile(t, p, Resources{Pids: 64})
		if *s.Linux.Resources.Pids.Limit != 64 || !slices.Equal(info.Required, []string{"pids"}) {
			t.Errorf("pids %d required %q; want 64 and [pids]", *s.Linux.Resources.Pids.Limit, info.Required)
		}
	})
	t.Run("agent, --limits best-effort only", func(t *testing.T) {
		p, _ := Builtin("agent")
		_, info := compile(t, p, Resources{Limits: "best-effort"})
		if len(info.Required) != 0 || !info.BestEffort {
			t.Errorf("info %+v; want best effort, nothing required", info)
		}
	})
	t.Run("file field", func(t *testing.T) {
		p, err := Parse([]byte("extends: agent\nresources:\n  pids: 100\n  nofile: 50\n"), "limits.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s, info := compile(t, p, Resources{})
		if *s.Linux.Resources.Pids.Limit != 100 || !slices.Equal(info.Required, []string{"pids"}) {
			t.Errorf("pids %d required %q; want 100 and [pids]", *s.Linux.Resources.Pids.Limit, info.Required)
		}
		if r, ok := rlimit(s.Process.Rlimits, "RLIMIT_NOFILE"); !ok || r.Hard != 50 {
			t.Errorf("RLIMIT_NOFILE %+v; want 50", r)
		}
	})
	t.Run("file memory, flag cpus", func(t *testing.T) {
		p, err := Parse([]byte("extends: agent\nresources:\n  memory: 256M\n"), "limits.yaml")
		if err != nil {
			t.Fatal(err)
		}
		s, info := compile(t, p, Resources{CPUs: 1.5})
		r := s.Linux.Resources
		if *r.Memory.Limit != 256*mib || *r.Memory.Swap != 256*mib || *r.CPU.Quota != 150000 || *r.Pids.Limit != defaultPids {
			t.Errorf("resources %+v", r)
		}
		got := slices.Clone(info.Required)
		slices.Sort(got)
		if !slices.Equal(got, []string{"cpu", "memory"}) {
			t.Errorf("required %q; want cpu and memory (not the default pids)", got)
		}
	})
}

// Bad values are refused, naming the field, from flags and from a policy file.
func TestLimitsRefused(t *testing.T) {
	ws := canonTempDir(t)
	flags := []struct {
		r           Resources
		field, what string
	}{
		{Resources{Memory: "lots"}, "memory", "lots"},
		{Resources{Memory: "-5M"}, "memory", "-5M"},
		{Resources{FSize: "big"}, "fsize", "big"},
		{Resources{Memory: "64M", MemorySwap: "some"}, "memory_swap", "some"},
		{Resources{CPUs: -1}, "cpus", "-1"},
		{Resources{CPUs: 0.001}, "cpus", "0.001"},
		{Resources{Pids: -3}, "pids", "-3"},
		{Resources{Limits: "maybe"}, "limits", "maybe"},
		{Resources{MemorySwap: "1G"}, "memory-swap", "memory limit"},
		{Resources{CgroupParent: "a/../../b"}, "cgroup_parent", ".."},
	}
	for _, f := range flags {
		p, _ := Builtin("agent")
		_, err := Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}, Resources: f.r}, fakeHost(ws))
		if err == nil {
			t.Errorf("flags %+v accepted", f.r)
			continue
		}
		// a flag's error names the flag (--memory-swap), a file's the field (memory_swap)
		field := strings.ReplaceAll(f.field, "_", "-")
		if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), f.what) {
			t.Errorf("flags %+v: error %q does not name %s and %q", f.r, err, f.field, f.what)
		}
	}
	files := []struct{ yaml, field string }{
		{"memory: lots", "resources.memory"},
		{"cpus: -1", "resources.cpus"},
		{"pids: -3", "resources.pids"},
		{"limits: maybe", "resources.limits"},
		{"fsize: huge", "resources.fsize"},
	}
	for _, f := range files {
		_, err := Parse([]byte("extends: agent\nresources:\n  "+f.yaml+"\n"), "bad.yaml")
		var fe *FileError
		if !errors.As(err, &fe) || fe.Field != f.field {
			t.Errorf("file %q: error %v; want a *FileError for %s", f.yaml, err, f.field)
		}
	}
	// a swap limit without a memory limit, from a file
	p, err := Parse([]byte("extends: agent\nresources:\n  memory_swap: 1G\n"), "swap.yaml")
	if err == nil {
		_, err = Compile(Options{Policy: p, Workspace: ws, Args: []string{"true"}}, fakeHost(ws))
	}
	if err == nil || !strings.Contains(err.Error(), "swap") {
		t.Errorf("memory_swap without memory in a file: %v; want refused", err)
	}
}

// --cpus N is a quota and a placement on ceil(N) CPUs, and policy show says both.
func TestCPUPlacement(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want string
	}{{0, ""}, {0.5, "placed on 1 of"}, {1, "placed on 1 of"}, {1.5, "placed on 2 of"}} {
		got := (&Resources{CPUs: tc.cpus}).CPUPlacement()
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("CPUPlacement(%v) = %q, want it to say %q", tc.cpus, got, tc.want)
		}
	}
	if (*Resources)(nil).CPUPlacement() != "" {
		t.Error("no resources: a placement said")
	}
}
