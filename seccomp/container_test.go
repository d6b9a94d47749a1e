package seccomp

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A base shaped like Docker's default: the needs come out of the capability-gated allow,
// the deny for containers without the capability and clone's flag condition, and one
// unconditional allow of them all is added last; the rest stays, in order.
func TestContainerProfile(t *testing.T) {
	base := `{"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
	 "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]}],
	 "syscalls": [
	  {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
	  {"names": ["bpf", "clone", "mount", "sethostname", "unshare"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_ADMIN"]}},
	  {"names": ["clone"], "action": "SCMP_ACT_ALLOW", "args": [{"index": 0, "value": 2114060288, "op": "SCMP_CMP_MASKED_EQ"}], "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
	  {"name": "keyctl", "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
	  {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"caps": ["CAP_SYS_ADMIN"]}}
	 ]}`
	out, err := ContainerProfile([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ContainerProfile([]byte(base))
	if string(out) != string(again) || !strings.HasSuffix(string(out), "}\n") {
		t.Errorf("output not deterministic or not newline-terminated")
	}
	var p containerProfile
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet == nil || *p.DefaultErrnoRet != 1 || !strings.Contains(string(p.ArchMap), "SCMP_ARCH_X86_64") {
		t.Errorf("the base's defaults were not kept: %+v", p)
	}
	var names [][]string
	for _, r := range p.Syscalls {
		names = append(names, r.Names)
	}
	want := [][]string{{"read", "write"}, {"bpf"}, {"clone3"}}
	for i, w := range want {
		if i >= len(names) || !slices.Equal(names[i], w) {
			t.Errorf("rule %d: names %v, want %v (all: %v)", i, names, w, names)
		}
	}
	last := p.Syscalls[len(p.Syscalls)-1]
	if len(p.Syscalls) != len(want)+1 || last.Action != "SCMP_ACT_ALLOW" || len(last.Args) != 0 || len(last.Includes) != 0 || len(last.Excludes) != 0 {
		t.Fatalf("want one unconditional allow last: %+v", p.Syscalls)
	}
	for _, n := range ContainerNeeds() {
		if !slices.Contains(last.Names, n.Name) || n.Why == "" {
			t.Errorf("need %s missing from the allow rule (or without a why)", n.Name)
		}
	}
	if p.Syscalls[1].Includes == nil || !strings.Contains(string(p.Syscalls[1].Includes), "CAP_SYS_ADMIN") {
		t.Errorf("bpf lost its capability condition: %+v", p.Syscalls[1])
	}
	for _, bad := range []string{`{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [], "surprise": 1}`, `{"syscalls": []}`, `not json`} {
		if _, err := ContainerProfile([]byte(bad)); err == nil {
			t.Errorf("ContainerProfile(%s) succeeded", bad)
		}
	}
}
