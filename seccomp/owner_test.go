package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The owner rules, through the compiled program: mapped ids and -1 reach the kernel,
// any other owner or group is answered 0 without the call; a policy cannot ask for 0.
func TestForeignOwnerRules(t *testing.T) {
	s, err := (&Config{Rules: ForeignOwnerRules(0, 0)}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	e := newEmulator(t, p)
	const m1 = 0xffffffff
	succeed := uint32(unix.SECCOMP_RET_ERRNO) // | 0
	for _, c := range []struct {
		name string
		args []uint64
		want uint32
	}{
		{"chown", []uint64{0, 0, 0}, retAllow},
		{"chown", []uint64{0, m1, m1}, retAllow},
		{"chown", []uint64{0, 0xffffffff_ffffffff, 0}, retAllow}, // -1 as a 64-bit register
		{"chown", []uint64{0, 1000, 1000}, succeed},
		{"chown", []uint64{0, 0, 1000}, succeed},
		{"chown", []uint64{0, m1, 1000}, succeed},
		{"lchown", []uint64{0, 1000, m1}, succeed},
		{"fchown", []uint64{3, 1000, 0}, succeed},
		{"fchown", []uint64{3, 0, m1}, retAllow},
		{"fchownat", []uint64{3, 0, 1000, 1000, 0}, succeed},
		{"fchownat", []uint64{3, 0, 0, 0, 0}, retAllow},
		{"fchownat", []uint64{3, 0, 1000, 0, 0}, succeed}, // the uid is argument 2, not 1
		{"getpid", nil, retAllow},
	} {
		if got := e.call(t, c.name, c.args...); got != c.want {
			t.Errorf("%s%v: %s, want %s", c.name, c.args, actionName(got), actionName(c.want))
		}
	}
	// ids other than 0 compare as given
	s, _ = (&Config{Rules: ForeignOwnerRules(1000, 100)}).Spec()
	p, err = Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	e = newEmulator(t, p)
	if got := e.call(t, "chown", 0, 1000, 100); got != retAllow {
		t.Errorf("chown to the mapped 1000:100: %s", actionName(got))
	}
	if got := e.call(t, "chown", 0, 0, 100); got != succeed {
		t.Errorf("chown to 0:100 with 1000:100 mapped: %s", actionName(got))
	}
	// A policy's rule has no way to the 0 answer: the errno name "0" is refused.
	if err := (&Config{Rules: []Rule{{Syscalls: []string{"setuid"}, Action: "errno", Errno: "0"}}}).Validate(); err == nil {
		t.Error(`a policy rule with errno "0" was accepted`)
	}
}
