package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Without the host's network, socket(2) and socketpair(2) answer EAFNOSUPPORT for every
// family but the ones a network namespace confines (AF_VSOCK above all), whatever the
// profile, and before the policy's own rules; the confined families fall through to
// those rules.
func TestNoHostNetworkRules(t *testing.T) {
	allowSocketpair := Rule{Syscalls: []string{"socket", "socketpair"}, Action: "allow"}
	denyInet := Rule{Syscalls: []string{"socket"}, Action: "errno", Errno: "EACCES",
		Args: []Arg{{Index: 0, Op: "eq", Value: unix.AF_INET}}}
	for _, c := range []*Config{{}, {Profile: "none"}, {Rules: []Rule{allowSocketpair}}, {Rules: []Rule{denyInet}}} {
		with := *c
		with.Rules = append(NoHostNetworkRules(), c.Rules...)
		e := newEmulator(t, compileConfig(t, &with))
		eaf := retErrno(unix.EAFNOSUPPORT)
		for _, call := range []string{"socket", "socketpair"} {
			for fam, want := range map[uint64]uint32{
				unix.AF_VSOCK: eaf, unix.AF_BLUETOOTH: eaf, unix.AF_CAN: eaf, unix.AF_TIPC: eaf, unix.AF_XDP: eaf,
				unix.AF_ALG: eaf, unix.AF_RDS: eaf, unix.AF_KCM: eaf, unix.AF_QIPCRTR: eaf, unix.AF_NFC: eaf,
				unix.AF_UNSPEC: eaf, 46: eaf, 0xffffffff: eaf,
				unix.AF_VSOCK | 0x100000000: eaf, // high bits: the family the kernel reads
				unix.AF_UNIX:                retAllow, unix.AF_INET6: retAllow, unix.AF_NETLINK: retAllow, unix.AF_PACKET: retAllow,
			} {
				if got := e.call(t, call, fam, unix.SOCK_STREAM, 0); got != want {
					t.Errorf("%+v: %s(%d): %s, want %s", c, call, fam, actionName(got), actionName(want))
				}
			}
		}
		want := uint32(retAllow)
		if len(c.Rules) > 0 && c.Rules[0].Errno == "EACCES" {
			want = retErrno(unix.EACCES) // the policy's rule still decides a confined family
		}
		// with high bits set, the kernel makes an AF_INET socket: the same decision
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET | 0x100000000} {
			if got := e.call(t, "socket", fam, unix.SOCK_STREAM, 0); got != want {
				t.Errorf("%+v: socket(%#x): %s, want %s", c, fam, actionName(got), actionName(want))
			}
		}
	}
}

// socket(AF_NETLINK, *, NETLINK_USERSOCK) answers EPERM whatever the profile and the
// policy's rules after it, also with high bits set in family or protocol (the kernel
// reads both as int); other netlink protocols and other families fall through.
func TestNoUserNetlinkRules(t *testing.T) {
	allowAll := Rule{Syscalls: []string{"socket"}, Action: "allow"}
	for _, c := range []*Config{{}, {Profile: "none"}, {Rules: []Rule{allowAll}}} {
		with := *c
		with.Rules = append(NoUserNetlinkRules(), c.Rules...)
		e := newEmulator(t, compileConfig(t, &with))
		eperm := retErrno(unix.EPERM)
		for _, a := range []struct {
			fam, proto uint64
			want       uint32
		}{
			{unix.AF_NETLINK, unix.NETLINK_USERSOCK, eperm},
			{unix.AF_NETLINK | 0x100000000, unix.NETLINK_USERSOCK, eperm},
			{unix.AF_NETLINK, unix.NETLINK_USERSOCK | 0xff00000000, eperm},
			{unix.AF_NETLINK, unix.NETLINK_ROUTE, retAllow},
			{unix.AF_NETLINK, unix.NETLINK_GENERIC, retAllow},
			{unix.AF_NETLINK, unix.NETLINK_KOBJECT_UEVENT, retAllow},
			{unix.AF_INET, unix.NETLINK_USERSOCK, retAllow}, // protocol 2 of AF_INET is IGMP, not netlink
		} {
			if got := e.call(t, "socket", a.fam, unix.SOCK_RAW, a.proto); got != a.want {
				t.Errorf("%+v: socket(%#x, SOCK_RAW, %#x): %s, want %s", c, a.fam, a.proto, actionName(got), actionName(a.want))
			}
		}
	}
}
