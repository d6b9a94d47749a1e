package policy

import (
	"errors"
	"testing"
)

// A bad seccomp rule is reported at its own line and index (seccomp.rules[i]), not at
// the seccomp: section's line: an unknown call, a condition no filter can express, a
// value the argument cannot hold, an argument the call does not have.
func TestSeccompRuleErrorLine(t *testing.T) {
	for _, tc := range []struct{ name, rule string }{
		{"unknown call", "    - syscalls: [nosuchcall]\n      action: errno\n      errno: EPERM\n"},
		{"masked_eq never holds", "    - syscalls: [ioctl]\n      action: errno\n      errno: EPERM\n      args:\n        - {index: 1, op: masked_eq, mask: 1, value: 2}\n"},
		// a value with bits kill's int signal does not have (the kernel reads 32)
		{"value past the argument's width", "    - syscalls: [kill]\n      action: errno\n      args:\n        - {index: 1, op: eq, value: 4294967305}\n"},
		{"index past the call's arguments", "    - syscalls: [kill]\n      action: errno\n      args:\n        - {index: 2, op: eq, value: 9}\n"},
	} {
		data := "extends: agent\nseccomp:\n  rules:\n    - syscalls: [mount]\n      action: errno\n      errno: EPERM\n" + tc.rule
		_, err := Parse([]byte(data), "p.yaml")
		var fe *FileError
		if !errors.As(err, &fe) || fe.Field != "seccomp.rules[1]" || fe.Line != 7 {
			t.Errorf("%s: %v; want field seccomp.rules[1] at line 7", tc.name, err)
		}
	}
}
