package main

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/gosbx/gosbx/nsinit"
	"github.com/gosbx/gosbx/nsinit/config"
)

func TestLimitNote(t *testing.T) {
	mem, pids := int64(64<<20), int64(20)
	spec := &config.Config{Linux: &config.Linux{Resources: &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &mem}, Pids: &specs.LinuxPids{Limit: &pids}}}}
	for _, c := range []struct {
		r       nsinit.Result
		session bool
		want    string
	}{
		{nsinit.Result{LimitHit: "memory", ExitCode: 137}, false, "gosbx: killed by the memory limit (64M): raise it with --memory"},
		{nsinit.Result{LimitHit: "memory", ExitCode: 1}, false, "gosbx: the memory limit (64M) killed a process of the sandbox (the OOM killer): raise it with --memory"},
		{nsinit.Result{LimitHit: "pids", ExitCode: 2}, false, "gosbx: the pids limit (20) refused a fork: raise it with --pids"},
		{nsinit.Result{ExitCode: 137}, false, ""},
		{nsinit.Result{LimitHit: "memory", ExitCode: 137}, true, "gosbx: killed by the session's memory limit (64M): raise it with --memory on session start"},
		{nsinit.Result{LimitHit: "pids", ExitCode: 2}, true, "gosbx: the session's pids limit (20) refused a fork: raise it with --pids on session start"},
	} {
		if got := limitNote(spec, &c.r, c.session); got != c.want {
			t.Errorf("%+v: %q, want %q", c.r, got, c.want)
		}
	}
	for n, want := range map[int64]string{64 << 20: "64M", 1 << 30: "1G", 1536 << 20: "1536M", 1000: "1000 bytes", 3 << 10: "3K"} {
		if got := limitSize(n); got != want {
			t.Errorf("limitSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCPUsNote(t *testing.T) {
	if got := cpusNoteFor(3, 2); got != "gosbx: warning: --cpus 3 is more than the 2 CPUs you may run on: the sandbox runs on those 2" {
		t.Errorf("3 on 2: %q", got)
	}
	for _, c := range [][2]float64{{2, 2}, {0.5, 2}, {1.5, 2}} {
		if got := cpusNoteFor(c[0], int(c[1])); got != "" {
			t.Errorf("%v on %v: %q", c[0], c[1], got)
		}
	}
}

func TestSessionFix(t *testing.T) {
	m := "blocked by gosbx policy: host evil.test:80 not in network.allow; to allow it, pass --allow-host evil.test:80 or add it to network.allow"
	if got := sessionFix(m); got != m+" (for a session, at its start: gosbx session stop NAME, then gosbx session start NAME with the flag)" {
		t.Errorf("%q", got)
	}
	if m := "blocked by gosbx policy: x is denied by rule network.deny y; remove the rule from network.deny to reach it"; sessionFix(m) != m {
		t.Errorf("a denial without the flag changed: %q", sessionFix(m))
	}
}
