package seccomp

// noChange is the owner argument of chown(2) that leaves that id as it is: (uid_t)-1.
const noChange = 0xffffffff

// ForeignOwnerRules answer, with success and no effect, every chown(2), fchown(2),
// lchown(2) and fchownat(2) that names an owner or group other than uid and gid (the
// command's ids inside the sandbox, the only ones its user namespace maps) or -1 (no
// change). The kernel would fail them with EINVAL, as it cannot store an id the
// namespace does not map (user_namespaces(7)): `tar xf` of an archive of uid 1000's
// files, run as root inside, stops with exit 2 on every entry. Answered this way the
// file stays the sandbox user's (on the host: the sandbox's host id), never uid 1000's:
// no host id outside the map is ever written, as with the set-ID bits NoSetIDRules drop.
// A call with mapped ids (or -1) goes on to the kernel unchanged. The ids are compared
// on their low 32 bits, as the kernel reads a uid_t. See chown(2).
func ForeignOwnerRules(uid, gid uint32) []Rule {
	const why = "an owner the sandbox's user namespace does not map: success without effect (the file stays the sandbox user's) rather than EINVAL"
	id := func(i uint, v uint32) Arg { return Arg{Index: i, Op: "masked_eq", Mask: 0xffffffff, Value: uint64(v)} }
	var rules []Rule
	for _, c := range []struct {
		name     string
		uid, gid uint
	}{{"chown", 1, 2}, {"fchown", 1, 2}, {"lchown", 1, 2}, {"fchownat", 2, 3}} {
		for _, u := range []uint32{uid, noChange} {
			for _, g := range []uint32{gid, noChange} {
				rules = append(rules, Rule{Syscalls: []string{c.name}, Action: "allow", Args: []Arg{id(c.uid, u), id(c.gid, g)},
					Comment: "owner and group the namespace maps, or -1: the kernel decides"})
			}
		}
		rules = append(rules, Rule{Syscalls: []string{c.name}, Action: "errno", succeed: true, Comment: why})
	}
	return rules
}
