package doctor

import (
	"strings"
	"testing"
)

// A container under a seccomp filter is told how to run it with gosbx's profile only
// while the sandbox launch has not passed under that filter (trial finding 8: a
// container already run with gosbx.json was told to switch to it).
func TestSettleSeccomp(t *testing.T) {
	f := Facts{Container: "podman", ContainerHow: "/run/.containerenv", Seccomp: "2"}
	for _, launch := range []Status{OK, Fail, Skip} {
		r := &Report{Checks: []Check{checkContainer(f), {Name: "sandbox launch", Status: launch}}}
		if !strings.Contains(r.Checks[0].Detail, "run it with gosbx's") {
			t.Fatalf("container check before the launch: %q; want the advice", r.Checks[0].Detail)
		}
		settleSeccomp(r)
		advised := strings.Contains(r.Checks[0].Detail, "run it with gosbx's")
		if advised == (launch == OK) {
			t.Errorf("launch %v: container detail %q (advice shown: %v)", launch, r.Checks[0].Detail, advised)
		}
		if launch == OK && !strings.Contains(r.Checks[0].Detail, "lets gosbx build its sandbox") {
			t.Errorf("launch ok: container detail %q", r.Checks[0].Detail)
		}
	}
}
