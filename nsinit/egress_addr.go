package nsinit

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EgressLoopbackAddr is the second IPv4 address a sandbox with egress has on lo,
// 127.0.0.2/32, added by its init in its own network namespace. glibc's getaddrinfo
// with AI_ADDRCONFIG and AF_INET (getent ahostsv4, Python's
// getaddrinfo(..., AF_INET, flags=AI_ADDRCONFIG), many tools) returns no address
// unless the namespace has an IPv4 address other than 127.0.0.1 (check_pf.c skips
// exactly INADDR_LOOPBACK); with only lo's 127.0.0.1 an allowed name the DNS stub
// answers looked unresolvable. An address inside 127.0.0.0/8 is already local to lo
// (the kernel's local route for the /8): it adds no route, no interface and nothing
// reachable that was not (docs/decisions.md, "AI_ADDRCONFIG clients").
var EgressLoopbackAddr = [4]byte{127, 0, 0, 2}

// addLoopbackAddr adds EgressLoopbackAddr/32 to lo of the current network namespace
// with one rtnetlink RTM_NEWADDR request (rtnetlink(7)), scope host, and reads the
// kernel's acknowledgement. It needs CAP_NET_ADMIN in the namespace's owning user
// namespace. Errors name the step and the kernel's errno.
func addLoopbackAddr() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("add address to lo: socket(AF_NETLINK): %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	// an unknown ioctl of any socket reaches the device ioctls (sock_do_ioctl)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return fmt.Errorf("add address to lo: SIOCGIFINDEX lo: %w", err)
	}
	msg := newAddrRequest(ifr.Uint32(), EgressLoopbackAddr)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("add address to lo: RTM_NEWADDR: %w", err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return fmt.Errorf("add address to lo: read the acknowledgement: %w", err)
	}
	if err := netlinkAck(buf[:n]); err != nil {
		return fmt.Errorf("add address %d.%d.%d.%d/32 to lo: RTM_NEWADDR: %w", EgressLoopbackAddr[0], EgressLoopbackAddr[1], EgressLoopbackAddr[2], EgressLoopbackAddr[3], err)
	}
	return nil
}

// newAddrRequest is an RTM_NEWADDR message (struct nlmsghdr, struct ifaddrmsg,
// IFA_LOCAL and IFA_ADDRESS attributes) adding addr/32 to interface index, asking for
// an acknowledgement.
func newAddrRequest(index uint32, addr [4]byte) []byte {
	attr := func(b []byte, typ uint16, v [4]byte) []byte {
		b = binary.NativeEndian.AppendUint16(b, unix.SizeofRtAttr+4)
		b = binary.NativeEndian.AppendUint16(b, typ)
		return append(b, v[:]...)
	}
	b := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+unix.SizeofIfAddrmsg+2*(unix.SizeofRtAttr+4))
	b = append(b, unix.AF_INET, 32, 0, unix.RT_SCOPE_HOST)
	b = binary.NativeEndian.AppendUint32(b, index)
	b = attr(b, unix.IFA_LOCAL, addr)
	b = attr(b, unix.IFA_ADDRESS, addr)
	h := (*unix.NlMsghdr)(unsafe.Pointer(&b[0]))
	h.Len = uint32(len(b))
	h.Type = unix.RTM_NEWADDR
	h.Flags = unix.NLM_F_REQUEST | unix.NLM_F_ACK | unix.NLM_F_CREATE | unix.NLM_F_EXCL
	h.Seq = 1
	return b
}

// netlinkAck reads an NLMSG_ERROR acknowledgement: nil for error 0, else the errno.
func netlinkAck(b []byte) error {
	if len(b) < unix.SizeofNlMsghdr+4 {
		return fmt.Errorf("short netlink reply of %d bytes", len(b))
	}
	if typ := binary.NativeEndian.Uint16(b[4:]); typ != unix.NLMSG_ERROR {
		return fmt.Errorf("netlink reply of type %d, want NLMSG_ERROR", typ)
	}
	if e := int32(binary.NativeEndian.Uint32(b[unix.SizeofNlMsghdr:])); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}
