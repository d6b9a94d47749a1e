package nsinit

import (
	"reflect"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/cgroup"
	"github.com/gosbx/gosbx/nsinit/config"
)

// fakeGroup is a cgroup.Group with directories only.
type fakeGroup struct {
	cgroup.Group
	dirs []cgroup.Dir
}

func (g fakeGroup) Dirs() []cgroup.Dir { return g.dirs }

// The group's directories are bound read-only below /sys, after /sys's own mounts and
// before what follows; nothing without a /sys of the sandbox's own or without a group.
func TestWithCgroupMounts(t *testing.T) {
	base := &config.Config{Mounts: []specs.Mount{
		{Destination: "/proc", Type: "proc"},
		{Destination: "/sys", Type: "tmpfs"},
		{Destination: "/sys/devices/system/cpu", Type: "bind", Source: "/sys/devices/system/cpu"},
		{Destination: "/work", Type: "bind", Source: "/work"},
	}}
	ro := []string{"bind", "nosuid", "nodev", "noexec", "ro"}
	dests := func(c *config.Config) []string {
		var out []string
		for _, m := range c.Mounts {
			out = append(out, m.Destination)
		}
		return out
	}

	v1 := fakeGroup{dirs: []cgroup.Dir{{Controller: "memory", Path: "/sys/fs/cgroup/memory/u/gosbx-a1"}, {Controller: "pids", Path: "/sys/fs/cgroup/pids/gosbx-a1"}}}
	got := withCgroupMounts(base, v1)
	want := []string{"/proc", "/sys", "/sys/devices/system/cpu", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/work"}
	if !reflect.DeepEqual(dests(got), want) {
		t.Errorf("v1: mounts %v, want %v", dests(got), want)
	}
	if m := got.Mounts[3]; m.Type != "bind" || m.Source != "/sys/fs/cgroup/memory/u/gosbx-a1" || !reflect.DeepEqual(m.Options, ro) {
		t.Errorf("v1: the memory bind is %+v, want a read-only bind of the group's directory", m)
	}
	if len(base.Mounts) != 4 {
		t.Errorf("the config given was changed: %v", dests(base))
	}

	v2 := fakeGroup{dirs: []cgroup.Dir{{Path: "/sys/fs/cgroup/gosbx/gosbx-a1"}}}
	got = withCgroupMounts(base, v2)
	want = []string{"/proc", "/sys", "/sys/devices/system/cpu", "/sys/fs/cgroup", "/work"}
	if !reflect.DeepEqual(dests(got), want) || got.Mounts[3].Source != "/sys/fs/cgroup/gosbx/gosbx-a1" {
		t.Errorf("v2: mounts %v, want %v", got.Mounts, want)
	}

	if got := withCgroupMounts(base, nil); got != base {
		t.Errorf("no group: mounts %v, want the config unchanged", dests(got))
	}
	noSys := &config.Config{Mounts: []specs.Mount{{Destination: "/proc", Type: "proc"}}}
	if got := withCgroupMounts(noSys, v1); got != noSys {
		t.Errorf("no /sys: mounts %v, want the config unchanged", dests(got))
	}
}
