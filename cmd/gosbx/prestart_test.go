package main

import (
	"reflect"
	"testing"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/policy"
)

// The flags' guess of the init's clone parameters is what policy.Build gives for the
// built-in profiles, for a root caller and an unprivileged one: otherwise every launch
// would clone its init twice (correct, but slower than without the prestart).
func TestCloneGuessMatchesBuild(t *testing.T) {
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	user := host
	user.UID, user.GID, user.Root = 1000, 1000, false
	root := host
	root.UID, root.GID, root.Root = 0, 0, true
	uid := uint32(7)
	for _, h := range []policy.Host{root, user} {
		for _, o := range []policy.Options{
			{},
			{Net: policy.NetHost},
			{Net: policy.NetNone, Resources: policy.Resources{Memory: "64M"}},
			{UID: &uid, GID: &uid},
			{IDRange: &policy.IDRange{Base: 1_500_000_000, Count: 10}},
			{Policy: mustProfile(t, "strict")},
			{Policy: mustProfile(t, "build")},
		} {
			o.Workspace, o.Args = t.TempDir(), []string{"/bin/true"}
			h.Cwd = o.Workspace
			eff, err := policy.Effective(o, h)
			if err != nil {
				t.Fatalf("uid %d, %+v: %v", h.UID, o, err)
			}
			spec, err := policy.Build(eff, o.Args, h)
			if err != nil {
				t.Fatalf("uid %d, %+v: %v", h.UID, o, err)
			}
			g := cloneGuess(o, h)
			if g == nil {
				t.Fatalf("uid %d, %+v: no guess", h.UID, o)
			}
			if !reflect.DeepEqual(g.Linux.Namespaces, spec.Linux.Namespaces) || !reflect.DeepEqual(g.Linux.UIDMappings, spec.Linux.UIDMappings) ||
				!reflect.DeepEqual(g.Linux.GIDMappings, spec.Linux.GIDMappings) || (g.RootID == nil) != (spec.RootID == nil) ||
				(g.RootID != nil && g.RootID.Range != spec.RootID.Range) {
				t.Errorf("uid %d, %+v: guess %+v %+v, built %+v %+v", h.UID, o, g.Linux, g.RootID, spec.Linux.Namespaces, spec.RootID)
			}
		}
	}
	for _, o := range []policy.Options{{Net: policy.NetProxy}, {AllowHosts: []string{"example.com"}}, {Publish: []string{"8000:8000"}},
		{HostPorts: []uint16{5432}}, {Resources: policy.Resources{CPUs: 1}}} {
		if cloneGuess(o, root) != nil {
			t.Errorf("%+v: a guess for a clone a prestarted init cannot have", o)
		}
	}
}

// On a cgroup v2 host a resource flag makes a group the init is cloned into
// (CLONE_INTO_CGROUP), which a prestarted init never is: no guess then. On v1 the
// group is joined after the clone, and the guess stands.
func TestCloneGuessCgroupV2(t *testing.T) {
	host, err := policy.CurrentHost()
	if err != nil {
		t.Fatal(err)
	}
	old := cgroupMode
	t.Cleanup(func() { cgroupMode = old })
	for _, mode := range []cgroup.Kind{cgroup.V1, cgroup.V2} {
		cgroupMode = func() cgroup.Kind { return mode }
		for _, r := range []policy.Resources{{Memory: "64M"}, {MemorySwap: "0"}, {Pids: 100}} {
			if g := cloneGuess(policy.Options{Resources: r}, host); (g == nil) != (mode == cgroup.V2) {
				t.Errorf("%s, %+v: guess %v", mode, r, g != nil)
			}
		}
		if cloneGuess(policy.Options{}, host) == nil {
			t.Errorf("%s: no guess without a resource flag", mode)
		}
	}
}

func mustProfile(t *testing.T, name string) *policy.Policy {
	t.Helper()
	p, ok := policy.Builtin(name)
	if !ok {
		t.Fatalf("no profile %s", name)
	}
	return p
}
