package seccomp

import "golang.org/x/sys/unix"

// NetnsFamilies are the address families a sandbox without the host's network may make
// sockets of: AF_UNIX (its names are files, confined by the mount namespace; abstract
// names by the network namespace), and AF_INET, AF_INET6, AF_NETLINK and AF_PACKET,
// whose sockets reach only the devices, routes and kernel sockets of their own network
// namespace (socket(7), network_namespaces(7)). Every other family is refused: AF_VSOCK
// reaches the hypervisor and the host's vsock ports from any namespace (measured on
// Linux 6.18 in a Firecracker guest), and a family added to the kernel later is not
// known to be confined.
var NetnsFamilies = []uint64{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6, unix.AF_NETLINK, unix.AF_PACKET}

// NoHostNetworkRules refuse socket(2) and socketpair(2) with a domain other than
// NetnsFamilies, with EAFNOSUPPORT, the kernel's own answer for a family it lacks (so
// libraries fall back as they would there). The domain is compared as the kernel reads
// it, an int (its low 32 bits, argtype.go): a value with high bits set is the family
// in its low bits, refused or not as that family. A sandbox with a network namespace of its own takes these first,
// before the policy's rules; with the host's network (--net host) there is nothing to
// confine and they are left out. io_uring's socket operation is refused by the agent
// profile; socketcall(2) exists only in the i386 ABI, which the filter kills.
func NoHostNetworkRules() []Rule {
	var args []Arg
	for _, f := range NetnsFamilies {
		args = append(args, Arg{Index: 0, Op: "ne", Value: f})
	}
	const why = "no socket family a network namespace does not confine (AF_VSOCK reaches the host's vsock services): only AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET"
	return []Rule{
		{Syscalls: []string{"socket"}, Action: "errno", Errno: "EAFNOSUPPORT", Args: args, Comment: why},
		{Syscalls: []string{"socketpair"}, Action: "errno", Errno: "EAFNOSUPPORT", Args: args, Comment: why},
	}
}

// NoUserNetlinkRules refuse socket(2) of AF_NETLINK with protocol NETLINK_USERSOCK,
// with EPERM. It is the one netlink protocol the kernel registers with
// NL_CFG_F_NONROOT_SEND (net/netlink/af_netlink.c), so the one on which a process
// without CAP_NET_ADMIN unicasts or multicasts to other user sockets; their receive
// queues (about net.core.rmem_default, 208 KiB, a socket) are kernel memory no memory
// cgroup charges, so a sandbox holding many such sockets spends host memory --memory
// does not see (attack review 17: 2000 sockets queued 384 MB in a 64M sandbox). Checked
// on Linux 6.18 for protocols 0-31 as uid 65534: every other protocol answers EPERM to a
// send to a user port id or group; NETLINK_ROUTE (getifaddrs, ip), NETLINK_GENERIC and
// the rest stay allowed. Family and protocol are compared on their low 32 bits, as the
// kernel reads its int arguments, so a value with high bits set does not slip past.
// A sandbox takes these first, in every network mode, so no policy rule reopens them.
func NoUserNetlinkRules() []Rule {
	const low32 = 0xffffffff
	return []Rule{{Syscalls: []string{"socket"}, Action: "errno", Errno: "EPERM",
		Args: []Arg{
			{Index: 0, Op: "masked_eq", Mask: low32, Value: unix.AF_NETLINK},
			{Index: 2, Op: "masked_eq", Mask: low32, Value: unix.NETLINK_USERSOCK},
		},
		Comment: "no NETLINK_USERSOCK: its user-to-user queues are kernel memory no memory cgroup charges"}}
}
