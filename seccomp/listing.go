package seccomp

import (
	"fmt"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Listing is the filter of s for people: one line a rule, in the order the filter
// tries them (the first that matches decides), as "NAMES [if CONDITIONS]: ACTION",
// arguments named as in the calls' man pages (socket(2)'s domain, clone(2)'s flags,
// open(2)'s flags and mode, ioctl(2)'s request) and their values by their constants
// (AF_UNIX, CLONE_NEWUSER, O_CREAT, S_ISUID, TIOCSTI) where known; then the default
// action for every call no rule names. It fails as Compile does on an action it does
// not support.
func Listing(s *specs.LinuxSeccomp) (string, error) {
	var b strings.Builder
	if s == nil {
		return "no seccomp filter\n", nil
	}
	b.WriteString("# seccomp filter (seccomp(2)): x86_64 calls only; a call through the i386 or x32 ABI kills the process\n")
	b.WriteString("# rules in order, the first that matches decides; conditions joined by \"and\" must all hold\n")
	for i, sc := range s.Syscalls {
		act, err := actionText(sc.Action, sc.ErrnoRet)
		if err != nil {
			return "", fmt.Errorf("syscalls[%d]: %w", i, err)
		}
		b.WriteString(strings.Join(sc.Names, " "))
		if len(sc.Args) > 0 {
			call := ""
			if len(sc.Names) == 1 {
				call = sc.Names[0]
			}
			if call == "socket" && netlinkDomain(sc.Args) {
				call = "socket(AF_NETLINK)" // its protocol is a netlink protocol
			}
			conds := make([]string, len(sc.Args))
			for j, a := range sc.Args {
				conds[j] = conditionText(call, sc.Names, a)
			}
			b.WriteString(" if " + strings.Join(conds, " and "))
		}
		b.WriteString(": " + act + "\n")
	}
	def, err := actionText(s.DefaultAction, s.DefaultErrnoRet)
	if err != nil {
		return "", fmt.Errorf("default action: %w", err)
	}
	b.WriteString("every other call: " + def + "\n")
	return b.String(), nil
}

func actionText(a specs.LinuxSeccompAction, errno *uint) (string, error) {
	if _, err := action(a, errno); err != nil {
		return "", err
	}
	switch a {
	case specs.ActAllow:
		return "allow", nil
	case specs.ActKillProcess:
		return "kill process", nil
	case specs.ActLog:
		return "allow and log", nil
	case specs.ActNotify:
		return "ask the sandbox init (user notification)", nil
	}
	e := syscall.Errno(unix.EPERM)
	if errno != nil {
		e = syscall.Errno(*errno)
	}
	if e == 0 {
		return "return 0 without the call", nil
	}
	if n := unix.ErrnoName(e); n != "" {
		return "fail with " + n, nil
	}
	return fmt.Sprintf("fail with errno %d", uint(e)), nil
}

// argKinds names the arguments of the calls the profiles test (their man pages), and
// says how their values read: "family", "clone", "open", "mode", "ioctl" or "" (a number).
func argKinds() map[string][]struct{ name, kind string } {
	return map[string][]struct{ name, kind string }{
		"socket":     {{"domain", "family"}, {"type", ""}, {"protocol", ""}},
		"socketpair": {{"domain", "family"}, {"type", ""}, {"protocol", ""}},
		// socket(2) of a rule that requires domain AF_NETLINK (netlink(7))
		"socket(AF_NETLINK)": {{"domain", "family"}, {"type", ""}, {"protocol", "netlink"}},
		"clone":              {{"flags", "clone"}},
		"unshare":            {{"flags", "clone"}},
		"personality":        {{"persona", ""}},
		"ioctl":              {{"fd", ""}, {"request", "ioctl"}},
		"chmod":              {{"pathname", ""}, {"mode", "mode"}},
		"fchmod":             {{"fd", ""}, {"mode", "mode"}},
		"fchmodat":           {{"dirfd", ""}, {"pathname", ""}, {"mode", "mode"}},
		"fchmodat2":          {{"dirfd", ""}, {"pathname", ""}, {"mode", "mode"}},
		"creat":              {{"pathname", ""}, {"mode", "mode"}},
		"mknod":              {{"pathname", ""}, {"mode", "mode"}},
		"mknodat":            {{"dirfd", ""}, {"pathname", ""}, {"mode", "mode"}},
		"mkdir":              {{"pathname", ""}, {"mode", "mode"}},
		"chown":              {{"pathname", ""}, {"owner", ""}, {"group", ""}},
		"fchown":             {{"fd", ""}, {"owner", ""}, {"group", ""}},
		"lchown":             {{"pathname", ""}, {"owner", ""}, {"group", ""}},
		"fchownat":           {{"dirfd", ""}, {"pathname", ""}, {"owner", ""}, {"group", ""}},
		"mkdirat":            {{"dirfd", ""}, {"pathname", ""}, {"mode", "mode"}},
		"open":               {{"pathname", ""}, {"flags", "open"}, {"mode", "mode"}},
		"openat":             {{"dirfd", ""}, {"pathname", ""}, {"flags", "open"}, {"mode", "mode"}},
	}
}

func families() map[uint64]string {
	return map[uint64]string{
		unix.AF_UNIX: "AF_UNIX", unix.AF_INET: "AF_INET", unix.AF_INET6: "AF_INET6", unix.AF_NETLINK: "AF_NETLINK",
		unix.AF_PACKET: "AF_PACKET", unix.AF_VSOCK: "AF_VSOCK", unix.AF_BLUETOOTH: "AF_BLUETOOTH", unix.AF_ALG: "AF_ALG",
	}
}

type flagName struct {
	v    uint64
	name string
}

func kindFlags() map[string][]flagName {
	return map[string][]flagName{
		"clone": {{unix.CLONE_NEWNS, "CLONE_NEWNS"}, {unix.CLONE_NEWCGROUP, "CLONE_NEWCGROUP"}, {unix.CLONE_NEWUTS, "CLONE_NEWUTS"},
			{unix.CLONE_NEWIPC, "CLONE_NEWIPC"}, {unix.CLONE_NEWUSER, "CLONE_NEWUSER"}, {unix.CLONE_NEWPID, "CLONE_NEWPID"},
			{unix.CLONE_NEWNET, "CLONE_NEWNET"}, {unix.CLONE_NEWTIME, "CLONE_NEWTIME"}},
		"open":    {{unix.O_CREAT, "O_CREAT"}, {0x400000, "__O_TMPFILE"}, {unix.O_DIRECTORY, "O_DIRECTORY"}},
		"mode":    {{unix.S_ISUID, "S_ISUID"}, {unix.S_ISGID, "S_ISGID"}, {unix.S_ISVTX, "S_ISVTX"}},
		"ioctl":   {{tiocsti, "TIOCSTI"}, {tioclinux, "TIOCLINUX"}, {tiocsetd, "TIOCSETD"}},
		"netlink": {{unix.NETLINK_ROUTE, "NETLINK_ROUTE"}, {unix.NETLINK_USERSOCK, "NETLINK_USERSOCK"}, {unix.NETLINK_GENERIC, "NETLINK_GENERIC"}},
	}
}

// netlinkDomain says whether args require socket(2)'s domain to be AF_NETLINK (equal,
// on 64 or on the low 32 bits).
func netlinkDomain(args []specs.LinuxSeccompArg) bool {
	for _, a := range args {
		if a.Index != 0 {
			continue
		}
		if (a.Op == specs.OpEqualTo && a.Value == unix.AF_NETLINK) ||
			(a.Op == specs.OpMaskedEqual && a.Value == 0xffffffff && a.ValueTwo == unix.AF_NETLINK) {
			return true
		}
	}
	return false
}

// valueText is v by its constant for the argument's kind, else in hex.
func valueText(kind string, v uint64) string {
	if kind == "family" {
		if n, ok := families()[v]; ok {
			return n
		}
		return fmt.Sprint(v)
	}
	fl := kindFlags()[kind]
	if kind == "ioctl" || kind == "netlink" { // one number, not flags
		for _, f := range fl {
			if f.v == v {
				return f.name
			}
		}
		return fmt.Sprintf("%#x", v)
	}
	if v == 0 {
		return "0"
	}
	if len(fl) == 0 {
		return fmt.Sprintf("%#x", v)
	}
	var names []string
	rest := v
	for _, f := range fl {
		if rest&f.v == f.v {
			names = append(names, f.name)
			rest &^= f.v
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("%#x", rest))
	}
	return strings.Join(names, "|")
}

// listType is the declared type of argument idx in every call of names, when they
// agree (argTypeOf's width; the name is the first call's); false when they differ or
// one is unknown.
func listType(names []string, idx uint) (argType, bool) {
	var t argType
	for i, n := range names {
		ts, ok := syscallArgs()[n]
		if !ok || idx >= uint(len(ts)) {
			return argType{}, false
		}
		if i == 0 {
			t = ts[idx]
		} else if ts[idx].bits != t.bits || ts[idx].signed != t.signed {
			return argType{}, false
		}
	}
	return t, len(names) > 0
}

// conditionText is one argument comparison, e.g. "domain (32 bits) != AF_UNIX" or
// "flags & (CLONE_NEWNS|CLONE_NEWUSER) == 0": an argument narrower than 64 bits says
// its width (and for an order, that it is signed), as the filter compares it.
func conditionText(call string, names []string, a specs.LinuxSeccompArg) string {
	name, kind := fmt.Sprintf("arg%d", a.Index), ""
	t, typed := listType(names, a.Index)
	if typed && t.name != "" {
		name = t.name
	}
	if ks := argKinds()[call]; int(a.Index) < len(ks) {
		name, kind = ks[a.Index].name, ks[a.Index].kind
	}
	if a.Op == specs.OpMaskedEqual && a.Value == a.ValueTwo && a.Value&(a.Value-1) == 0 {
		// one bit: within the bits the call reads (argTypeOf), whatever the width
	} else if !typed && len(names) > 1 {
		name += " (each call's width)"
	} else if typed && t.narrow() {
		order := a.Op != specs.OpEqualTo && a.Op != specs.OpNotEqual && a.Op != specs.OpMaskedEqual
		if a.Op == specs.OpMaskedEqual {
			a.Value &= uint64(t.mask()) // as the filter cuts it
			if a.Value == uint64(t.mask()) {
				return fmt.Sprintf("%s (%d bits) == %s", name, t.bits, valueText(kind, a.ValueTwo))
			}
		}
		if order && t.signed {
			name = fmt.Sprintf("%s (%d bits signed)", name, t.bits)
			if a.Value&uint64(t.signBit()) != 0 && kind == "" {
				return fmt.Sprintf("%s %s %d", name, map[specs.LinuxSeccompOperator]string{specs.OpLessThan: "<",
					specs.OpLessEqual: "<=", specs.OpGreaterThan: ">", specs.OpGreaterEqual: ">="}[a.Op], int64(a.Value)-1<<t.bits)
			}
		} else {
			name = fmt.Sprintf("%s (%d bits)", name, t.bits)
		}
	}
	ops := map[specs.LinuxSeccompOperator]string{
		specs.OpEqualTo: "==", specs.OpNotEqual: "!=", specs.OpLessThan: "<", specs.OpLessEqual: "<=",
		specs.OpGreaterThan: ">", specs.OpGreaterEqual: ">=",
	}
	if a.Op == specs.OpMaskedEqual {
		if a.Value == a.ValueTwo {
			return fmt.Sprintf("%s has %s", name, valueText(kind, a.Value))
		}
		return fmt.Sprintf("%s & (%s) == %s", name, valueText(kind, a.Value), valueText(kind, a.ValueTwo))
	}
	if op, ok := ops[a.Op]; ok {
		return fmt.Sprintf("%s %s %s", name, op, valueText(kind, a.Value))
	}
	return fmt.Sprintf("%s %s %#x", name, a.Op, a.Value)
}
