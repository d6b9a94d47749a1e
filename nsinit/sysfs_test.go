package nsinit

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

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

// With the commands' pids group's descriptors (cgroup/pids.go), a command's plan joins
// it first ("join commands cgroup": write "0" to its cgroup.procs), and no plan is made
// while its pids.current is at pids.max (EAGAIN, step "join commands cgroup"); "max"
// is no limit. Stand-in files play the group's.
func TestPlanJoinsCommandsCgroup(t *testing.T) {
	d := t.TempDir()
	open := func(name, content string, flags int) int {
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(p, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	procs, cur, max := open("cgroup.procs", "", unix.O_WRONLY), open("pids.current", "31\n", unix.O_RDWR), open("pids.max", "32\n", unix.O_RDWR)
	t.Cleanup(func() { commandsProcs, commandsCount = -1, [2]int{} })
	spec := &config.Config{CommandsCgroup: true}
	if rest := takeCommandsCgroup(spec, []int{7, procs, cur, max}); !reflect.DeepEqual(rest, []int{7}) || commandsProcs != procs {
		t.Fatalf("takeCommandsCgroup kept %v, procs %d", rest, commandsProcs)
	}
	plan := func() (*procPlan, error) {
		dir, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dir.Close() })
		return planProcess(stageSpec().Process, nil, dir, "/usr/bin/sh")
	}
	p, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	if p.steps[0] != "join commands cgroup" || p.ops[0].nr != unix.SYS_WRITE || p.ops[0].a[0] != uintptr(procs) || joinSelf[0] != '0' {
		t.Fatalf("first step %q %+v; want the write of \"0\" to the commands' cgroup.procs", p.steps[0], p.ops[0])
	}
	unix.Pwrite(cur, []byte("32\n"), 0)
	var se *stepError
	if _, err := plan(); !errors.As(err, &se) || se.step != "join commands cgroup" || !errors.Is(err, unix.EAGAIN) {
		t.Fatalf("plan with the group full: %v; want EAGAIN at join commands cgroup", err)
	}
	if err := unix.Ftruncate(max, 0); err != nil {
		t.Fatal(err)
	}
	unix.Pwrite(max, []byte("max\n"), 0)
	if _, err := plan(); err != nil {
		t.Fatalf("plan with pids.max \"max\": %v", err)
	}
}
