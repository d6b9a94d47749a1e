package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// NoSetIDRules send the set-ID calls to the sandbox init (a user notification) and
// nothing else; NoSetIDDenyRules fail the same calls with EPERM, for a filter nobody
// answers; mkdir needs no rule (the kernel drops the bits); openat2 fails with ENOSYS.
func TestNoSetIDRules(t *testing.T) {
	compile := func(rules []Rule) Program {
		t.Helper()
		spec, err := (&Config{Rules: rules}).Spec()
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	notify, deny := compile(NoSetIDRules()), compile(NoSetIDDenyRules())
	if !notify.Notifies() || deny.Notifies() || compile(nil).Notifies() {
		t.Fatalf("Notifies: set-ID rules %v, deny rules %v, agent %v; want true, false, false",
			notify.Notifies(), deny.Notifies(), compile(nil).Notifies())
	}
	const suid, sgid = unix.S_ISUID, unix.S_ISGID
	const cwd = uint64(1<<64 - 100) // AT_FDCWD as the kernel passes it
	for _, c := range []struct {
		name      string
		args      []uint64
		setID     bool   // a call the rules take
		otherwise uint32 // the decision when not
	}{
		{"chmod", []uint64{0, 0o755 | suid}, true, 0},
		{"chmod", []uint64{0, 0o755}, false, unix.SECCOMP_RET_ALLOW},
		{"fchmod", []uint64{3, 0o755 | sgid}, true, 0},
		{"fchmodat", []uint64{cwd, 0, 0o6755}, true, 0},
		{"fchmodat2", []uint64{cwd, 0, 0o2755, 0x100}, true, 0},
		{"creat", []uint64{0, 0o4755}, true, 0},
		{"open", []uint64{0, unix.O_CREAT | unix.O_WRONLY, 0o4755}, true, 0},
		{"open", []uint64{0, unix.O_RDONLY, 0o4755}, false, unix.SECCOMP_RET_ALLOW}, // mode not read
		{"openat", []uint64{cwd, 0, unix.O_TMPFILE | unix.O_RDWR, 0o2755}, true, 0},
		{"openat", []uint64{cwd, 0, unix.O_CREAT, 0o644}, false, unix.SECCOMP_RET_ALLOW},
		{"mknodat", []uint64{cwd, 0, unix.S_IFREG | 0o4755, 0}, true, 0},
		{"mkdir", []uint64{0, 0o2775}, false, unix.SECCOMP_RET_ALLOW},
		{"openat2", []uint64{cwd, 0, 0, 24}, false, unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
	} {
		n, d := newEmulator(t, notify).call(t, c.name, c.args...), newEmulator(t, deny).call(t, c.name, c.args...)
		wantN, wantD := c.otherwise, c.otherwise
		if c.setID {
			wantN, wantD = unix.SECCOMP_RET_USER_NOTIF, unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)
		}
		if n != wantN || d != wantD {
			t.Errorf("%s %#o: %s / %s, want %s / %s", c.name, c.args, actionName(n), actionName(d), actionName(wantN), actionName(wantD))
		}
	}
}
