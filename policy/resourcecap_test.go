package policy

import (
	"strings"
	"testing"
)

// TestResourceFlagsOnlyLower: a resource flag over a limit a policy file names (through
// extends, as the trial's file did) may lower it, never raise or lift it: 125's error
// names the flag and both values. A limit the policy does not name, and a built-in
// profile's default (agent's pids), are the flag's to set.
func TestResourceFlagsOnlyLower(t *testing.T) {
	ws := canonTempDir(t)
	file := "extends: agent\nresources:\n  memory: 1G\n  pids: 100\n  cpus: 1\n  nofile: 1024\n  fsize: 1M\n  cgroup_parent: user.slice/me\n"
	pol := func(t *testing.T, src string) *Policy {
		p, err := Parse([]byte(src), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, src string
		r         Resources
		want      string // "" accepted, else the message holds it
	}{
		{"memory raised", file, Resources{Memory: "2G"}, "memory: 2G is more than the policy's 1G (resources.memory): a flag may only lower it"},
		{"memory in bytes raised", file, Resources{Memory: "1073741825"}, "memory: 1073741825 is more than the policy's 1G"},
		{"pids raised", file, Resources{Pids: 5000}, "pids: 5000 is more than the policy's 100"},
		{"cpus raised", file, Resources{CPUs: 1.5}, "cpus: 1.5 is more than the policy's 1"},
		{"nofile raised", file, Resources{NoFile: 4096}, "nofile: 4096 is more than the policy's 1024"},
		{"fsize raised", file, Resources{FSize: "2M"}, "fsize: 2M is more than the policy's 1M"},
		{"memory lifted", file, Resources{Memory: "0"}, "memory: 0 (no limit) is more than the policy's 1G"},
		{"memory lifted in units", file, Resources{Memory: "0M"}, "memory: 0M (no limit) is more than the policy's 1G"},
		{"fsize lifted", file, Resources{FSize: "0"}, "fsize: 0 (no limit) is more than the policy's 1M"},
		{"under a policy without limit", "extends: agent\nresources: {memory: \"0\", fsize: \"0\"}\n", Resources{Memory: "2G", FSize: "0"}, ""},
		{"swap added", file, Resources{MemorySwap: "1G"}, "memory-swap: 1G is more than the policy's 0"},
		{"swap lifted", file, Resources{MemorySwap: "-1"}, "memory-swap: -1 is more than the policy's 0"},
		{"best-effort", file, Resources{Limits: "best-effort"}, "limits: best-effort is weaker"},
		{"other cgroup", file, Resources{CgroupParent: "other"}, "cgroup-parent: other is not under the policy's user.slice/me"},
		{"cgroup sibling prefix", file, Resources{CgroupParent: "user.slice/me2"}, "cgroup-parent: user.slice/me2 is not under"},
		{"all lowered", file, Resources{Memory: "512M", Pids: 50, CPUs: 0.5, NoFile: 64, FSize: "1024", CgroupParent: "user.slice/me/sub"}, ""},
		{"equal", file, Resources{Memory: "1024M", Pids: 100, CPUs: 1, Limits: "required"}, ""},
		{"swap within any", "extends: agent\nresources: {memory: 1G, memory_swap: \"-1\"}\n", Resources{MemorySwap: "2G"}, ""},
		{"unnamed limit", "extends: agent\nresources: {memory: 1G}\n", Resources{Pids: 100000, NoFile: 1 << 20}, ""},
		{"profile default", "extends: agent\n", Resources{Pids: 100000, Memory: "64G"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Effective(Options{Policy: pol(t, c.src), Workspace: ws, Resources: c.r}, fakeHost(ws))
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
			policyError(t, err, strings.SplitN(c.want, ":", 2)[0])
		})
	}
}
